// Library baseline: cuDNN's cudnnConvolutionForward over the whole layer, one algorithm and math per config;
// the bias (cudnnAddTensor) and ReLU (cudnnActivationForward, in place) follow it inside the timed run, as
// separate calls: cudnnConvolutionBiasActivationForward takes only one algorithm with ReLU.
#include "variants/layer_common/cudnn_layer.h"
#include "variants/layer_fwd/layer_fwd.h"

namespace convtune {
namespace {

class LayerFwdCudnn : public CudnnLayerVariant {
 public:
  std::string name() const override { return "layer_fwd.cudnn"; }
  std::string family() const override { return kLayerFwd; }
  std::string summary() const override {
    return "cuDNN 9 cudnnConvolutionForward (legacy API), NCHW fp32, every forward algo, FMA or TF32 math; "
           "bias and ReLU as cudnnAddTensor and cudnnActivationForward";
  }

 protected:
  CudnnPass pass() const override { return CudnnPass::forward; }
};

CONVTUNE_REGISTER_VARIANT(LayerFwdCudnn);

}  // namespace
}  // namespace convtune
