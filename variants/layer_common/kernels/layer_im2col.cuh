// im2col for a chunk of images (layer_fwd.im2col_gemm, layer_bwd_filter.im2col_gemm): image b of the chunk
// gets its own column matrix col[b][(c,i,j)][(p,q)] (layer_im2col_index.cuh), contiguous, so that one
// strided-batched GEMM covers the chunk. One thread per (image, c, p, q) writes the R*S rows of its column:
// consecutive threads write consecutive columns (coalesced), and read x along q.
// Compile-time: the shape (layer_defines), IM2COL_THREADS.
#pragma once
#include "layer_im2col_index.cuh"

#define LAYER_COL_PER_IMAGE ((long long)C * R * S * P * Q)

__device__ __forceinline__ LayerColShape layer_col_shape() { return {C, H, W, R, S, P, Q, PAD_H, PAD_W, U, V}; }

extern "C" __global__ void __launch_bounds__(IM2COL_THREADS)
layer_im2col(const float* __restrict__ x, float* __restrict__ col, int first_image, int images) {
  const LayerColShape g = layer_col_shape();
  const int t = blockIdx.x * IM2COL_THREADS + threadIdx.x;
  if (t >= images * C * P * Q) return;
  const int pq = t % (P * Q), ci = t / (P * Q) % C, b = t / (P * Q * C);
  const int pi = pq / Q, qi = pq % Q;
  const float* image = x + (long long)(first_image + b) * C * H * W;
  float* image_col = col + b * LAYER_COL_PER_IMAGE;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < S; ++j) {
      const int source = layer_col_source(g, ci, i, j, pi, qi);
      image_col[layer_col_row(g, ci, i, j) * (P * Q) + pq] = source >= 0 ? __ldg(image + source) : 0.0f;
    }
}
