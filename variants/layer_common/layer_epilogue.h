// The forward layer's epilogue on the host side: the activation a problem asks for, the defines that give
// the kernels their epilogue (kernels/layer_epilogue.cuh), and the activation in float64 for the references
// (host and device code, so the CPU tests run the GPU reference's arithmetic).
//
// The activation is the problem dim "relu", named after its first value: problems made before sigmoid and
// tanh (relu = 0 or 1) keep their keys, and shipped runs and dispatch tables stay valid.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "harness/jit_options.h"
#include "harness/problem.h"
#include "variants/layer_common/layer_shape.h"

namespace convtune {

// Values of the activation dim; kernels see them as ACT.
enum class Activation : int { none = 0, relu = 1, sigmoid = 2, tanh = 3 };
inline constexpr const char* kActivationDim = "relu";
inline constexpr int kActivationCount = 4;
inline constexpr const char* kActivationMeaning =
    "activation after the bias: 0 = none, 1 = ReLU, 2 = sigmoid, 3 = tanh "
    "(named relu, its first value, so that older problem keys stay valid)";

inline const char* activation_name(Activation a) {
  static const char* const names[kActivationCount] = {"none", "relu", "sigmoid", "tanh"};
  return names[int(a)];
}

// A problem without the forward pass's dims (the backward passes, pooling) has no epilogue.
inline bool has_bias(const Problem& p) { return p.dims.count("bias") && p.at("bias") == 1; }
inline Activation activation_of(const Problem& p) {
  return p.dims.count(kActivationDim) ? Activation(p.at(kActivationDim)) : Activation::none;
}
inline bool has_epilogue(const Problem& p) { return has_bias(p) || activation_of(p) != Activation::none; }

// The same convolution with neither bias nor activation: what a separate epilogue kernel follows.
inline Problem without_epilogue(Problem p) {
  p.dims["bias"] = 0;
  p.dims[kActivationDim] = 0;
  return p;
}

// BIAS and ACT for kernels/layer_epilogue.cuh: the problem's, or none for a pass without them.
inline std::vector<std::string> epilogue_defines(const Problem& p) {
  return {define("BIAS", has_bias(p) ? 1 : 0), define("ACT", int(activation_of(p)))};
}

// Verifying a squashing activation (sigmoid, tanh). Its output errs by at most its slope (1/4, 1) times the
// sum's error, but |y| < 1 however large the sum z: judged against max|y|, the sum's rounding would count
// max|z| / max|y| times over (the 3x3 C64 layer's sums, sd 8 on unit inputs, failed Winograd's bound with
// tanh). So verification keeps z at unit scale, weights uniform in +-3/sqrt(terms) (sd 1, the bias adds
// 0.58), where max|z| stays below 8, and the method's bounds widen by what is left of the ratio:
// max|z| / max|y| <= 8 / tanh(8) for tanh and 8 / (1/2) for sigmoid (some z >= 0), times the slope; the
// norms' ratio ||z|| / ||y|| is about 1.75 for tanh at that scale, and below 1 times the slope for sigmoid.
inline bool squashes(Activation a) { return a == Activation::sigmoid || a == Activation::tanh; }
inline double unit_sum_amplitude(int64_t terms) { return 3.0 / std::sqrt(double(terms)); }
inline Tolerance squashed_tolerance(Activation a, const Tolerance& method) {
  if (a == Activation::tanh) return {2 * method.rel_l2, 8 * method.max_rel};
  if (a == Activation::sigmoid) return {method.rel_l2, 4 * method.max_rel};
  return method;
}

// The activation in float64, as the references apply it.
LAYER_HOST_DEVICE inline double activate(Activation a, double v) {
  switch (a) {
    case Activation::relu:
      return v < 0 ? 0.0 : v;
    case Activation::sigmoid:
      return 1.0 / (1.0 + ::exp(-v));
    case Activation::tanh:
      return ::tanh(v);
    default:
      return v;
  }
}

}  // namespace convtune
