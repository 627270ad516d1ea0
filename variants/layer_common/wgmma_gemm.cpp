#include "variants/layer_common/wgmma_gemm.h"

#include <algorithm>

#include "variants/layer_common/layer_epilogue.h"
#include "variants/layer_fwd/layer_fwd.h"
#include "variants/layer_common/layer_gemm.h"

namespace convtune {
namespace {

constexpr int kTileK = 32;  // the kernel's BK

int rows_of(int warpgroups) { return 64 * warpgroups; }  // BM: 64 GEMM rows a (MMA) warpgroup
int tile_m(const Config& c) { return rows_of(cfg_int(c, "warpgroups")); }
int tile_n(const Config& c) { return cfg_int(c, "tile_n"); }
// One (n-tile, k-tile) block of the split filter: big + small tiles for 3xTF32, the big one for TF32.
int block_bytes(const Config& c) { return (config_math(c) == kMath3xTf32 ? 2 : 1) * tile_n(c) * kTileK * 4; }

// The GEMM these kernels compute: backward-filter's transposed (rows (c, i, j) from x, columns k from dy,
// which is split like a filter), the others as gemm_extent says.
GemmExtent wgmma_extent(GemmPass pass, const LayerShape& l) {
  const GemmExtent e = gemm_extent(pass, l);
  return pass == GemmPass::bwd_filter ? GemmExtent{e.n, e.m, e.t} : e;
}

}  // namespace

int WgmmaGemmVariant::splits(const Config& c) const { return pass_ == GemmPass::bwd_filter ? cfg_int(c, "splits") : 1; }

size_t WgmmaGemmVariant::split_b_bytes(const LayerShape& l, const Config& c) const {
  const GemmExtent e = wgmma_extent(pass_, l);
  return size_t(ceil_div(e.n, tile_n(c))) * size_t(ceil_div(e.t, kTileK)) * size_t(block_bytes(c));
}

int WgmmaGemmVariant::threads(const Config& c) const {
  return 128 * (cfg_int(c, "warpgroups") + (specialized() ? 1 : 0));
}

// The launch's dynamic shared memory, passed to the kernel as SMEM_BYTES, which checks it covers its carve-up:
// 1024 bytes of slack to align the swizzled tiles, the B blocks, the A tiles (rows of BM + 8), the mbarriers
// (full only, or full and empty), for the specialized kernel a tap table of up to R*S + 31 entries, and for the
// forward pass the tile's BN biases (reserved with or without a bias: 512 bytes at most).
int WgmmaGemmVariant::smem_bytes(const LayerShape& l, const Config& c) const {
  const int stages = cfg_int(c, "stages");
  // Backward-filter's A tile is row-major (BM rows of 32 + 4 words); the others' k-major (32 rows of BM + 8).
  const int a_tile = pass_ == GemmPass::bwd_filter ? 4 * tile_m(c) * (kTileK + 4) : 4 * kTileK * (tile_m(c) + 8);
  const int biases = pass_ == GemmPass::forward ? 4 * tile_n(c) : 0;
  const int tiles = 1024 + stages * (block_bytes(c) + a_tile) + biases;
  if (!specialized()) return tiles + 8 * stages;
  // Backward-filter's table of the tile's rows (16 bytes each), or the others' tap table.
  const int table = pass_ == GemmPass::bwd_filter ? 16 * tile_m(c) : 8 * int(l.r * l.s + kTileK - 1);
  return tiles + 16 * stages + table;
}

std::string WgmmaGemmVariant::summary() const {
  if (pass_ == GemmPass::bwd_filter)
    return "implicit GEMM of the backward-filter pass (dw's transpose) on Hopper's warpgroup MMA (wgmma; compute "
           "capability 9.0 only), warp-specialized: a producer warpgroup gathers x, dy comes pre-split into tf32 "
           "tiles by bulk copy; the n*P*Q sum split over CTAs and added in order; 3xTF32 (fp32 accuracy) or TF32";
  return std::string("implicit GEMM of the ") + (pass_ == GemmPass::forward ? "forward" : "backward-data") +
         " pass on Hopper's warpgroup MMA (wgmma; compute capability 9.0 only): the image gathered by cp.async " +
         (specialized() ? "(a producer warpgroup, on mbarriers) and split in the MMA warpgroups' registers"
                        : "and split in registers") +
         ", the filter pre-split into tf32 tiles by bulk copy; 3xTF32 (fp32 accuracy) or TF32";
}

int64_t WgmmaGemmVariant::tiles(const LayerShape& l, const Config& c) const {
  const GemmExtent e = wgmma_extent(pass_, l);
  return ceil_div(e.m, tile_m(c)) * ceil_div(e.n, tile_n(c));
}

// Backward-filter's splits from waves: a count just past a full wave leaves its last wave nearly empty (H100,
// C128 at 18 tiles: splits 7 in 0.102 ms, 8 in 0.156), and every winner of the H100 networks run was the most
// splits that fill the SMs once or twice.
Config WgmmaGemmVariant::resolve(const Problem& p, const Config& c, const DeviceInfo& dev) const {
  if (pass_ != GemmPass::bwd_filter || !derives_splits(c)) return c;
  for (const char* name : {"warpgroups", "tile_n"})
    if (!c.contains(name) || !c.at(name).is_number_integer() || c.at(name).get<int>() < 1) return c;
  const LayerShape l(p);
  Config out = c;
  out["splits"] = splits_for_waves(cfg_int(c, "waves"), tiles(l, c), ceil_div(wgmma_extent(pass_, l).t, kTileK), dev);
  return out;
}

ParamSpace WgmmaGemmVariant::space(const Problem& p, const DeviceInfo& dev) const {
  ParamSpace s;
  s.add("math", "3xTF32 (strict fp32) or TF32 (precision = 1 only)", {kMath3xTf32, kMathTf32})
      .add("warpgroups",
           specialized() ? "MMA warpgroups per CTA (beside the producer), each 64 rows of the GEMM tile (BM = 64 x "
                           "warpgroups)"
                         : "warpgroups per CTA, each 64 rows of the GEMM tile (BM = 64 x warpgroups)",
           specialized() ? int_values({1, 2}) : int_values({1, 2, 4}))
      .add("tile_n", "GEMM columns per CTA (BN; 128 halves the gathers per product, at twice the registers)",
           int_values({64, 128}))
      .add("stages", "shared-memory pipeline depth (A by cp.async, B by bulk copy)", int_values({2, 3, 4}));
  if (pass_ == GemmPass::bwd_filter)
    s.add("waves", "the n*P*Q sum of each tile split over the most CTAs, added in order by a third kernel, that "
                   "fill the SMs this many times over (the split count follows each shape's tile grid)",
          int_values({1, 2, 4}))
        .alternative("splits", "CTAs sharing the sum, as a count (the tunable before waves; older tables' configs)",
                     "waves");
  return s;
}

Status WgmmaGemmVariant::constraints(const LayerShape& l, const Config& c, const DeviceInfo& dev) const {
  if (const Status hopper = wgmma_supported(dev); !hopper) return hopper;
  const std::string math = config_math(c);
  if (math != kMath3xTf32 && math != kMathTf32) return Status::no("math must be 3xtf32 or tf32");
  const int wgs = cfg_int(c, "warpgroups"), stages = cfg_int(c, "stages");
  if (specialized() && wgs != 1 && wgs != 2) return Status::no("warpgroups must be 1 or 2 (MMA warpgroups)");
  if (wgs != 1 && wgs != 2 && wgs != 4) return Status::no("warpgroups must be 1, 2 or 4");
  if (tile_n(c) != 64 && tile_n(c) != 128) return Status::no("tile_n must be 64 or 128");
  // 128 columns: 64 accumulator registers twice; four warpgroups would leave under 128 registers a thread.
  if (tile_n(c) == 128 && wgs == 4) return Status::no("tile_n 128 needs warpgroups 1 or 2 (registers)");
  if (stages < 2 || stages > 4) return Status::no("stages must be 2, 3 or 4");
  if (pass_ == GemmPass::bwd_filter && !specialized()) return Status::no("backward-filter needs the specialized kernel");
  if (const Status split = split_rules(l, c, dev); !split) return split;
  const GemmExtent e = wgmma_extent(pass_, l);
  // The kernel indexes the GEMM rows and the split filter (in floats) with int.
  if (double(e.m) + tile_m(c) > kInt32Limit || double(split_b_bytes(l, c)) / 4 > kInt32Limit)
    return Status::no("GEMM too large for the kernel's 32-bit indices");
  if (double(workspace_bytes(l, c)) > gemm_workspace_bound(dev))
    return Status::no("workspace (the split " + std::string(pass_ == GemmPass::bwd_filter ? "dy" : "filter") +
                      (splits(c) > 1 ? " and the partial sums" : "") + ") " +
                      std::to_string(int64_t(double(workspace_bytes(l, c)) / double(1 << 20))) + " MiB over the bound");
  return Status::yes();
}

// Backward-filter's splits: each must get a k-tile (split z takes k-tiles [z*kt/S, (z+1)*kt/S)), and a count
// named in the config neither too few nor too many for the SMs (split_not_too_few, split_not_too_many); the
// waves rule fills them by itself.
Status WgmmaGemmVariant::split_rules(const LayerShape& l, const Config& c, const DeviceInfo& dev) const {
  if (pass_ != GemmPass::bwd_filter)
    return c.contains("waves") ? Status::no("waves is backward-filter's rule; this pass does not split its sum")
                               : Status::yes();
  const GemmExtent e = wgmma_extent(pass_, l);
  const int64_t k_tiles = ceil_div(e.t, kTileK);
  if (const Status w = waves_allowed(c, tiles(l, c), k_tiles, dev); !w) return w;
  if (!c.contains("splits")) return Status::no("needs waves (a rule) or splits (a count)");
  const int split = splits(c);
  if (split < 1 || split > k_tiles)
    return Status::no("splits " + std::to_string(split) + " > the " + std::to_string(k_tiles) +
                      " k-tiles of 32 in the n*P*Q sum");
  if (c.contains("waves")) return Status::yes();  // the rule fills the SMs
  const Status few = split_not_too_few(tiles(l, c), split, k_tiles, dev);
  return few.ok ? split_not_too_many(tiles(l, c), split, dev) : few;
}

// The CTA tile along the pass's GEMM extents (the family's model quantities gemm_m and gemm_n).
std::vector<std::pair<std::string, int64_t>> WgmmaGemmVariant::model_traits(const Config& c) const {
  if (!c.contains("warpgroups") || !c.contains("tile_n")) return {};
  return {{"gemm_m", tile_m(c)}, {"gemm_n", tile_n(c)}};
}

Cost WgmmaGemmVariant::cost(const Problem& prob, const Config& c) const {
  const LayerShape l(prob);
  const GemmExtent e = wgmma_extent(pass_, l);
  const double m = double(e.m), n = double(e.n), t = double(e.t);
  // bytes_model: the split filter (big + small) read by every m-tile, A (im2col-sized, as gathered) by every
  // n-tile, the output written once (with splits, the partials written and read back first), the split
  // written once: the L2 -> SM traffic, approximately.
  const double n_tiles = double(ceil_div(e.n, tile_n(c))), m_tiles = double(ceil_div(e.m, tile_m(c)));
  const double split = double(split_b_bytes(l, c)), parts = splits(c);
  const double output = parts > 1 ? 2.0 * parts * m * n + m * n : m * n;
  const double bytes = m_tiles * split + 4.0 * (n_tiles * m * t + output) + split;
  return {prob.direct_flops(), 2.0 * m * n * t, operand_bytes(prob), bytes};
}

Tolerance WgmmaGemmVariant::tolerance(const Problem& prob, const Config& c) const {
  return layer_tolerance(gemm_extent(pass_, LayerShape(prob)).t, config_math(c));
}

std::vector<std::string> WgmmaGemmVariant::defines(const LayerShape& l, const Problem& prob, const Config& c) const {
  std::vector<std::string> o = {define("PASS", int(pass_)),
                                define("MATH", config_math(c) == kMath3xTf32 ? 1 : 2),
                                define("WGS", cfg_int(c, "warpgroups")),
                                define("BN", tile_n(c)),
                                define("STAGES", cfg_int(c, "stages")),
                                define("SMEM_BYTES", smem_bytes(l, c))};
  if (pass_ == GemmPass::forward)
    for (std::string& d : epilogue_defines(prob)) o.push_back(std::move(d));
  if (pass_ == GemmPass::bwd_filter) o.push_back(define("SPLITS", splits(c)));
  return o;
}

// The specialized kernel strides over (row tile, split) pairs along x; the other takes a CTA a tile. Forward
// and backward-data launch it persistent (JitLayerPlan); backward-filter's split count already fills the SMs
// (waves), and persistent CTAs measured 1-6% slower there (H200, the ResNet stages).
dim3 WgmmaGemmVariant::gemm_grid(int64_t m_tiles, int64_t n_tiles, int splits) const {
  if (specialized()) return dim3(unsigned(m_tiles * splits), unsigned(n_tiles), 1);
  return dim3(unsigned(m_tiles), unsigned(n_tiles), unsigned(splits));
}

std::vector<LayerLaunch> WgmmaGemmVariant::launches(const LayerShape& l, const Config& c) const {
  const GemmExtent e = wgmma_extent(pass_, l);
  const int64_t n_tiles = ceil_div(e.n, tile_n(c));
  const int64_t split_elements = n_tiles * tile_n(c) * ceil_div(e.t, kTileK) * kTileK;
  std::vector<LayerLaunch> out = {
      {"split_filter_kernel", dim3(unsigned(ceil_div(split_elements, 256))), dim3(256), 0},
      {"wgmma_gemm_kernel", gemm_grid(ceil_div(e.m, tile_m(c)), n_tiles, splits(c)), dim3(unsigned(threads(c))),
       smem_bytes(l, c), true, specialized() && pass_ != GemmPass::bwd_filter}};
  if (splits(c) > 1) out.push_back({"split_sum_kernel", dim3(unsigned(ceil_div(e.m * e.n, 256))), dim3(256), 0});
  return out;
}

// The split filter (or dy), then backward-filter's partial sums when its sum is split.
size_t WgmmaGemmVariant::workspace_bytes(const LayerShape& l, const Config& c) const {
  const GemmExtent e = wgmma_extent(pass_, l);
  const size_t partials = splits(c) > 1 ? size_t(splits(c)) * size_t(e.m) * size_t(e.n) * sizeof(float) : 0;
  return split_b_bytes(l, c) + partials;
}

}  // namespace convtune
