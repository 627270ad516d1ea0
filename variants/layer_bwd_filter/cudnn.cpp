// Library baseline: cuDNN's cudnnConvolutionBackwardFilter over the whole layer, one algorithm and math per config.
#include "variants/layer_bwd_filter/layer_bwd_filter.h"
#include "variants/layer_common/cudnn_layer.h"

namespace convtune {
namespace {

class LayerBwdFilterCudnn : public CudnnLayerVariant {
 public:
  std::string name() const override { return "layer_bwd_filter.cudnn"; }
  std::string family() const override { return kLayerBwdFilter; }
  std::string summary() const override {
    return "cuDNN 9 cudnnConvolutionBackwardFilter (legacy API), NCHW fp32, every backward-filter algo, FMA or TF32 "
           "math";
  }

 protected:
  CudnnPass pass() const override { return CudnnPass::backward_filter; }
};

CONVTUNE_REGISTER_VARIANT(LayerBwdFilterCudnn);

}  // namespace
}  // namespace convtune
