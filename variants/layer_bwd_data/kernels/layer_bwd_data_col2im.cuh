// layer_bwd_data.gemm_col2im's col2im, a gather: after the GEMM col_b = W^T dy_b, each dx element of the
// chunk sums the column entries that came from it, one per filter tap an output read it through, in tap
// order (deterministic, no atomics). Pixels no output reads get 0. One thread per dx element: consecutive
// threads write consecutive pixels. Compile-time: the shape (layer_defines), COL2IM_THREADS.
#include "layer_im2col_index.cuh"

extern "C" __global__ void __launch_bounds__(COL2IM_THREADS)
layer_col2im(const float* __restrict__ col, float* __restrict__ dx, int first_image, int images) {
  const LayerColShape g = {C, H, W, R, S, P, Q, PAD_H, PAD_W, U, V};
  const int t = blockIdx.x * COL2IM_THREADS + threadIdx.x;
  if (t >= images * C * H * W) return;
  const int xi = t % W, yi = t / W % H, ci = t / (H * W) % C, b = t / (H * W * C);
  const float* image_col = col + b * ((long long)C * R * S * P * Q);
  float sum = 0.0f;
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < S; ++j) {
      const int reader = layer_col_reader(g, yi, xi, i, j);
      if (reader >= 0) sum += image_col[(long long)layer_col_row(g, ci, i, j) * (P * Q) + reader];
    }
  dx[(long long)first_image * C * H * W + t] = sum;
}
