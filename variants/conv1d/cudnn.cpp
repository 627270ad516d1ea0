// Library baseline: cuDNN's forward convolution (harness/cudnn.h) on a 1 x n image with a 1 x m filter,
// CUDNN_CONVOLUTION (the filter flipped, as the family defines it), pad m - 1 for full and 0 for valid.
#include "harness/cudnn.h"
#include "variants/conv1d/jit_conv1d.h"

namespace convtune {
namespace {

class Conv1dCudnn : public Variant {
 public:
  std::string name() const override { return "conv1d.cudnn"; }
  std::string family() const override { return kConv1d; }
  std::string summary() const override {
    return "cuDNN 9 cudnnConvolutionForward on a 1 x n image, 1 x m filter, fp32 FMA math (no TF32), one algo per config";
  }
  bool library() const override { return true; }
  int complexity() const override { return 1; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override { return cudnn_forward_space(); }
  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo&) const override {
    const Conv1d p(prob);
    if (p.outputs() > INT32_MAX || p.n > INT32_MAX) return Status::no("cuDNN dimensions are 32-bit");
    if (double(p.outputs()) * double(p.m) > 0x1p41)
      return Status::no("direct work over 2^41 multiply-adds: cuDNN would take seconds");
    return cudnn_algo_known(c);
  }
  Cost cost(const Problem& prob, const Config&) const override {
    return {prob.direct_flops(), prob.direct_flops(), prob.min_bytes(), prob.min_bytes()};
  }
  Tolerance tolerance(const Problem& prob, const Config& c) const override {
    return cudnn_tolerance(c, direct_tolerance(prob.at("m")));
  }
  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache&) const override {
    const Conv1d p(prob);
    const int pad = p.full ? int(p.m - 1) : 0;
    return make_cudnn_forward_plan({1, 1, 1, p.n, 1, 1, p.m, 0, pad, 1, 1, 1, p.outputs(), true}, c);
  }
};

CONVTUNE_REGISTER_VARIANT(Conv1dCudnn);

}  // namespace
}  // namespace convtune
