// layer_fwd.fft: the tiled FFT method (variants/layer_common/fft_layer.h).
#include "variants/layer_common/fft_layer.h"
#include "variants/layer_fwd/layer_fwd.h"

namespace convtune {
namespace {

class LayerFwdFft : public FftLayerVariant {
 public:
  LayerFwdFft() : FftLayerVariant(LayerPass::forward) {}
  std::string name() const override { return "layer_fwd.fft"; }
  std::string family() const override { return kLayerFwd; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerFwdFft);

}  // namespace convtune
