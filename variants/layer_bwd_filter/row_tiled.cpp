// layer_bwd_filter.row_tiled: few input maps, stride 1. Per (image, row), dy's row and the one x row the
// window gains are staged (bulk copies on sm_90, else cp.async) while the previous row computes (x rows in a
// ring of r + 1); each lane 4 columns x maps x s taps in registers (kernels/layer_bwd_filter_rows.cuh); partial sums per split added
// in a fixed order.
#include <algorithm>

#include "variants/layer_bwd_filter/layer_bwd_filter.h"
#include "variants/layer_common/layer_variant.h"

namespace convtune {
namespace {

constexpr int kRowSumThreads = 256;
constexpr int kMaxInputMaps = 16;  // the block re-stages dy for every input map: the GEMM variants serve wide layers

// The kernel's shared memory (kernels/layer_bwd_filter_rows.cuh): two buffers of dy's rows of `maps` maps,
// two rings of r + 1 x rows with their zero borders, two mbarriers for the bulk copies.
int64_t shared_bytes(const LayerShape& l, const Config& c) {
  const int64_t row = ceil_div(l.q, 128) * 128, x_offset = 4 * ceil_div(l.pad_w, 4);
  const int64_t x_row = 4 * ceil_div(x_offset + row + l.s, 4);
  return 2 * 4 * (cfg_int(c, "maps") * row + (l.r + 1) * x_row) + 2 * 8;  // + two mbarriers
}

class LayerBwdFilterRowTiled : public JitLayerVariant {
 public:
  std::string name() const override { return "layer_bwd_filter.row_tiled"; }
  std::string family() const override { return kLayerBwdFilter; }
  std::string summary() const override {
    return "row-tiled (c <= 16, stride 1): a block per (input map, `maps` output maps), a warp per filter row; "
           "per (image, row) dy's row and the x row the window gains staged (bulk copies on sm_90, else cp.async) "
           "while the previous row computes; each lane 4 columns x maps x s taps in registers; (image, row) ranges split over `splits` "
           "blocks, partial sums added in a fixed order";
  }
  int complexity() const override { return 2; }
  // Rows of 4-float multiples are staged 16 bytes at a time (the kernel's kVec): x and dy must be aligned.
  std::vector<size_t> operand_alignments(const LayerShape& l) const override {
    if (l.q % 4 == 0 && l.w % 4 == 0) return {16, 16};
    return {};
  }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("maps", "output maps per block (accumulators per lane: maps x s)", int_values({4, 8}))
        .add("splits", "blocks the (image, row) pairs are split over", int_values({32, 64, 128, 256}))
        .add("min_blocks", "blocks per SM the register count must allow (1: the compiler's choice)",
             int_values({1, 4}));
  }
  Tolerance tolerance(const Problem& p, const Config&) const override {
    return layer_tolerance(bwd_filter_sum_length(LayerShape(p)), kMathFp32);
  }
  // dy staged once per input map, x once per map group; the partial sums written and read once.
  Cost cost(const Problem& p, const Config& c) const override {
    const LayerShape l(p);
    const double groups = double(ceil_div(l.k, cfg_int(c, "maps")));
    const double partials = double(cfg_int(c, "splits")) * double(l.filter_elements());
    const double bytes = 4.0 * (double(l.y_elements()) * double(l.c) + double(l.x_elements()) * groups +
                                2 * partials + double(l.filter_elements()));
    return {p.direct_flops(), p.direct_flops(), operand_bytes(p), bytes};
  }

 protected:
  std::string source() const override { return "layer_bwd_filter_rows.cuh"; }
  Status constraints(const LayerShape& l, const Config& c, const DeviceInfo& dev) const override {
    if (l.u != 1 || l.v != 1) return Status::no("row_tiled needs stride 1 (u = v = 1)");
    if (dev.cc_major < 8) return Status::no("row_tiled stages rows with cp.async: compute capability 8.0 or later");
    if (l.c > kMaxInputMaps) return Status::no("c > 16 (dy is staged once per input map)");
    if (l.r > 32) return Status::no("r > 32 (a warp per filter row)");
    if (cfg_int(c, "maps") * l.s > 128) return Status::no("maps x s > 128 accumulators per lane");
    if (cfg_int(c, "min_blocks") * l.r > 32)
      return Status::no("min_blocks x r > 32 (fewer than 64 registers a thread)");
    if (cfg_int(c, "maps") > 4 && l.k <= 4) return Status::no("maps 8 with k <= 4 (maps 4 covers them)");
    if (cfg_int(c, "splits") > l.n * l.p)
      return Status::no("splits > the " + std::to_string(l.n * l.p) + " (image, row) pairs");
    if (shared_bytes(l, c) > dev.max_smem_per_block_optin)
      return Status::no("shared memory " + std::to_string(shared_bytes(l, c)) + " B > device limit " +
                        std::to_string(dev.max_smem_per_block_optin) + " B");
    return Status::yes();
  }
  std::vector<std::string> defines(const LayerShape&, const Problem&, const Config& c) const override {
    return {define("MAPS", cfg_int(c, "maps")), define("SPLITS", cfg_int(c, "splits")),
            define("MIN_BLOCKS", cfg_int(c, "min_blocks"))};
  }
  std::vector<LayerLaunch> launches(const LayerShape& l, const Config& c) const override {
    const int64_t blocks_y = ceil_div(l.k, cfg_int(c, "maps")) * l.c;
    const int64_t sum_blocks = std::min<int64_t>(ceil_div(l.filter_elements(), kRowSumThreads), 4096);
    return {{"layer_bwd_filter_rows_kernel", dim3(unsigned(cfg_int(c, "splits")), unsigned(blocks_y)),
             dim3(unsigned(32 * l.r)), int(shared_bytes(l, c))},
            {"layer_bwd_filter_sum_splits_kernel", dim3(unsigned(sum_blocks)), dim3(kRowSumThreads)}};
  }
  size_t workspace_bytes(const LayerShape& l, const Config& c) const override {
    return size_t(cfg_int(c, "splits")) * size_t(l.filter_elements()) * sizeof(float);
  }
};

CONVTUNE_REGISTER_VARIANT(LayerBwdFilterRowTiled);

}  // namespace
}  // namespace convtune
