// layer_bwd_filter.implicit_gemm: dw as the GEMM over k x (c, i, j) x (img, p, q), the long t sum split
// over `splits` CTAs whose partials a second kernel adds in order; see variants/layer_common/implicit_gemm.h.
#include "variants/layer_bwd_filter/layer_bwd_filter.h"
#include "variants/layer_common/implicit_gemm.h"

namespace convtune {
namespace {

class LayerBwdFilterImplicitGemm : public ImplicitGemmVariant {
 public:
  LayerBwdFilterImplicitGemm() : ImplicitGemmVariant(GemmPass::bwd_filter) {}
  std::string name() const override { return "layer_bwd_filter.implicit_gemm"; }
  std::string family() const override { return kLayerBwdFilter; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerBwdFilterImplicitGemm);

}  // namespace convtune
