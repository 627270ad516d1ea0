// What the harness knows of a GPU: identity, limits (read from the device, never assumed), software
// versions, and the ceilings measured on it once per run.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

struct Ceilings {
  double copy_gbps = 0;         // device-to-device copy, bytes read + written per second / 1e9
  double fp32_gflops = 0;       // FP32 FMA rate (2 flops per FMA) / 1e9
  std::string copy_method, fma_method;  // which measurement won
  json copy_trials, fma_trials;         // every method tried: name -> GB/s or GFLOP/s
  bool measured() const { return copy_gbps > 0 && fp32_gflops > 0; }
  // The time no variant can beat: max(bytes / bandwidth, flops / FMA rate), in milliseconds.
  double floor_ms(double bytes, double flops) const;
  json to_json() const;
  static Ceilings from_json(const json& j);
};

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  std::string uuid;  // "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", as nvidia-smi prints it
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  int64_t global_mem_bytes = 0;
  int l2_bytes = 0;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int max_smem_per_block = 48 * 1024;        // without opting in
  int max_smem_per_block_optin = 48 * 1024;  // with cudaFuncAttributeMaxDynamicSharedMemorySize
  int max_smem_per_sm = 0;
  int regs_per_block = 65536;
  int regs_per_sm = 65536;
  int warp_size = 32;
  int sm_clock_khz = 0;
  int mem_clock_khz = 0;
  int mem_bus_bits = 0;
  int driver_version = 0, runtime_version = 0, cudnn_version = 0, cufft_version = 0, nvrtc_major = 0,
      nvrtc_minor = 0;

  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
  // A short name for folders: "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3"
  std::string slug() const;
  json to_json() const;
  static DeviceInfo from_json(const json& j);

  static int count();               // 0 without a usable GPU (never throws)
  static DeviceInfo query(int ordinal);  // and makes it the current device
  // The same without making the device current: creates no CUDA context (the sweep's supervisor).
  static DeviceInfo properties(int ordinal);
  // The limits of a device of compute capability 9.0 (H100), for tests and planning with no GPU.
  static DeviceInfo offline_sm90();
};

// Throws a clear error when no GPU can be used, for commands that need one.
void require_gpu(const std::string& command);

// Measures the two ceilings on the current device, each the best of several methods (about a second).
Ceilings measure_ceilings(const DeviceInfo& dev);

}  // namespace convtune
