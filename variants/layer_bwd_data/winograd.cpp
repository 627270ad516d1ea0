// layer_bwd_data.winograd: Winograd F(2x2,3x3) on dy with the rotated, transposed filter (variants/layer_common/winograd.h).
#include "variants/layer_bwd_data/layer_bwd_data.h"
#include "variants/layer_common/winograd.h"

namespace convtune {
namespace {

class LayerBwdDataWinograd : public WinogradVariant {
 public:
  LayerBwdDataWinograd() : WinogradVariant(LayerPass::bwd_data) {}
  std::string name() const override { return "layer_bwd_data.winograd"; }
  std::string family() const override { return kLayerBwdData; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerBwdDataWinograd);

}  // namespace convtune
