// layer_fwd.im2col_gemm's kernels: im2col, and the epilogue that follows the GEMMs when the problem asks for
// a bias or ReLU. Compile-time: the shape, IM2COL_THREADS, BIAS, RELU.
#include "layer_im2col.cuh"

// y = relu(y + bias[k]) in place over the whole batch. The same rounding as the reference: one fp32 add.
extern "C" __global__ void __launch_bounds__(IM2COL_THREADS)
layer_fwd_epilogue(float* __restrict__ y, const float* __restrict__ bias) {
  const int t = blockIdx.x * IM2COL_THREADS + threadIdx.x;
  if (t >= N * K * P * Q) return;
  float value = y[t];
#if BIAS
  value += __ldg(bias + t / (P * Q) % K);
#endif
#if RELU
  value = value < 0.0f ? 0.0f : value;
#endif
  y[t] = value;
}
