#include "harness/gpu_kernels.h"

#include "harness/cuda_raii.h"
#include "harness/error.h"

namespace convtune {
namespace {

__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

__global__ void fill_uniform_kernel(float* data, int64_t n, uint64_t seed, float amplitude) {
  const float step = amplitude / float(1 << 23);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t bits = mix64(seed * 0x9e3779b97f4a7c15ULL + uint64_t(i));
    data[i] = float(int64_t(bits >> 40) - (int64_t(1) << 23)) * step;
  }
}

__device__ __forceinline__ void atomic_max_nonneg(double* addr, double v) {
  // Non-negative doubles order like their bit patterns read as unsigned integers.
  atomicMax(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(__double_as_longlong(v)));
}

__global__ void compare_kernel(const float* __restrict__ out, const double* __restrict__ ref, int64_t n,
                               ErrorSums* sums) {
  double sq_err = 0, sq_ref = 0, max_err = 0, max_ref = 0;
  unsigned long long bad = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double o = out[i], q = ref[i];
    sq_ref += q * q;
    max_ref = fmax(max_ref, fabs(q));
    if (!isfinite(o)) {
      ++bad;
      max_err = __longlong_as_double(0x7ff0000000000000LL);  // +infinity
      continue;
    }
    const double e = o - q;
    sq_err += e * e;
    max_err = fmax(max_err, fabs(e));
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sq_err += __shfl_down_sync(0xffffffffu, sq_err, offset);
    sq_ref += __shfl_down_sync(0xffffffffu, sq_ref, offset);
    max_err = fmax(max_err, __shfl_down_sync(0xffffffffu, max_err, offset));
    max_ref = fmax(max_ref, __shfl_down_sync(0xffffffffu, max_ref, offset));
    bad += __shfl_down_sync(0xffffffffu, bad, offset);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&sums->sq_err, sq_err);
    atomicAdd(&sums->sq_ref, sq_ref);
    atomic_max_nonneg(&sums->max_abs_err, max_err);
    atomic_max_nonneg(&sums->max_abs_ref, max_ref);
    atomicAdd(&sums->nonfinite, bad);
  }
}

// Grid-stride copy with `kLoads` float4 loads issued before the first store: enough bytes in flight
// per SM to cover DRAM latency, which one load per thread at a time does not.
template <int kLoads>
__global__ void copy_kernel(float4* __restrict__ dst, const float4* __restrict__ src, int64_t n4) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  for (; i + (kLoads - 1) * stride < n4; i += kLoads * stride) {
    float4 v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < n4; i += stride) dst[i] = src[i];
}

template <int kChains>
__global__ void fma_kernel(float* sink, int iterations) {
  float a[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) a[c] = threadIdx.x * 1e-3f + c;
  const float m = 0.999f, k = 1e-4f;
  // Unrolled so that loop bookkeeping is a few percent of the issue slots, not a quarter of them.
#pragma unroll 16
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) a[c] = fmaf(a[c], m, k);
  }
  float total = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) total += a[c];
  if (total == 12345.678f) sink[blockIdx.x] = total;  // keeps the work alive, almost never stores
}

}  // namespace

int grid_for(int64_t n, int threads) {
  int64_t blocks = (n + threads - 1) / threads;
  return static_cast<int>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

void fill_uniform(float* data, int64_t n, uint64_t seed, cudaStream_t s, double amplitude) {
  fill_uniform_kernel<<<grid_for(n, 256), 256, 0, s>>>(data, n, seed, float(amplitude));
  CT_CHECK_LAUNCH();
}

void poison_nan(float* data, int64_t n, cudaStream_t s) { CT_CUDA(cudaMemsetAsync(data, 0xFF, n * sizeof(float), s)); }

ErrorSums compare_to_reference(const float* out, const double* ref, int64_t n, cudaStream_t s) {
  DeviceArray<ErrorSums> sums(1);
  CT_CUDA(cudaMemsetAsync(sums.get(), 0, sizeof(ErrorSums), s));
  compare_kernel<<<grid_for(n, 256), 256, 0, s>>>(out, ref, n, sums.get());
  CT_CHECK_LAUNCH();
  ErrorSums host;
  CT_CUDA(cudaMemcpyAsync(&host, sums.get(), sizeof(ErrorSums), cudaMemcpyDeviceToHost, s));
  CT_CUDA(cudaStreamSynchronize(s));
  return host;
}

double time_launches(const std::function<void()>& launch, int repeats, cudaStream_t s) {
  launch();
  CT_CHECK_LAUNCH();
  Event start, stop;
  start.record(s);
  for (int i = 0; i < repeats; ++i) {
    launch();
    CT_CHECK_LAUNCH();
  }
  stop.record(s);
  CT_CUDA(cudaEventSynchronize(stop.get()));
  float ms = 0;
  CT_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms / repeats;
}

template <int kLoads>
static void launch_copy(const CopyMethod& m, float* dst, const float* src, int64_t n, cudaStream_t s) {
  int device = 0, sms = 0;
  CT_CUDA(cudaGetDevice(&device));
  CT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  copy_kernel<kLoads><<<sms * m.blocks_per_sm, m.threads, 0, s>>>(reinterpret_cast<float4*>(dst),
                                                                   reinterpret_cast<const float4*>(src), n / 4);
}

double time_copy(const CopyMethod& m, float* dst, const float* src, int64_t n, int repeats, cudaStream_t s) {
  return time_launches(
      [&] {
        switch (m.loads_in_flight) {
          case 0: CT_CUDA(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, s)); break;
          case 1: launch_copy<1>(m, dst, src, n, s); break;
          case 2: launch_copy<2>(m, dst, src, n, s); break;
          case 4: launch_copy<4>(m, dst, src, n, s); break;
          default: launch_copy<8>(m, dst, src, n, s); break;
        }
      },
      repeats, s);
}

double time_fma(int chains, float* sink, int blocks, int threads, int iterations, int repeats, cudaStream_t s) {
  return time_launches(
      [&] {
        if (chains == 8) fma_kernel<8><<<blocks, threads, 0, s>>>(sink, iterations);
        else if (chains == 16) fma_kernel<16><<<blocks, threads, 0, s>>>(sink, iterations);
        else fma_kernel<12><<<blocks, threads, 0, s>>>(sink, iterations);
      },
      repeats, s);
}

}  // namespace convtune
