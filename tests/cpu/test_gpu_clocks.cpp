// The clock and throttle guard: reason names, the throttle verdict, the JSON block, and the guard's
// behaviour where NVML or the device is missing (CI machines have neither).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/gpu_clocks.h"

namespace convtune {
namespace {

using Names = std::vector<std::string>;

constexpr unsigned long long kGpuIdle = 0x1, kApplicationsClocks = 0x2, kSwPowerCap = 0x4, kHwSlowdown = 0x8,
                             kSyncBoost = 0x10, kSwThermal = 0x20, kHwThermal = 0x40, kHwPowerBrake = 0x80,
                             kDisplayClocks = 0x100;

ClockSample reading(unsigned sm_mhz, unsigned long long reasons = 0) {
  ClockSample s;
  s.valid = true;
  s.sm_mhz = sm_mhz;
  s.mem_mhz = 2619;
  s.temperature_c = 41;
  s.power_w = 123.5;
  s.reasons = reasons;
  return s;
}

TEST(GpuClocks, ReasonNamesSingleBits) {
  EXPECT_EQ(clock_reason_names(0), Names{});
  EXPECT_EQ(clock_reason_names(kGpuIdle), Names{"gpu_idle"});
  EXPECT_EQ(clock_reason_names(kApplicationsClocks), Names{"applications_clocks"});
  EXPECT_EQ(clock_reason_names(kSwPowerCap), Names{"sw_power_cap"});
  EXPECT_EQ(clock_reason_names(kHwSlowdown), Names{"hw_slowdown"});
  EXPECT_EQ(clock_reason_names(kSyncBoost), Names{"sync_boost"});
  EXPECT_EQ(clock_reason_names(kSwThermal), Names{"sw_thermal"});
  EXPECT_EQ(clock_reason_names(kHwThermal), Names{"hw_thermal"});
  EXPECT_EQ(clock_reason_names(kHwPowerBrake), Names{"hw_power_brake"});
  EXPECT_EQ(clock_reason_names(kDisplayClocks), Names{"display_clocks"});
}

TEST(GpuClocks, ReasonNamesSeveralBitsLowestFirst) {
  EXPECT_EQ(clock_reason_names(kSwThermal | kGpuIdle | kHwPowerBrake),
            (Names{"gpu_idle", "sw_thermal", "hw_power_brake"}));
}

TEST(GpuClocks, ReasonNamesUnknownBitsAsHex) {
  EXPECT_EQ(clock_reason_names(0x400 | kSwPowerCap), (Names{"sw_power_cap", "0x400"}));
  EXPECT_EQ(clock_reason_names(1ULL << 63), Names{"0x8000000000000000"});
}

TEST(GpuClocks, ThrottleReasonNamesOnlyThrottling) {
  EXPECT_EQ(throttle_reason(0), "");
  EXPECT_EQ(throttle_reason(kGpuIdle | kApplicationsClocks | kSyncBoost | kDisplayClocks), "");
  EXPECT_EQ(throttle_reason(kGpuIdle | kSwThermal), "sw_thermal");
  EXPECT_EQ(throttle_reason(kSwPowerCap | kHwSlowdown | kSwThermal | kHwThermal | kHwPowerBrake),
            "sw_power_cap, hw_slowdown, sw_thermal, hw_thermal, hw_power_brake");
}

TEST(GpuClocks, JudgeSteadyClocksNotThrottled) {
  const ThrottleVerdict v = judge(reading(1980), reading(1980), 1980);
  EXPECT_FALSE(v.throttled);
  EXPECT_EQ(v.reason, "");
}

TEST(GpuClocks, JudgeReasonBefore) {
  const ThrottleVerdict v = judge(reading(1980, kSwThermal), reading(1980), 1980);
  EXPECT_TRUE(v.throttled);
  EXPECT_EQ(v.reason, "sw_thermal");
}

TEST(GpuClocks, JudgeReasonAfter) {
  const ThrottleVerdict v = judge(reading(1980), reading(1980, kSwPowerCap | kSyncBoost), 1980);
  EXPECT_TRUE(v.throttled);
  EXPECT_EQ(v.reason, "sw_power_cap");
}

TEST(GpuClocks, JudgeNonThrottlingReasonsIgnored) {
  const ThrottleVerdict v = judge(reading(1980, kApplicationsClocks), reading(1980, kSyncBoost), 1980);
  EXPECT_FALSE(v.throttled);
  EXPECT_EQ(v.reason, "");
}

TEST(GpuClocks, JudgeClockDropBelowNinetyPercent) {
  const ThrottleVerdict v = judge(reading(1980), reading(1410), 1980);
  EXPECT_TRUE(v.throttled);
  EXPECT_EQ(v.reason, "sm clock fell from 1980 to 1410 MHz");
  EXPECT_TRUE(judge(reading(2000), reading(1799), 2000).throttled);  // 89.95%
}

TEST(GpuClocks, JudgeClockAtNinetyOneOrNinetyPercentNotThrottled) {
  EXPECT_FALSE(judge(reading(2000), reading(1820), 2000).throttled);  // 91%
  EXPECT_FALSE(judge(reading(2000), reading(1800), 2000).throttled);  // exactly 90%: not below
}

TEST(GpuClocks, JudgeZeroMaxSkipsClockCheck) {
  EXPECT_FALSE(judge(reading(1980), reading(100), 0).throttled);
}

TEST(GpuClocks, JudgeIdleAfterSkipsClockCheck) {
  // An idle GPU lowers its clocks on its own: no verdict from the clock alone.
  EXPECT_FALSE(judge(reading(1980), reading(345, kGpuIdle), 1980).throttled);
}

TEST(GpuClocks, JudgeReasonAndClockDropBothNamed) {
  const ThrottleVerdict v = judge(reading(1980), reading(1410, kHwThermal), 1980);
  EXPECT_TRUE(v.throttled);
  EXPECT_EQ(v.reason, "hw_thermal; sm clock fell from 1980 to 1410 MHz");
}

TEST(GpuClocks, JudgeInvalidSamplesTellNothing) {
  ClockSample before = reading(1980, kSwThermal), after = reading(100, kHwThermal);
  before.valid = after.valid = false;
  const ThrottleVerdict v = judge(before, after, 1980);
  EXPECT_FALSE(v.throttled);
  EXPECT_EQ(v.reason, "");
  EXPECT_FALSE(judge(ClockSample{}, ClockSample{}, 1980).throttled);
}

TEST(GpuClocks, SampleToJsonValid) {
  const json j = reading(1980, kSwPowerCap | kGpuIdle).to_json();
  const json want = {{"sm_mhz", 1980},
                     {"mem_mhz", 2619},
                     {"temperature_c", 41},
                     {"power_w", 123.5},
                     {"reasons", {"gpu_idle", "sw_power_cap"}}};
  EXPECT_EQ(j, want) << j.dump();
  EXPECT_TRUE(reading(1980).to_json()["reasons"].is_array());
}

TEST(GpuClocks, SampleToJsonInvalid) {
  ClockSample s = reading(1980, kSwThermal);
  s.valid = false;
  EXPECT_EQ(s.to_json(), (json{{"valid", false}})) << s.to_json().dump();
}

TEST(GpuClocks, BogusBusIdUnavailableWithoutThrowing) {
  // Without NVML (CI, this machine) the load fails; with NVML the bus id is not found. Either way: no throw.
  std::unique_ptr<GpuClocks> clocks;
  ASSERT_NO_THROW(clocks = std::make_unique<GpuClocks>("not-a-bus-id"));
  EXPECT_FALSE(clocks->available());
  EXPECT_FALSE(clocks->why().empty());
  EXPECT_EQ(clocks->why().find('\n'), std::string::npos) << clocks->why();
  ClockSample s;
  s.valid = true;
  ASSERT_NO_THROW(s = clocks->sample());
  EXPECT_FALSE(s.valid);
  EXPECT_EQ(s.to_json(), (json{{"valid", false}}));
}

TEST(GpuClocks, SecondGuardGivesTheSameAnswer) {
  // NVML is loaded once per process: a second guard sees the same outcome.
  const GpuClocks first("not-a-bus-id"), second("not-a-bus-id");
  EXPECT_EQ(first.why(), second.why());
  EXPECT_FALSE(second.available());
}

}  // namespace
}  // namespace convtune
