// layer_bwd_filter.winograd: Winograd F(3x3,2x2) over x's tiles and dy's 2x2 blocks (variants/layer_common/winograd.h).
#include "variants/layer_bwd_filter/layer_bwd_filter.h"
#include "variants/layer_common/winograd.h"

namespace convtune {
namespace {

class LayerBwdFilterWinograd : public WinogradVariant {
 public:
  LayerBwdFilterWinograd() : WinogradVariant(LayerPass::bwd_filter) {}
  std::string name() const override { return "layer_bwd_filter.winograd"; }
  std::string family() const override { return kLayerBwdFilter; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerBwdFilterWinograd);

}  // namespace convtune
