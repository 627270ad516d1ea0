// The implicit GEMM of the forward and backward-data passes on Hopper's warpgroup MMA (wgmma), with
// 3xTF32 (strict fp32) or TF32 math: kernels/layer_wgmma_gemm.cuh. Only on compute capability 9.0
// (wgmma is an sm_90a instruction: Blackwell and earlier GPUs do not have it). This base class holds the
// space, constraints, cost and launches; each pass's variant names its pass.
#pragma once
#include <string>
#include <vector>

#include "variants/layer_fwd/implicit_gemm.h"

namespace convtune {

class WgmmaGemmVariant : public JitLayerVariant {
 public:
  explicit WgmmaGemmVariant(GemmPass pass) : pass_(pass) {}
  std::string summary() const override;
  ParamSpace space(const Problem& p, const DeviceInfo& dev) const override;
  Cost cost(const Problem& p, const Config& c) const override;
  Tolerance tolerance(const Problem& p, const Config& c) const override;
  int complexity() const override { return 5; }

 protected:
  std::string source() const override { return "layer_wgmma_gemm.cuh"; }
  std::vector<std::string> defines(const LayerShape& l, const Problem& p, const Config& c) const override;
  // The filter split into tf32 tiles, then the GEMM.
  std::vector<LayerLaunch> launches(const LayerShape& l, const Config& c) const override;
  size_t workspace_bytes(const LayerShape& l, const Config& c) const override;
  Status constraints(const LayerShape& l, const Config& c, const DeviceInfo& dev) const override;

 private:
  GemmPass pass_;
};

}  // namespace convtune
