#include "harness/device.h"

#include <cuda_runtime.h>
#include <cudnn.h>
#include <cufft.h>
#include <nvrtc.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>
#include <vector>

#include "harness/error.h"

namespace convtune {

double Ceilings::floor_ms(double bytes, double flops) const {
  if (!measured()) return 0;
  return std::max(bytes / (copy_gbps * 1e9), flops / (fp32_gflops * 1e9)) * 1e3;
}

json Ceilings::to_json() const {
  json j = {{"copy_gbps", copy_gbps}, {"fp32_gflops", fp32_gflops}};
  if (!copy_method.empty()) j["copy_method"] = copy_method;
  if (!fma_method.empty()) j["fma_method"] = fma_method;
  if (!copy_trials.is_null()) j["copy_trials_gbps"] = copy_trials;
  if (!fma_trials.is_null()) j["fma_trials_gflops"] = fma_trials;
  return j;
}

Ceilings Ceilings::from_json(const json& j) {
  Ceilings c;
  c.copy_gbps = j.value("copy_gbps", 0.0);
  c.fp32_gflops = j.value("fp32_gflops", 0.0);
  c.copy_method = j.value("copy_method", "");
  c.fma_method = j.value("fma_method", "");
  c.copy_trials = j.value("copy_trials_gbps", json());
  c.fma_trials = j.value("fma_trials_gflops", json());
  return c;
}

std::string DeviceInfo::slug() const {
  std::string out;
  for (char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown-gpu" : out;
}

json DeviceInfo::to_json() const {
  return {{"ordinal", ordinal},
          {"name", name},
          {"uuid", uuid},
          {"arch", arch()},
          {"compute_capability", std::to_string(cc_major) + "." + std::to_string(cc_minor)},
          {"sms", sms},
          {"global_mem_bytes", global_mem_bytes},
          {"l2_bytes", l2_bytes},
          {"max_threads_per_block", max_threads_per_block},
          {"max_threads_per_sm", max_threads_per_sm},
          {"max_smem_per_block", max_smem_per_block},
          {"max_smem_per_block_optin", max_smem_per_block_optin},
          {"max_smem_per_sm", max_smem_per_sm},
          {"regs_per_block", regs_per_block},
          {"regs_per_sm", regs_per_sm},
          {"sm_clock_khz", sm_clock_khz},
          {"mem_clock_khz", mem_clock_khz},
          {"mem_bus_bits", mem_bus_bits},
          {"driver_version", driver_version},
          {"runtime_version", runtime_version},
          {"cudnn_version", cudnn_version},
          {"cufft_version", cufft_version},
          {"nvrtc_version", std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor)}};
}

DeviceInfo DeviceInfo::from_json(const json& j) {
  DeviceInfo d;
  d.ordinal = j.value("ordinal", 0);
  d.name = j.value("name", "");
  d.uuid = j.value("uuid", "");
  auto cc = j.value("compute_capability", std::string("0.0"));
  d.cc_major = std::stoi(cc.substr(0, cc.find('.')));
  d.cc_minor = std::stoi(cc.substr(cc.find('.') + 1));
  d.sms = j.value("sms", 0);
  d.global_mem_bytes = j.value("global_mem_bytes", int64_t(0));
  d.l2_bytes = j.value("l2_bytes", 0);
  d.max_threads_per_block = j.value("max_threads_per_block", 1024);
  d.max_threads_per_sm = j.value("max_threads_per_sm", 2048);
  d.max_smem_per_block = j.value("max_smem_per_block", 48 * 1024);
  d.max_smem_per_block_optin = j.value("max_smem_per_block_optin", 48 * 1024);
  d.max_smem_per_sm = j.value("max_smem_per_sm", 0);
  d.regs_per_block = j.value("regs_per_block", 65536);
  d.regs_per_sm = j.value("regs_per_sm", 65536);
  d.sm_clock_khz = j.value("sm_clock_khz", 0);
  d.mem_clock_khz = j.value("mem_clock_khz", 0);
  d.mem_bus_bits = j.value("mem_bus_bits", 0);
  d.driver_version = j.value("driver_version", 0);
  d.runtime_version = j.value("runtime_version", 0);
  d.cudnn_version = j.value("cudnn_version", 0);
  d.cufft_version = j.value("cufft_version", 0);
  return d;
}

int DeviceInfo::count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

static void fill_versions(DeviceInfo& d) {
  cudaDriverGetVersion(&d.driver_version);
  cudaRuntimeGetVersion(&d.runtime_version);
  d.cudnn_version = static_cast<int>(cudnnGetVersion());
  cufftGetVersion(&d.cufft_version);
  nvrtcVersion(&d.nvrtc_major, &d.nvrtc_minor);
}

static std::string format_uuid(const cudaUUID_t& id) {
  const auto* b = reinterpret_cast<const unsigned char*>(id.bytes);
  char buf[48];
  std::snprintf(buf, sizeof buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return buf;
}

DeviceInfo DeviceInfo::query(int ordinal) {
  DeviceInfo d = properties(ordinal);
  CT_CUDA(cudaSetDevice(ordinal));
  return d;
}

DeviceInfo DeviceInfo::properties(int ordinal) {
  DeviceInfo d;
  cudaDeviceProp p{};
  CT_CUDA(cudaGetDeviceProperties(&p, ordinal));
  d.ordinal = ordinal;
  d.name = p.name;
  d.uuid = format_uuid(p.uuid);
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sms = p.multiProcessorCount;
  d.global_mem_bytes = static_cast<int64_t>(p.totalGlobalMem);
  d.l2_bytes = p.l2CacheSize;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  d.max_smem_per_block = static_cast<int>(p.sharedMemPerBlock);
  d.max_smem_per_block_optin = static_cast<int>(p.sharedMemPerBlockOptin);
  d.max_smem_per_sm = static_cast<int>(p.sharedMemPerMultiprocessor);
  d.regs_per_block = p.regsPerBlock;
  d.regs_per_sm = p.regsPerMultiprocessor;
  d.warp_size = p.warpSize;
  CT_CUDA(cudaDeviceGetAttribute(&d.sm_clock_khz, cudaDevAttrClockRate, ordinal));
  CT_CUDA(cudaDeviceGetAttribute(&d.mem_clock_khz, cudaDevAttrMemoryClockRate, ordinal));
  CT_CUDA(cudaDeviceGetAttribute(&d.mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal));
  fill_versions(d);
  return d;
}

DeviceInfo DeviceInfo::offline_sm90() {
  DeviceInfo d;
  d.name = "offline sm_90 (H100 limits)";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sms = 132;
  d.global_mem_bytes = int64_t(80) << 30;
  d.l2_bytes = 50 << 20;
  d.max_smem_per_block = 48 * 1024;
  d.max_smem_per_block_optin = 227 * 1024;
  d.max_smem_per_sm = 228 * 1024;
  fill_versions(d);
  return d;
}

void require_gpu(const std::string& command) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n == 0) {
    cudaGetLastError();
    // Without an NVIDIA driver the runtime reports "driver version is insufficient": name the likelier cause.
    throw CudaError("'" + command + "' needs a CUDA GPU and none is usable here: no NVIDIA GPU with a working driver (CUDA says: " +
                    std::string(err != cudaSuccess ? cudaGetErrorString(err) : "no device found") +
                    "). Run it on a machine with an NVIDIA GPU and driver.");
  }
}

}  // namespace convtune

#include "harness/cuda_raii.h"
#include "harness/gpu_kernels.h"

namespace convtune {

// The copy ceiling is the best of cudaMemcpy and copy kernels with 1 to 8 loads in flight per thread, over
// buffers far past L2: one load per thread at a time leaves DRAM idle between requests (6-9% short on
// H100/H200), and the ceiling must be what the chip can do, or every roofline fraction flatters.
static void measure_copy(const DeviceInfo& dev, Ceilings& c, cudaStream_t stream) {
  const int64_t n = std::min<int64_t>(int64_t(256) << 20, dev.global_mem_bytes / 16);  // 1 GiB a buffer on big GPUs
  DeviceArray<float> src(n), dst(n);
  fill_uniform(src.get(), n, 1, stream);
  const int full = std::max(1, dev.max_threads_per_sm / 256);
  std::vector<std::pair<std::string, CopyMethod>> methods = {{"cudaMemcpy device-to-device", {0, 0, 0}}};
  for (int loads : {1, 2, 4, 8})
    for (int per_sm : {full / 2, full})
      methods.push_back({"copy kernel: " + std::to_string(loads) + " float4 loads in flight per thread, 256 threads x " +
                             std::to_string(per_sm) + " blocks per SM",
                         {loads, 256, std::max(1, per_sm)}});
  c.copy_trials = json::object();
  for (const auto& [name, m] : methods) {
    double best_ms = 1e30;
    for (int i = 0; i < 3; ++i) best_ms = std::min(best_ms, time_copy(m, dst.get(), src.get(), n, 3, stream));
    const double gbps = 2.0 * double(n) * sizeof(float) / (best_ms * 1e-3) / 1e9;
    c.copy_trials[name] = gbps;
    if (gbps > c.copy_gbps) {
      c.copy_gbps = gbps;
      c.copy_method = name;
    }
  }
}

// The FMA ceiling: the best of 8, 12 and 16 independent chains per thread at full occupancy.
static void measure_fma(const DeviceInfo& dev, Ceilings& c, cudaStream_t stream) {
  const int threads = 256, iterations = 4096;
  const int blocks = dev.sms * std::max(1, dev.max_threads_per_sm / threads) * 4;
  DeviceArray<float> sink(blocks);
  c.fma_trials = json::object();
  for (int chains : {8, 12, 16}) {
    double best_ms = 1e30;
    for (int i = 0; i < 5; ++i)
      best_ms = std::min(best_ms, time_fma(chains, sink.get(), blocks, threads, iterations, 2, stream));
    const double gflops = 2.0 * chains * double(iterations) * blocks * threads / (best_ms * 1e-3) / 1e9;
    const std::string name = "FMA kernel: " + std::to_string(chains) + " independent chains per thread, 256 threads";
    c.fma_trials[name] = gflops;
    if (gflops > c.fp32_gflops) {
      c.fp32_gflops = gflops;
      c.fma_method = name;
    }
  }
}

Ceilings measure_ceilings(const DeviceInfo& dev) {
  Ceilings c;
  Stream stream;
  measure_copy(dev, c, stream.get());
  measure_fma(dev, c, stream.get());
  return c;
}

}  // namespace convtune
