// What the harness knows of a GPU: identity, limits (read from the device, never assumed), software
// versions, and the ceilings measured on it once per run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

// The arithmetic a candidate's flops run on, each with its own compute ceiling (Ceilings::compute_gflops).
// fp32_fma: FMA on fp32 values. tf32: one TF32 tensor-core product a multiply-add. tf32x3: the 3xTF32 split
// (three TF32 products a multiply-add, fp32 accuracy). Variant::math says which a config uses.
enum class Math { fp32_fma, tf32, tf32x3 };
// By the names configs and records use (harness/variant.h's kMath*): "fp32", "tf32", "3xtf32".
const char* math_name(Math math);
Math math_from_name(const std::string& name);  // throws InputError naming the allowed names

struct Ceilings {
  double copy_gbps = 0;         // device-to-device copy, bytes read + written per second / 1e9
  double fp32_gflops = 0;       // FP32 FMA rate (2 flops per FMA) / 1e9
  double tf32_gflops = 0;       // dense TF32 tensor-core rate (2 flops per multiply-add) / 1e9; 0: none
  std::string copy_method, fma_method, tf32_method;  // which measurement won
  json copy_trials, fma_trials, tf32_trials;         // every method tried: name -> GB/s or GFLOP/s
  json tf32_failures;            // method -> why it gave no rate (null when none failed)
  std::string tf32_unavailable;  // why tf32_gflops is 0 (no TF32 tensor cores, every method failed)
  bool measured() const { return copy_gbps > 0 && fp32_gflops > 0; }
  // The rate of `math` counted in the flops of the fp32 work it does: the FMA rate, the TF32 rate, or a third
  // of it for 3xTF32 (three tensor products a multiply-add). 0 when not measured.
  double compute_gflops(Math math) const;
  // The time no variant can beat: max(bytes / bandwidth, flops / FMA rate), in milliseconds.
  double floor_ms(double bytes, double flops) const { return floor_ms(bytes, flops, Math::fp32_fma); }
  // The same against the ceiling of `math`; 0 when the bandwidth or that rate was not measured.
  double floor_ms(double bytes, double flops, Math math) const;
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

// Measures the ceilings on the current device (copy, FP32 FMA, TF32 tensor cores), each the best of several
// methods (about a second).
Ceilings measure_ceilings(const DeviceInfo& dev);

// Why `dev` has no TF32 tensor-core ceiling (compute capability below 8.0), or "" when it has one.
std::string no_tf32_reason(const DeviceInfo& dev);
// The TF32 methods measure_tf32_ceiling tries on `dev`, by name: wgmma kernels on compute capability 9.0,
// mma.sync kernels on other devices of 8.0 and later, and cuBLAS's TF32 SGEMM on both; none below 8.0.
std::vector<std::string> tf32_method_names(const DeviceInfo& dev);
// Measures the TF32 rate into `c` (every method in tf32_trials, the best in tf32_gflops), or records in
// tf32_unavailable why there is none; on a device without TF32 tensor cores it touches no GPU.
void measure_tf32_ceiling(const DeviceInfo& dev, Ceilings& c);
// The dense TF32 peak the data sheets give: SMs x SM clock x TF32 flops per SM per clock (1024 on
// compute capability 8.0, 2048 on 9.0), in GFLOP/s; 0 for other devices, whose per-SM rate is not known here.
double nominal_tf32_gflops(const DeviceInfo& dev);

}  // namespace convtune
