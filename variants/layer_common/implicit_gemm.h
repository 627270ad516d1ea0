// The implicit-GEMM variants of the three convolution-layer passes (layer_fwd, layer_bwd_data,
// layer_bwd_filter): one NVRTC kernel (kernels/layer_implicit_gemm.cuh) whose PASS define picks the
// gathers of kernels/layer_implicit_gemm_gather.cuh, with fp32 SIMT, 3xTF32 and TF32 tensor-core math.
// This base class holds the space, constraints, cost and launch; each pass's variant names its pass.
#pragma once
#include <string>
#include <vector>

#include "harness/variant.h"
#include "variants/layer_common/kernels/layer_implicit_gemm_gather.cuh"
#include "variants/layer_common/layer_shape.h"
#include "variants/layer_common/layer_variant.h"

namespace convtune {

// The shape in the form the gather functions read (lowercase int members), on the host.
struct GemmShape {
  int n, c, h, w, k, r, s, pad_h, pad_w, u, v, p, q;
  explicit GemmShape(const LayerShape& l)
      : n(int(l.n)), c(int(l.c)), h(int(l.h)), w(int(l.w)), k(int(l.k)), r(int(l.r)), s(int(l.s)),
        pad_h(int(l.pad_h)), pad_w(int(l.pad_w)), u(int(l.u)), v(int(l.v)), p(int(l.p)), q(int(l.q)) {}
};

inline constexpr double kInt32Limit = 2147483647.0;  // the GEMM kernels index with int

enum class GemmPass { forward = 0, bwd_data = 1, bwd_filter = 2 };

// The GEMM extents of a pass: D is m x n, each element a sum over t (the pass's sum length: c*r*s,
// k*r*s or n*P*Q).
struct GemmExtent {
  int64_t m, n, t;
};
GemmExtent gemm_extent(GemmPass pass, const LayerShape& l);

// The split t sums of the GEMM variants (`split` CTAs share each of `tiles` tiles' sums of `k_tiles` k-tiles),
// yes when the SM count is unknown. Too few: tiles * split CTAs under a quarter of the SMs cannot win while
// 4 x split (no more than the k-tiles) is allowed. Too many: when split / 2 already fills the SMs twice, the
// partials' traffic buys no occupancy.
Status split_not_too_few(int64_t tiles, int split, int64_t k_tiles, const DeviceInfo& dev);
Status split_not_too_many(int64_t tiles, int split, const DeviceInfo& dev);

// Backward-filter's split count as a rule, so that one config fits every shape: the `waves` tunable asks for
// the most splits whose tiles x splits CTAs fill the SMs `waves` times over, at least 1 and at most the
// k-tiles (each split needs one). With the SM count unknown (CPU compile tests) it is `waves` itself.
int splits_for_waves(int waves, int64_t tiles, int64_t k_tiles, const DeviceInfo& dev);
// A config whose "splits" is still to come from its "waves" (an integer of at least 1: other values are
// left for can_implement to refuse, and a config that names its splits keeps them).
bool derives_splits(const Config& c);
// The waves rule's refusals: a waves value under 1, or waves beside splits that it does not give.
Status waves_allowed(const Config& c, int64_t tiles, int64_t k_tiles, const DeviceInfo& dev);

// A named CTA tile: BM x BN x BK, computed by SIMT threads of TM x TN outputs or by warps of mma tiles.
struct GemmTile {
  std::string name;  // "128x64x8"
  int bm, bn, bk;
  bool tensor_cores;
  int tm, tn;             // SIMT: outputs per thread
  int warps_m, warps_n;   // tensor cores: warp grid
  int threads() const { return tensor_cores ? 32 * warps_m * warps_n : (bm / tm) * (bn / tn); }
};
const std::vector<GemmTile>& gemm_tiles();
const GemmTile* find_gemm_tile(const std::string& name);

class ImplicitGemmVariant : public JitLayerVariant {
 public:
  explicit ImplicitGemmVariant(GemmPass pass) : pass_(pass) {}
  std::string summary() const override;
  ParamSpace space(const Problem& p, const DeviceInfo& dev) const override;
  Config resolve(const Problem& p, const Config& c, const DeviceInfo& dev) const override;
  Cost cost(const Problem& p, const Config& c) const override;
  std::vector<std::pair<std::string, int64_t>> model_traits(const Config& c) const override;
  Tolerance tolerance(const Problem& p, const Config& c) const override;
  int complexity() const override { return 4; }
  int splits(const Config& c) const { return c.at("splits").get<int>(); }

 protected:
  std::string source() const override { return "layer_implicit_gemm.cuh"; }
  std::vector<std::string> defines(const LayerShape& l, const Problem& p, const Config& c) const override;
  // The GEMM, then the split reduction when splits > 1.
  std::vector<LayerLaunch> launches(const LayerShape& l, const Config& c) const override;
  size_t workspace_bytes(const LayerShape& l, const Config& c) const override;
  Status constraints(const LayerShape& l, const Config& c, const DeviceInfo& dev) const override;

 private:
  GemmPass pass_;
};

}  // namespace convtune
