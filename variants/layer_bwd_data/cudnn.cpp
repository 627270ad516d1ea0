// Library baseline: cuDNN's cudnnConvolutionBackwardData over the whole layer, one algorithm and math per config.
#include "variants/layer_bwd_data/layer_bwd_data.h"
#include "variants/layer_common/cudnn_layer.h"

namespace convtune {
namespace {

class LayerBwdDataCudnn : public CudnnLayerVariant {
 public:
  std::string name() const override { return "layer_bwd_data.cudnn"; }
  std::string family() const override { return kLayerBwdData; }
  std::string summary() const override {
    return "cuDNN 9 cudnnConvolutionBackwardData (legacy API), NCHW fp32, every backward-data algo, FMA or TF32 math";
  }

 protected:
  CudnnPass pass() const override { return CudnnPass::backward_data; }
};

CONVTUNE_REGISTER_VARIANT(LayerBwdDataCudnn);

}  // namespace
}  // namespace convtune
