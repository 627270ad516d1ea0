// layer_bwd_filter.im2col_gemm's kernels: im2col, and the reduction of a chunk's per-image partial filter
// gradients. Compile-time: the shape (layer_defines), IM2COL_THREADS.
#include "layer_im2col.cuh"

// dw = (accumulate ? dw : 0) + partial[0] + ... + partial[images - 1], in image order: deterministic.
extern "C" __global__ void __launch_bounds__(IM2COL_THREADS)
layer_bwd_filter_reduce(const float* __restrict__ partials, float* __restrict__ dw, int images, int accumulate) {
  const int t = blockIdx.x * IM2COL_THREADS + threadIdx.x;
  if (t >= K * C * R * S) return;
  float sum = accumulate ? dw[t] : 0.0f;
  for (int b = 0; b < images; ++b) sum += partials[(long long)b * K * C * R * S + t];
  dw[t] = sum;
}
