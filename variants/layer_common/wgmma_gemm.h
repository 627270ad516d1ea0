// The implicit GEMM of the layer passes on Hopper's warpgroup MMA (wgmma), with 3xTF32 (strict fp32) or
// TF32 math. Only on compute capability 9.0 (wgmma is an sm_90a instruction: Blackwell and earlier GPUs do
// not have it). Two schedules: every warp gathers and multiplies (layer_wgmma_gemm.cuh: forward and
// backward-data), or warp-specialized, a producer warpgroup gathering for the MMA warpgroups
// (layer_wgmma_ws.cuh: also backward-filter, as dw's transpose with dy split like a filter and the n*P*Q sum
// split over CTAs). This base class holds the space, constraints, cost and launches; each variant names its
// pass and schedule.
#pragma once
#include <string>
#include <vector>

#include "variants/layer_common/implicit_gemm.h"

namespace convtune {

class WgmmaGemmVariant : public JitLayerVariant {
 public:
  enum class Schedule { all_warps, specialized };
  WgmmaGemmVariant(GemmPass pass, Schedule schedule) : pass_(pass), schedule_(schedule) {}
  std::string summary() const override;
  ParamSpace space(const Problem& p, const DeviceInfo& dev) const override;
  Config resolve(const Problem& p, const Config& c, const DeviceInfo& dev) const override;
  Cost cost(const Problem& p, const Config& c) const override;
  std::vector<std::pair<std::string, int64_t>> model_traits(const Config& c) const override;
  // The filter split into tf32 tiles, then the GEMM (then backward-filter's split sum).
  std::vector<LayerLaunch> launches(const LayerShape& l, const Config& c) const override;
  Tolerance tolerance(const Problem& p, const Config& c) const override;
  int complexity() const override { return 5; }

 protected:
  std::string source() const override {
    return schedule_ == Schedule::specialized ? "layer_wgmma_ws.cuh" : "layer_wgmma_gemm.cuh";
  }
  std::vector<std::string> defines(const LayerShape& l, const Problem& p, const Config& c) const override;
  size_t workspace_bytes(const LayerShape& l, const Config& c) const override;
  Status constraints(const LayerShape& l, const Config& c, const DeviceInfo& dev) const override;

 private:
  bool specialized() const { return schedule_ == Schedule::specialized; }
  int threads(const Config& c) const;
  int64_t tiles(const LayerShape& l, const Config& c) const;  // the GEMM's CTA tiles (one split each)
  int splits(const Config& c) const;  // backward-filter's split of the n*P*Q sum; 1 for the other passes
  size_t split_b_bytes(const LayerShape& l, const Config& c) const;  // the B operand split into tf32 tiles
  Status split_rules(const LayerShape& l, const Config& c, const DeviceInfo& dev) const;
  int smem_bytes(const LayerShape& l, const Config& c) const;
  dim3 gemm_grid(int64_t m_tiles, int64_t n_tiles, int splits) const;  // the GEMM kernel's grid

  GemmPass pass_;
  Schedule schedule_;
};

}  // namespace convtune
