// The forward layer's epilogue as a kernel of its own, after a convolution that wrote y without it (the
// im2col variant's cuBLAS GEMMs, and any variant's `epilogue = separate` config): y = act(y + bias[k]) in
// place, one thread per element, the same rounding as a fused epilogue (layer_epilogue.cuh).
// Compile-time: N K P Q, BIAS, ACT, EPILOGUE_THREADS.
#include "layer_epilogue.cuh"

extern "C" __global__ void __launch_bounds__(EPILOGUE_THREADS)
layer_fwd_epilogue(float* __restrict__ y, const float* __restrict__ bias_of_maps) {
  const int t = blockIdx.x * EPILOGUE_THREADS + threadIdx.x;  // y has fewer than 2^31 elements (check_layer_shape)
  if (t >= N * K * P * Q) return;
  y[t] = layer_epilogue(bias_of_maps, t / (P * Q) % K, y[t]);
}
