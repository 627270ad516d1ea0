// layer_bwd_filter.direct: accumulation over images and pixels, warp-reduced, split over blocks whose
// partial sums a second kernel adds in a fixed order (kernels/layer_bwd_filter_direct.cuh).
#include <algorithm>

#include "variants/layer_bwd_filter/layer_bwd_filter.h"
#include "variants/layer_common/layer_variant.h"

namespace convtune {
namespace {

constexpr int kDirectSumThreads = 256;

int64_t segments(const LayerShape& l) { return l.n * l.p * ceil_div(l.q, 32); }

class LayerBwdFilterDirect : public JitLayerVariant {
 public:
  std::string name() const override { return "layer_bwd_filter.direct"; }
  std::string family() const override { return kLayerBwdFilter; }
  std::string summary() const override {
    return "direct: a warp owns maps_per_thread maps x s taps of one (c, i), a block the r warps of c_per_block "
           "maps (dy and x rows shared in L1); lanes take 32 columns of a dy row (coalesced); contiguous (image, row) "
           "ranges split over `splits` blocks, partial sums added in a fixed order";
  }
  int complexity() const override { return 2; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("maps_per_thread", "output maps per warp (accumulators: maps_per_thread x s)", int_values({4, 8, 16}))
        .add("c_per_block", "input maps per block (r warps each)", int_values({1, 2, 4, 8, 16}))
        .add("splits", "blocks the (image, row) segments are split over", int_values({32, 64, 128, 256, 512, 1024}));
  }
  Tolerance tolerance(const Problem& p, const Config&) const override {
    return layer_tolerance(bwd_filter_sum_length(LayerShape(p)), kMathFp32);
  }
  // dy read once per (c, i) pair and x once per map group (L1 and L2 absorb part of it); the partial sums
  // written and read once.
  Cost cost(const Problem& p, const Config& c) const override {
    const LayerShape l(p);
    const double groups = double(ceil_div(l.k, cfg_int(c, "maps_per_thread")));
    const double partials = double(cfg_int(c, "splits")) * double(l.filter_elements());
    const double bytes = 4.0 * (double(l.y_elements()) * double(l.c * l.r) + double(l.x_elements()) * groups * double(l.r) +
                                2 * partials + double(l.filter_elements()));
    return {p.direct_flops(), p.direct_flops(), operand_bytes(p), bytes};
  }

 protected:
  std::string source() const override { return "layer_bwd_filter_direct.cuh"; }
  Status constraints(const LayerShape& l, const Config& c, const DeviceInfo&) const override {
    if (cfg_int(c, "maps_per_thread") * l.s > 128) return Status::no("maps_per_thread x s > 128 accumulators per thread");
    if (cfg_int(c, "splits") > segments(l))
      return Status::no("splits > the " + std::to_string(segments(l)) + " (image, row, 32 columns) segments");
    if (l.r * cfg_int(c, "c_per_block") > 32) return Status::no("r x c_per_block > 32 warps per block");
    if (cfg_int(c, "c_per_block") > 1 && cfg_int(c, "c_per_block") >= 2 * l.c)
      return Status::no("c_per_block at least twice c (half the warps idle)");
    if (cfg_int(c, "maps_per_thread") > 2 * l.k && cfg_int(c, "maps_per_thread") > 4)
      return Status::no("maps_per_thread more than twice k");
    return Status::yes();
  }
  std::vector<std::string> defines(const LayerShape&, const Problem&, const Config& c) const override {
    return {define("MAPS_PER_THREAD", cfg_int(c, "maps_per_thread")),
            define("C_PER_BLOCK", cfg_int(c, "c_per_block")),
            define("SPLITS", cfg_int(c, "splits"))};
  }
  std::vector<LayerLaunch> launches(const LayerShape& l, const Config& c) const override {
    const int64_t groups = ceil_div(l.k, cfg_int(c, "maps_per_thread")) * ceil_div(l.c, cfg_int(c, "c_per_block"));
    const int64_t sum_blocks = std::min<int64_t>(ceil_div(l.filter_elements(), kDirectSumThreads), 4096);
    return {{"layer_bwd_filter_direct_kernel", dim3(unsigned(cfg_int(c, "splits")), unsigned(groups)),
             dim3(32, unsigned(l.r * cfg_int(c, "c_per_block")))},
            {"layer_bwd_filter_sum_splits_kernel", dim3(unsigned(sum_blocks)), dim3(kDirectSumThreads)}};
  }
  size_t workspace_bytes(const LayerShape& l, const Config& c) const override {
    return size_t(cfg_int(c, "splits")) * size_t(l.filter_elements()) * sizeof(float);
  }
};

CONVTUNE_REGISTER_VARIANT(LayerBwdFilterDirect);

}  // namespace
}  // namespace convtune
