// conv1d, direct gather (seed 000, "scatter to gather"): each thread computes C outputs, THREADS apart so
// that loads and stores stay coalesced; the reversed filter g[k] = h[m-1-k] comes from constant memory
// (FILTER_CONSTANT, m <= 16384) or from global memory through the read-only cache.
// y[o] = sum_k x[o + shift + k] g[k]; shift = 0 (valid) or -(m-1) (full).
// Compile-time: THREADS, C, FILTER_CONSTANT.
#include "conv1d_common.cuh"

#if FILTER_CONSTANT
__constant__ float c_filter[16384];
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
conv1d_direct(const float* __restrict__ x, const float* __restrict__ g, float* __restrict__ y, long long n, int m,
              long long outputs, long long shift) {
  const long long o0 = (long long)blockIdx.x * THREADS * C + threadIdx.x;
  float acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;
  for (int k = 0; k < m; ++k) {
#if FILTER_CONSTANT
    const float w = c_filter[k];
#else
    const float w = __ldg(g + k);
#endif
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] = fmaf(load_or_zero(x, o0 + c * THREADS + shift + k, n), w, acc[c]);
  }
#pragma unroll
  for (int c = 0; c < C; ++c)
    if (o0 + c * THREADS < outputs) y[o0 + c * THREADS] = acc[c];
}
