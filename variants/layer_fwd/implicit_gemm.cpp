#include "variants/layer_common/implicit_gemm.h"

#include <algorithm>

#include "variants/layer_fwd/layer_fwd.h"

namespace convtune {

namespace {

class LayerFwdImplicitGemm : public ImplicitGemmVariant {
 public:
  LayerFwdImplicitGemm() : ImplicitGemmVariant(GemmPass::forward) {}
  std::string name() const override { return "layer_fwd.implicit_gemm"; }
  std::string family() const override { return kLayerFwd; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerFwdImplicitGemm);

}  // namespace convtune
