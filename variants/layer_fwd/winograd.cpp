#include "variants/layer_common/winograd.h"

#include <algorithm>
#include <cmath>

#include "variants/layer_fwd/layer_fwd.h"
#include "variants/layer_fwd/separate_epilogue.h"
#include "variants/layer_common/layer_gemm.h"
#include "variants/layer_common/layer_variant.h"

namespace convtune {

namespace {

class LayerFwdWinograd : public EpilogueChoice<WinogradVariant> {
 public:
  LayerFwdWinograd() : EpilogueChoice(LayerPass::forward) {}
  std::string name() const override { return "layer_fwd.winograd"; }
  std::string family() const override { return kLayerFwd; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerFwdWinograd);

}  // namespace convtune
