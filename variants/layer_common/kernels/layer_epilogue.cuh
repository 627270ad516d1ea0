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

// The epilogue runs once per output after the GEMM, on the few warps of a tensor-core CTA, so its dependent
// instructions show in the layer's time (expf and tanhf cost a 3x3 C64 layer 19-22%). On the device, e^x is
// the hardware's 2^x (as __expf, but flushed below 2^-126: 2 ulp plus |x| 6e-8 relative from rounding
// x log2 e) and the divisions are __fdividef (2 ulp for a denominator of 1 to 2^126, 0 past it: both
// functions' limits). Sigmoid's relative error is e^-x's: under 1e-6 for |x| <= 8, more beyond, where its
// values are below 3.4e-4. Tanh, as 1 - 2 / (e^2|x| + 1), errs by about 3e-7 absolute at most (the fp32
// rounding of the layer's sum is larger). Not tanh.approx: 2^-11 relative, past the strict tolerance. The
// host takes expf and IEEE division in the same formulas.
EPILOGUE_HD float epilogue_exp(float v) {
#if defined(__CUDA_ARCH__)
  // __expf's 2^x without its care for results below 2^-126 (three more instructions an output): here such an
  // e^x is only ever added to 1.
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v * 1.44269504088896341f));
  return r;
#else
  return std::exp(v);
#endif
}
EPILOGUE_HD float epilogue_divide(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdividef(a, b);
#else
  return a / b;
#endif
}

template <int Act>
EPILOGUE_HD float layer_activation(float v) {
  static_assert(Act >= 0 && Act <= 3, "the activation is 0 (none), 1 (ReLU), 2 (sigmoid) or 3 (tanh)");
  if constexpr (Act == 1) return v < 0.f ? 0.f : v;  // not fmaxf: a NaN must stay visible
  if constexpr (Act == 2) return epilogue_divide(1.f, 1.f + epilogue_exp(-v));
  if constexpr (Act == 3) return copysignf(1.f - epilogue_divide(2.f, epilogue_exp(2.f * fabsf(v)) + 1.f), v);
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

// A bias already loaded (the GEMM kernels stage or hoist theirs), then the activation.
__device__ __forceinline__ float layer_epilogue_loaded(float bias_value, float v) {
#if BIAS
  v += bias_value;
#else
  (void)bias_value;
#endif
  return layer_activation<ACT>(v);
}

// Output map `map`'s bias, then the activation.
__device__ __forceinline__ float layer_epilogue(const float* __restrict__ bias_of_maps, int map, float v) {
#if BIAS
  return layer_epilogue_loaded(__ldg(bias_of_maps + map), v);
#else
  (void)bias_of_maps, (void)map;
  return layer_activation<ACT>(v);
#endif
}

#endif
