#include "harness/device.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <cufft.h>
#include <nvrtc.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

#include "harness/cuda_raii.h"
#include "harness/error.h"
#include "harness/gpu_kernels.h"
#include "harness/jit.h"
#include "harness/variant.h"

namespace convtune {

const char* math_name(Math math) {
  return math == Math::tf32 ? kMathTf32 : math == Math::tf32x3 ? kMath3xTf32 : kMathFp32;
}

Math math_from_name(const std::string& name) {
  if (name == kMathFp32) return Math::fp32_fma;
  if (name == kMathTf32) return Math::tf32;
  if (name == kMath3xTf32) return Math::tf32x3;
  throw InputError("math '" + name + "': allowed fp32, tf32, 3xtf32");
}

double Ceilings::compute_gflops(Math math) const {
  switch (math) {
    case Math::tf32: return tf32_gflops;
    case Math::tf32x3: return tf32_gflops / 3;
    default: return fp32_gflops;
  }
}

double Ceilings::floor_ms(double bytes, double flops, Math math) const {
  const double rate = compute_gflops(math);
  if (copy_gbps <= 0 || rate <= 0) return 0;
  return std::max(bytes / (copy_gbps * 1e9), flops / (rate * 1e9)) * 1e3;
}

json Ceilings::to_json() const {
  json j = {{"copy_gbps", copy_gbps}, {"fp32_gflops", fp32_gflops}};
  if (!copy_method.empty()) j["copy_method"] = copy_method;
  if (!fma_method.empty()) j["fma_method"] = fma_method;
  if (!copy_trials.is_null()) j["copy_trials_gbps"] = copy_trials;
  if (!fma_trials.is_null()) j["fma_trials_gflops"] = fma_trials;
  // Absent, not 0, in runs from before the TF32 ceiling: readers take absence as "not measured".
  if (tf32_gflops > 0) j["tf32_gflops"] = tf32_gflops;
  if (!tf32_method.empty()) j["tf32_method"] = tf32_method;
  if (!tf32_trials.is_null()) j["tf32_trials_gflops"] = tf32_trials;
  if (!tf32_failures.is_null()) j["tf32_failures"] = tf32_failures;
  if (!tf32_unavailable.empty()) j["tf32_unavailable"] = tf32_unavailable;
  return j;
}

Ceilings Ceilings::from_json(const json& j) {
  Ceilings c;
  c.copy_gbps = j.value("copy_gbps", 0.0);
  c.fp32_gflops = j.value("fp32_gflops", 0.0);
  c.tf32_gflops = j.value("tf32_gflops", 0.0);
  c.copy_method = j.value("copy_method", "");
  c.fma_method = j.value("fma_method", "");
  c.tf32_method = j.value("tf32_method", "");
  c.copy_trials = j.value("copy_trials_gbps", json());
  c.fma_trials = j.value("fma_trials_gflops", json());
  c.tf32_trials = j.value("tf32_trials_gflops", json());
  c.tf32_failures = j.value("tf32_failures", json());
  c.tf32_unavailable = j.value("tf32_unavailable", "");
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
  measure_tf32_ceiling(dev, c);
  return c;
}

// ---- the TF32 tensor-core ceiling -------------------------------------------------------------------------

std::string no_tf32_reason(const DeviceInfo& dev) {
  if (dev.cc_major >= 8) return "";
  return "no TF32 tensor cores: compute capability " + std::to_string(dev.cc_major) + "." +
         std::to_string(dev.cc_minor) + " (TF32 needs 8.0 or later)";
}

double nominal_tf32_gflops(const DeviceInfo& dev) {
  const int cc = 10 * dev.cc_major + dev.cc_minor;
  const double per_sm_per_clock = cc == 80 ? 1024 : cc == 90 ? 2048 : 0;  // A100, H100/H200 data sheets
  return dev.sms * (dev.sm_clock_khz * 1e3) * per_sm_per_clock / 1e9;
}

namespace {

// One way to measure the TF32 rate: a kernel of harness/kernels/tf32_ceiling.cuh on one wave of blocks, or
// cuBLAS's TF32 SGEMM on n x n matrices (gemm_size > 0).
struct Tf32Method {
  std::string name;
  std::string kernel;
  int threads = 256, blocks_per_sm = 1, dynamic_smem = 0, iterations = 2048;
  double flops_per_thread_iteration = 0;
  int gemm_size = 0;
};

// wgmma m64nNk8 runs 2*64*N*8 flops on a warpgroup of 128 threads, 4 k8 steps an iteration.
Tf32Method wgmma_method(const std::string& kernel, int cols, bool a_shared, int blocks_per_sm) {
  const std::string operands = a_shared ? "A and B in shared memory" : "A in registers, B in shared memory";
  const int tile_bytes = 64 * 128 + cols * 128;
  return {"wgmma m64n" + std::to_string(cols) + "k8 kernel, " + operands, kernel, 256, blocks_per_sm,
          1024 + tile_bytes, 2048, 4.0 * 2 * 64 * cols * 8 / 128};
}

// mma.sync m16n8k8 runs 2*16*8*8 flops on a warp of 32 threads, `chains` an iteration.
Tf32Method mma_sync_method(int chains, const DeviceInfo& dev) {
  return {"mma.sync m16n8k8 kernel, " + std::to_string(chains) + " independent accumulators per warp",
          "tf32_mma_sync_" + std::to_string(chains), 256, std::max(1, dev.max_threads_per_sm / 256), 0, 2048,
          chains * 2.0 * 16 * 8 * 8 / 32};
}

// The largest of 8192, 4096, 2048 whose three matrices take at most an eighth of the device's memory.
int cublas_gemm_size(const DeviceInfo& dev) {
  for (int n : {8192, 4096})
    if (3.0 * n * n * sizeof(float) <= dev.global_mem_bytes / 8.0) return n;
  return 2048;
}

std::vector<Tf32Method> tf32_methods(const DeviceInfo& dev) {
  std::vector<Tf32Method> out;
  if (!no_tf32_reason(dev).empty()) return out;
  if (dev.cc_major == 9 && dev.cc_minor == 0) {  // wgmma is sm_90a's: Blackwell takes the mma.sync path
    out.push_back(wgmma_method("tf32_wgmma_ss_n256", 256, true, 1));
    out.push_back(wgmma_method("tf32_wgmma_ss_n128", 128, true, 2));
    out.push_back(wgmma_method("tf32_wgmma_rs_n128", 128, false, 2));
  } else {
    out.push_back(mma_sync_method(4, dev));
    out.push_back(mma_sync_method(8, dev));
  }
  const int n = cublas_gemm_size(dev);
  Tf32Method gemm;
  gemm.name = "cuBLAS cublasGemmEx CUBLAS_COMPUTE_32F_FAST_TF32, " + std::to_string(n) + "^3";
  gemm.gemm_size = n;
  out.push_back(gemm);
  return out;
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cuda("cublas", cublasGetStatusString(status), call, __FILE__, __LINE__);
}

class CublasHandle {
 public:
  CublasHandle() { check_cublas(cublasCreate(&handle_), "cublasCreate"); }
  ~CublasHandle() { cublasDestroy(handle_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

double best_ms_of(const std::function<void()>& launch, cudaStream_t stream) {
  double best = 1e30;
  for (int i = 0; i < 3; ++i) best = std::min(best, time_launches(launch, 2, stream));
  return best;
}

double cublas_tf32_gflops(int n, cudaStream_t stream) {
  const size_t elements = size_t(n) * n;
  DeviceArray<float> a(elements), b(elements), c(elements);
  fill_uniform(a.get(), int64_t(elements), 11, stream);
  fill_uniform(b.get(), int64_t(elements), 12, stream);
  CublasHandle handle;
  check_cublas(cublasSetStream(handle.get(), stream), "cublasSetStream");
  const float alpha = 1, beta = 0;
  const double ms = best_ms_of(
      [&] {
        check_cublas(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.get(), CUDA_R_32F, n,
                                  b.get(), CUDA_R_32F, n, &beta, c.get(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32,
                                  CUBLAS_GEMM_DEFAULT),
                     "cublasGemmEx");
      },
      stream);
  return 2.0 * n * double(n) * n / (ms * 1e-3) / 1e9;
}

// Runs on one wave: as many blocks as the method asks for an SM, or as fit (its name says how many ran).
double kernel_tf32_gflops(Tf32Method& m, const Module& module, const DeviceInfo& dev, cudaStream_t stream) {
  const CUfunction fn = module.function(m.kernel);
  const KernelAttributes attrs = kernel_attributes(fn, m.threads, m.dynamic_smem);
  if (attrs.blocks_per_sm < 1) throw CudaError(m.kernel + ": no block of it fits an SM");
  m.blocks_per_sm = std::min(m.blocks_per_sm, attrs.blocks_per_sm);
  m.name += ", " + std::to_string(m.threads) + " threads x " + std::to_string(m.blocks_per_sm) + " blocks per SM";
  const int blocks = dev.sms * m.blocks_per_sm;
  DeviceArray<float> sink(static_cast<size_t>(blocks));
  float* sink_ptr = sink.get();
  int iterations = m.iterations;
  void* args[] = {&sink_ptr, &iterations};
  const double ms = best_ms_of([&] { launch(fn, dim3(blocks), dim3(m.threads), m.dynamic_smem, stream, args); }, stream);
  return double(blocks) * m.threads * m.iterations * m.flops_per_thread_iteration / (ms * 1e-3) / 1e9;
}

// After a method threw: a sticky error leaves the context unusable, and the caller must know.
void rethrow_if_context_lost() {
  cudaGetLastError();
  if (cudaDeviceSynchronize() != cudaSuccess) {
    mark_context_lost();
    throw;
  }
}

}  // namespace

std::vector<std::string> tf32_method_names(const DeviceInfo& dev) {
  std::vector<std::string> names;
  for (const auto& m : tf32_methods(dev)) names.push_back(m.name);
  return names;
}

void measure_tf32_ceiling(const DeviceInfo& dev, Ceilings& c) {
  if (const std::string why = no_tf32_reason(dev); !why.empty()) {
    c.tf32_unavailable = why;
    return;
  }
  Stream stream;
  JitCache jit(JitCache::default_dir(), dev.arch());
  c.tf32_trials = json::object();
  for (Tf32Method& m : tf32_methods(dev)) {
    try {
      const double gflops = m.gemm_size > 0 ? cublas_tf32_gflops(m.gemm_size, stream.get())
                                            : kernel_tf32_gflops(m, *jit.module({"tf32_ceiling.cuh", {}}), dev, stream.get());
      c.tf32_trials[m.name] = gflops;
      if (gflops > c.tf32_gflops) {
        c.tf32_gflops = gflops;
        c.tf32_method = m.name;
      }
    } catch (const std::exception& e) {  // a failed compile or launch costs its method only
      rethrow_if_context_lost();
      if (c.tf32_failures.is_null()) c.tf32_failures = json::object();
      c.tf32_failures[m.name] = e.what();
    }
  }
  if (c.tf32_gflops <= 0) c.tf32_unavailable = "every TF32 method failed (tf32_failures says why)";
}

}  // namespace convtune
