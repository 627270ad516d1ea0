// layer_bwd_data.implicit_gemm: dx as the GEMM over (img, y, x) x c x (k, i, j); see
// variants/layer_common/implicit_gemm.h.
#include "variants/layer_bwd_data/layer_bwd_data.h"
#include "variants/layer_common/implicit_gemm.h"

namespace convtune {
namespace {

class LayerBwdDataImplicitGemm : public ImplicitGemmVariant {
 public:
  LayerBwdDataImplicitGemm() : ImplicitGemmVariant(GemmPass::bwd_data) {}
  std::string name() const override { return "layer_bwd_data.implicit_gemm"; }
  std::string family() const override { return kLayerBwdData; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerBwdDataImplicitGemm);

}  // namespace convtune
