// Library baselines of the forward layer, one algorithm and math per config:
//   layer_fwd.cudnn        cudnnConvolutionForward over the whole layer; the bias (cudnnAddTensor) and the
//                          activation (cudnnActivationForward, in place) follow it inside the timed run as
//                          calls of their own.
//   layer_fwd.cudnn_fused  cudnnConvolutionBiasActivationForward: convolution, bias and activation in one
//                          call. cuDNN's API reference allows only ReLU and the identity there, the identity
//                          only with implicit_precomp_gemm; the other cases are refused (recorded skipped) with
//                          that reason. A problem with no bias gets a zero bias (the call always adds one).
#include "variants/layer_common/cudnn_layer.h"
#include "variants/layer_fwd/layer_fwd.h"

namespace convtune {
namespace {

constexpr const char* kIdentityAlgo = "implicit_precomp_gemm";

class LayerFwdCudnn : public CudnnLayerVariant {
 public:
  std::string name() const override { return "layer_fwd.cudnn"; }
  std::string family() const override { return kLayerFwd; }
  std::string summary() const override {
    return "cuDNN 9 cudnnConvolutionForward (legacy API), NCHW fp32, every forward algo, FMA or TF32 math; "
           "bias and activation as cudnnAddTensor and cudnnActivationForward";
  }

 protected:
  CudnnPass pass() const override { return CudnnPass::forward; }
};

class LayerFwdCudnnFused : public CudnnLayerVariant {
 public:
  std::string name() const override { return "layer_fwd.cudnn_fused"; }
  std::string family() const override { return kLayerFwd; }
  std::string summary() const override {
    return "cuDNN 9 cudnnConvolutionBiasActivationForward (legacy API): convolution, bias and ReLU (or the "
           "identity, implicit_precomp_gemm only) in one call; sigmoid and tanh refused, as cuDNN documents";
  }
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override {
    if (Status base = CudnnLayerVariant::can_implement(p, c, dev); !base) return base;
    return fusable(p, c.at("algo").get<std::string>());
  }

 protected:
  CudnnPass pass() const override { return CudnnPass::forward; }
  bool fused_call() const override { return true; }

 private:
  static Status fusable(const Problem& p, const std::string& algo) {
    const Activation act = activation_of(p);
    if (!has_epilogue(p)) return Status::no("no bias and no activation: nothing to fuse (layer_fwd.cudnn is the plain call)");
    if (act == Activation::sigmoid || act == Activation::tanh)
      return Status::no(std::string("cudnnConvolutionBiasActivationForward fuses only ReLU or the identity (cuDNN API "
                                    "reference), not ") + activation_name(act) +
                        "; layer_fwd.cudnn runs it as cudnnActivationForward");
    if (act == Activation::none && algo != kIdentityAlgo)
      return Status::no(std::string("a bias with no activation is the identity activation, which "
                                    "cudnnConvolutionBiasActivationForward runs only with ") + kIdentityAlgo +
                        " (cuDNN API reference)");
    return Status::yes();
  }
};

CONVTUNE_REGISTER_VARIANT(LayerFwdCudnn);
CONVTUNE_REGISTER_VARIANT(LayerFwdCudnnFused);

}  // namespace
}  // namespace convtune
