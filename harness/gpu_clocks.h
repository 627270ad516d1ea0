// Clock and throttle guard: reads SM/memory clocks, temperature, power and the driver's clock event
// reasons through NVML, so that every timing can say whether the GPU was throttling while it ran.
// NVML (libnvidia-ml.so.1) comes with the driver and is loaded with dlopen at first use, never linked:
// binaries still start where there is no driver, and the guard then reports itself unavailable.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

// One NVML reading of a device.
struct ClockSample {
  bool valid = false;  // NVML answered every query
  unsigned sm_mhz = 0;
  unsigned mem_mhz = 0;
  unsigned temperature_c = 0;
  double power_w = 0;
  unsigned long long reasons = 0;  // raw clock event (throttle) reason bitmask

  // {"sm_mhz":..,"mem_mhz":..,"temperature_c":..,"power_w":..,"reasons":["sw_power_cap",...]};
  // {"valid": false} when not valid.
  json to_json() const;
};

// Names of the set reason bits, lowest first: "gpu_idle", "applications_clocks", "sw_power_cap",
// "hw_slowdown", "sync_boost", "sw_thermal", "hw_thermal", "hw_power_brake", "display_clocks";
// bits NVML may add later appear as hex ("0x400").
std::vector<std::string> clock_reason_names(unsigned long long reasons);

// The reasons meaning the GPU ran below the clocks it would otherwise have had (sw_power_cap,
// hw_slowdown, sw_thermal, hw_thermal, hw_power_brake), joined by ", "; "" when none.
// gpu_idle, applications_clocks, sync_boost and display_clocks are not throttling.
std::string throttle_reason(unsigned long long reasons);

// NVML's view of one GPU. Never throws: without NVML or the device, available() is false and why()
// says why in one line.
class GpuClocks {
 public:
  // pci_bus_id as cudaDeviceGetPCIBusId gives it, e.g. "0000:18:00.0".
  explicit GpuClocks(const std::string& pci_bus_id);

  bool available() const { return device_ != nullptr; }
  const std::string& why() const { return why_; }  // "" when available

  // One reading; valid=false when unavailable or any query failed.
  ClockSample sample() const;

 private:
  void* device_ = nullptr;  // nvmlDevice_t, owned by NVML
  std::string why_;
};

struct ThrottleVerdict {
  bool throttled = false;
  std::string reason;  // e.g. "sw_thermal" or "sm clock fell from 1980 to 1410 MHz"; "" when not throttled
};

// Judges a candidate's timed samples from readings taken just before and just after them. Throttled
// when a valid sample shows a throttle_reason(), or when the SM clock after is below 90% of
// max_sm_mhz_seen (the highest SM clock seen so far in the run under load; 0 skips that check). An
// after sample marked gpu_idle skips the clock check too: an idle GPU drops its clocks without throttling.
// Invalid samples tell nothing and never make a verdict throttled.
ThrottleVerdict judge(const ClockSample& before, const ClockSample& after, unsigned max_sm_mhz_seen);

}  // namespace convtune
