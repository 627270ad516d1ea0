// layer_bwd_filter.fft: the tiled FFT method (variants/layer_common/fft_layer.h).
#include "variants/layer_common/fft_layer.h"
#include "variants/layer_bwd_filter/layer_bwd_filter.h"

namespace convtune {
namespace {

class LayerBwdFilterFft : public FftLayerVariant {
 public:
  LayerBwdFilterFft() : FftLayerVariant(LayerPass::bwd_filter) {}
  std::string name() const override { return "layer_bwd_filter.fft"; }
  std::string family() const override { return kLayerBwdFilter; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerBwdFilterFft);

}  // namespace convtune
