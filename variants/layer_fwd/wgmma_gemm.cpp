#include "variants/layer_common/wgmma_gemm.h"

#include <algorithm>
#include <set>

#include "variants/layer_fwd/layer_fwd.h"
#include "variants/layer_fwd/separate_epilogue.h"
#include "variants/layer_common/layer_gemm.h"

namespace convtune {

namespace {

class LayerFwdWgmmaGemm : public EpilogueChoice<WgmmaGemmVariant> {
 public:
  LayerFwdWgmmaGemm() : EpilogueChoice(GemmPass::forward, Schedule::all_warps) {}
  std::string name() const override { return "layer_fwd.implicit_gemm_wgmma"; }
  std::string family() const override { return kLayerFwd; }
};

class LayerFwdWgmmaGemmWs : public EpilogueChoice<WgmmaGemmVariant> {
 public:
  LayerFwdWgmmaGemmWs() : EpilogueChoice(GemmPass::forward, Schedule::specialized) {}
  std::string name() const override { return "layer_fwd.implicit_gemm_wgmma_ws"; }
  std::string family() const override { return kLayerFwd; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerFwdWgmmaGemm);
CONVTUNE_REGISTER_VARIANT(LayerFwdWgmmaGemmWs);

}  // namespace convtune
