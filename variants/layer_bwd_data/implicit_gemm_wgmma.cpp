// layer_bwd_data.implicit_gemm_wgmma: dx as the GEMM over (img, y, x) x c x (k, i, j) on wgmma; see
// variants/layer_common/wgmma_gemm.h.
#include "variants/layer_bwd_data/layer_bwd_data.h"
#include "variants/layer_common/wgmma_gemm.h"

namespace convtune {
namespace {

class LayerBwdDataWgmmaGemm : public WgmmaGemmVariant {
 public:
  LayerBwdDataWgmmaGemm() : WgmmaGemmVariant(GemmPass::bwd_data, Schedule::all_warps) {}
  std::string name() const override { return "layer_bwd_data.implicit_gemm_wgmma"; }
  std::string family() const override { return kLayerBwdData; }
};

class LayerBwdDataWgmmaGemmWs : public WgmmaGemmVariant {
 public:
  LayerBwdDataWgmmaGemmWs() : WgmmaGemmVariant(GemmPass::bwd_data, Schedule::specialized) {}
  std::string name() const override { return "layer_bwd_data.implicit_gemm_wgmma_ws"; }
  std::string family() const override { return kLayerBwdData; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerBwdDataWgmmaGemm);
CONVTUNE_REGISTER_VARIANT(LayerBwdDataWgmmaGemmWs);

}  // namespace convtune
