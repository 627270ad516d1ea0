#include "harness/gpu_clocks.h"

#include <dlfcn.h>

#include <cstdio>

namespace convtune {

namespace {

// Our own declarations of the few NVML entry points used: there is no nvml.h to include, and the
// library is only ever reached through dlsym.
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;
constexpr int kNvmlTemperatureGpu = 0;

struct ReasonBit {
  unsigned long long bit;
  const char* name;
  bool throttling;  // the GPU ran below the clocks it would otherwise have had
};

constexpr ReasonBit kReasonBits[] = {
    {0x1, "gpu_idle", false},
    {0x2, "applications_clocks", false},
    {0x4, "sw_power_cap", true},
    {0x8, "hw_slowdown", true},
    {0x10, "sync_boost", false},
    {0x20, "sw_thermal", true},
    {0x40, "hw_thermal", true},
    {0x80, "hw_power_brake", true},
    {0x100, "display_clocks", false},
};
constexpr unsigned long long kGpuIdle = 0x1;

// NVML resolved once per process. `error` is "" when every entry point was found and nvmlInit_v2
// succeeded. The library stays open for the process lifetime and nvmlShutdown is never called: devices
// handed out may be sampled until exit.
struct Nvml {
  std::string error;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*handle_by_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*power_usage)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*clock_reasons)(NvmlDevice, unsigned long long*) = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;

  std::string describe(NvmlReturn rc) const {
    const char* text = error_string ? error_string(rc) : nullptr;
    return text ? text : "NVML error " + std::to_string(rc);
  }
};

template <typename Fn>
bool resolve(void* lib, Fn& fn, const char* symbol) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  return fn != nullptr;
}

Nvml load_nvml() {
  Nvml nvml;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* text = dlerror();
    nvml.error = std::string("NVML not loaded: ") + (text ? text : "libnvidia-ml.so.1: dlopen failed");
    return nvml;
  }
  resolve(lib, nvml.error_string, "nvmlErrorString");
  // Drivers from 535 on name it "ClocksEvent"; older ones only "ClocksThrottle" (same signature).
  if (!resolve(lib, nvml.clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons"))
    resolve(lib, nvml.clock_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  std::string missing;  // the first required entry point not found
  auto require = [&](auto& fn, const char* symbol) {
    if (!resolve(lib, fn, symbol) && missing.empty()) missing = symbol;
  };
  require(nvml.init, "nvmlInit_v2");
  require(nvml.handle_by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  require(nvml.clock_info, "nvmlDeviceGetClockInfo");
  require(nvml.temperature, "nvmlDeviceGetTemperature");
  require(nvml.power_usage, "nvmlDeviceGetPowerUsage");
  if (!nvml.clock_reasons && missing.empty()) missing = "nvmlDeviceGetCurrentClocksEventReasons";
  if (!missing.empty()) {
    nvml.error = "NVML too old: libnvidia-ml.so.1 lacks " + missing;
    return nvml;
  }
  const NvmlReturn rc = nvml.init();
  if (rc != kNvmlSuccess) nvml.error = "nvmlInit_v2: " + nvml.describe(rc);
  return nvml;
}

// Thread-safe one-time load (function-local static).
const Nvml& nvml() {
  static const Nvml loaded = load_nvml();
  return loaded;
}

std::string hex(unsigned long long value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", value);
  return text;
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string joined;
  for (const auto& part : parts) joined += (joined.empty() ? "" : separator) + part;
  return joined;
}

}  // namespace

json ClockSample::to_json() const {
  if (!valid) return json{{"valid", false}};
  return json{{"sm_mhz", sm_mhz},
              {"mem_mhz", mem_mhz},
              {"temperature_c", temperature_c},
              {"power_w", power_w},
              {"reasons", clock_reason_names(reasons)}};
}

std::vector<std::string> clock_reason_names(unsigned long long reasons) {
  std::vector<std::string> names;
  for (const auto& known : kReasonBits)
    if (reasons & known.bit) names.push_back(known.name);
  unsigned long long known_mask = 0;
  for (const auto& known : kReasonBits) known_mask |= known.bit;
  for (int bit = 0; bit < 64; ++bit) {
    const unsigned long long mask = 1ULL << bit;
    if ((reasons & mask) && !(known_mask & mask)) names.push_back(hex(mask));
  }
  return names;
}

std::string throttle_reason(unsigned long long reasons) {
  std::vector<std::string> names;
  for (const auto& known : kReasonBits)
    if (known.throttling && (reasons & known.bit)) names.push_back(known.name);
  return join(names, ", ");
}

GpuClocks::GpuClocks(const std::string& pci_bus_id) {
  const Nvml& api = nvml();
  if (!api.error.empty()) {
    why_ = api.error;
    return;
  }
  NvmlDevice device = nullptr;
  const NvmlReturn rc = api.handle_by_bus_id(pci_bus_id.c_str(), &device);
  if (rc != kNvmlSuccess || !device) {
    why_ = "nvmlDeviceGetHandleByPciBusId_v2: " + api.describe(rc) + " (bus id \"" + pci_bus_id + "\")";
    return;
  }
  device_ = device;
}

ClockSample GpuClocks::sample() const {
  ClockSample s;
  if (!available()) return s;
  const Nvml& api = nvml();
  unsigned milliwatts = 0;
  s.valid = api.clock_info(device_, kNvmlClockSm, &s.sm_mhz) == kNvmlSuccess &&
            api.clock_info(device_, kNvmlClockMem, &s.mem_mhz) == kNvmlSuccess &&
            api.temperature(device_, kNvmlTemperatureGpu, &s.temperature_c) == kNvmlSuccess &&
            api.power_usage(device_, &milliwatts) == kNvmlSuccess &&
            api.clock_reasons(device_, &s.reasons) == kNvmlSuccess;
  if (!s.valid) return ClockSample{};
  s.power_w = milliwatts / 1000.0;
  return s;
}

ThrottleVerdict judge(const ClockSample& before, const ClockSample& after, unsigned max_sm_mhz_seen) {
  std::vector<std::string> parts;
  // Invalid samples contribute nothing: their fields are not readings.
  const unsigned long long reasons = (before.valid ? before.reasons : 0) | (after.valid ? after.reasons : 0);
  if (const std::string named = throttle_reason(reasons); !named.empty()) parts.push_back(named);
  // Below 90% of the best clock seen under load; integer form avoids rounding at the boundary.
  const bool clock_check = after.valid && max_sm_mhz_seen > 0 && !(after.reasons & kGpuIdle);
  if (clock_check && 10ULL * after.sm_mhz < 9ULL * max_sm_mhz_seen)
    parts.push_back("sm clock fell from " + std::to_string(max_sm_mhz_seen) + " to " +
                    std::to_string(after.sm_mhz) + " MHz");
  ThrottleVerdict verdict;
  verdict.throttled = !parts.empty();
  verdict.reason = join(parts, "; ");
  return verdict;
}

}  // namespace convtune
