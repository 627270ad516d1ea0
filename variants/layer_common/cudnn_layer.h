// cuDNN (harness/cudnn.h) as the library baseline of the layer families: cudnnConvolutionForward,
// cudnnConvolutionBackwardData and cudnnConvolutionBackwardFilter over the whole NCHW fp32 layer (every
// algorithm of the pass a value of "algo", the math a value of "math").
// The first bind of a (problem, pass, math) runs cuDNN's own find once per process and every plan records
// that pick beside its timing (details()). The forward pass's bias and activation follow the convolution as
// cudnnAddTensor and cudnnActivationForward, or, for a variant whose fused_call() says so, are fused into it
// by cudnnConvolutionBiasActivationForward. Here beside layer_shape.h so that every layer folder includes it
// from one place.
#pragma once
#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/cudnn.h"
#include "harness/variant.h"

namespace convtune {

// cuDNN's internals (tiling, im2col, transforms) are unknown: the direct flops and each operand once.
Cost cudnn_layer_cost(const Problem& p);

// The variant of one convolution pass: space "algo" x "math" (fp32: CUDNN_FMA_MATH; tf32: tensor-op math,
// only under precision = 1), the pass's tolerance, the cuDNN plan. Each pass's file names it and its family.
class CudnnLayerVariant : public Variant {
 public:
  bool library() const override { return true; }
  int complexity() const override { return 1; }
  ParamSpace space(const Problem& p, const DeviceInfo& dev) const override;
  // Static checks only (no GPU here): which algorithms cuDNN accepts is known only once a handle exists.
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override;
  Cost cost(const Problem& p, const Config&) const override { return cudnn_layer_cost(p); }
  Tolerance tolerance(const Problem& p, const Config& c) const override;
  Math math_of(const Config& c) const override { return math_from_name(c.value("math", std::string(kMathFp32))); }
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo& dev, JitCache& jit) const override;

 protected:
  virtual CudnnPass pass() const = 0;
  // One cudnnConvolutionBiasActivationForward call instead of the convolution, bias and activation calls.
  virtual bool fused_call() const { return false; }
};

}  // namespace convtune
