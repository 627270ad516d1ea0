// Library baseline: cuDNN's forward convolution (harness/cudnn.h) on the image, cross-correlation with
// pad r: y(i,j) = sum_{p,q} x(i - r + p, j - r + q) w(p,q), which with m = p - r is the problem's
// out(i,j) = sum in(i+m, j+n) f(m+r, n+r).
#include "harness/cudnn.h"
#include "variants/conv2d/conv2d.h"

namespace convtune {
namespace {

constexpr int kMaxCudnnRadius = 32;

class Conv2dCudnn : public Variant {
 public:
  std::string name() const override { return "conv2d.cudnn"; }
  std::string family() const override { return kConv2d; }
  std::string summary() const override {
    return "cuDNN 9 cudnnConvolutionForward (legacy API), N=b, C=K=1 NCHW fp32, FMA math (no TF32), one algo per config";
  }
  bool library() const override { return true; }
  int complexity() const override { return 1; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override { return cudnn_forward_space(); }

  // Static checks only (no GPU here): which algorithms cuDNN accepts is known only once a handle exists.
  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo&) const override {
    const Conv2d p(prob);
    if (p.r > kMaxCudnnRadius)
      return Status::no("radius " + std::to_string(p.r) + " > " + std::to_string(kMaxCudnnRadius));
    return cudnn_algo_known(c);
  }

  Cost cost(const Problem& prob, const Config&) const override {
    // cuDNN's internals (tiling, im2col, transforms) are unknown: the model is the minimum traffic.
    return {prob.direct_flops(), prob.direct_flops(), prob.min_bytes(), prob.min_bytes()};
  }

  Tolerance tolerance(const Problem&, const Config& c) const override {
    return cudnn_tolerance(c, kDirectFp32Tolerance);
  }

  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache&) const override {
    const Conv2d p(prob);
    const int h = int(p.h), w = int(p.w), f = int(p.fw()), r = int(p.r);
    return make_cudnn_forward_plan({int(p.b), 1, h, w, 1, f, f, r, r, 1, 1, h, w, false}, c);
  }
};

CONVTUNE_REGISTER_VARIANT(Conv2dCudnn);

}  // namespace
}  // namespace convtune
