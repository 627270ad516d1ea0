// The forward layer's epilogue, one for every layer kernel that writes y (direct tiled, implicit GEMM, wgmma
// GEMM, Winograd's output transform, the im2col variant's and the separate epilogue kernel): bias[k] added
// (BIAS 1), then the activation ACT (variants/layer_common/layer_epilogue.h: 0 none, 1 ReLU, 2 sigmoid,
// 3 tanh). The backward passes include it through the shared kernels with both left at 0.
// The activation is host code too, so that the CPU tests compare this very fp32 arithmetic with the float64
// reference's.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define EPILOGUE_HD __host__ __device__ __forceinline__
#else
#include <cmath>
#define EPILOGUE_HD inline
#endif

// expf and tanhf, not __expf and tanh.approx: those err by up to 2^-11 relative, past the strict tolerance.
// Sigmoid's division is __fdividef on the device: within 2 ulp for a denominator of 1 to 2^126 (and 0 past
// it, sigmoid's limit), in 2 instructions where an IEEE division takes about ten: the epilogue runs once per
// output, and a 1x1 layer has only C multiply-adds an output to hide it behind.
template <int Act>
EPILOGUE_HD float layer_activation(float v) {
  static_assert(Act >= 0 && Act <= 3, "the activation is 0 (none), 1 (ReLU), 2 (sigmoid) or 3 (tanh)");
  if constexpr (Act == 1) return v < 0.f ? 0.f : v;  // not fmaxf: a NaN must stay visible
#if defined(__CUDA_ARCH__)
  if constexpr (Act == 2) return __fdividef(1.f, 1.f + expf(-v));
#else
  if constexpr (Act == 2) return 1.f / (1.f + expf(-v));
#endif
  if constexpr (Act == 3) return tanhf(v);
  return v;
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

#ifndef BIAS
#define BIAS 0
#endif
#ifndef ACT
#define ACT 0
#endif

// The kernels' bias argument where there is one; without it `bias` is a null pointer, so that code passing
// it to layer_epilogue compiles either way.
#if BIAS
#define BIAS_PARAM const float* __restrict__ bias,
#else
#define BIAS_PARAM
constexpr const float* bias = nullptr;
#endif

// Output map `map`'s bias, then the activation.
__device__ __forceinline__ float layer_epilogue(const float* __restrict__ bias_of_maps, int map, float v) {
#if BIAS
  v += __ldg(bias_of_maps + map);
#else
  (void)bias_of_maps, (void)map;
#endif
  return layer_activation<ACT>(v);
}

#endif
