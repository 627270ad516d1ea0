// layer_bwd_data.fft: the tiled FFT method (variants/layer_common/fft_layer.h).
#include "variants/layer_common/fft_layer.h"
#include "variants/layer_bwd_data/layer_bwd_data.h"

namespace convtune {
namespace {

class LayerBwdDataFft : public FftLayerVariant {
 public:
  LayerBwdDataFft() : FftLayerVariant(LayerPass::bwd_data) {}
  std::string name() const override { return "layer_bwd_data.fft"; }
  std::string family() const override { return kLayerBwdData; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerBwdDataFft);

}  // namespace convtune
