#include "variants/layer_common/implicit_gemm.h"

#include <algorithm>

#include "variants/layer_fwd/layer_fwd.h"
#include "variants/layer_fwd/separate_epilogue.h"

namespace convtune {

namespace {

class LayerFwdImplicitGemm : public EpilogueChoice<ImplicitGemmVariant> {
 public:
  LayerFwdImplicitGemm() : EpilogueChoice(GemmPass::forward) {}
  std::string name() const override { return "layer_fwd.implicit_gemm"; }
  std::string family() const override { return kLayerFwd; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerFwdImplicitGemm);

}  // namespace convtune
