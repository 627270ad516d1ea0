// layer_bwd_filter.implicit_gemm_wgmma_ws: dw's transpose as the GEMM over (c, i, j) x k x (img, p, q) on
// wgmma, warp-specialized, the n*P*Q sum split over CTAs; see variants/layer_common/wgmma_gemm.h.
#include "variants/layer_bwd_filter/layer_bwd_filter.h"
#include "variants/layer_common/wgmma_gemm.h"

namespace convtune {
namespace {

class LayerBwdFilterWgmmaGemmWs : public WgmmaGemmVariant {
 public:
  LayerBwdFilterWgmmaGemmWs() : WgmmaGemmVariant(GemmPass::bwd_filter, Schedule::specialized) {}
  std::string name() const override { return "layer_bwd_filter.implicit_gemm_wgmma_ws"; }
  std::string family() const override { return kLayerBwdFilter; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerBwdFilterWgmmaGemmWs);

}  // namespace convtune
