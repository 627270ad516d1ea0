#include "variants/layer_common/implicit_gemm.h"

#include <algorithm>

#include "variants/layer_common/layer_epilogue.h"
#include "variants/layer_fwd/layer_fwd.h"

namespace convtune {
namespace {

std::string pass_name(GemmPass pass) {
  switch (pass) {
    case GemmPass::forward: return "forward";
    case GemmPass::bwd_data: return "backward-data";
    default: return "backward-filter";
  }
}

int64_t k_tiles(GemmPass pass, const LayerShape& l, const GemmTile& tile) {
  return ceil_div(gemm_extent(pass, l).t, tile.bk);
}

int smem_bytes(const GemmTile& tile, int stages) {
  return 4 * stages * tile.bk * ((tile.bm + 8) + (tile.bn + 8));  // the kernel's padded k-major tiles
}

}  // namespace

GemmExtent gemm_extent(GemmPass pass, const LayerShape& l) {
  const GemmShape s(l);
  switch (pass) {
    case GemmPass::forward:
      return {igemm::FwdGemm::m_size(s), igemm::FwdGemm::n_size(s), igemm::FwdGemm::t_size(s)};
    case GemmPass::bwd_data:
      return {igemm::BwdDataGemm::m_size(s), igemm::BwdDataGemm::n_size(s), igemm::BwdDataGemm::t_size(s)};
    default:
      return {igemm::BwdFilterGemm::m_size(s), igemm::BwdFilterGemm::n_size(s), igemm::BwdFilterGemm::t_size(s)};
  }
}

// SIMT tiles: 256 threads of 8x8, 8x4 or 4x4 outputs. Tensor-core tiles: warp tiles of 64x32 or 32x32
// (4x4 or 2x4 mma tiles), BK = 16 (two mma k-steps per shared tile); 128x64x16w8 is 128x64x16 with 8 warps
// of 32x32 (more warps to hide the mma latency, at 122 registers instead of 168).
const std::vector<GemmTile>& gemm_tiles() {
  static const std::vector<GemmTile> tiles = {
      {"128x128x8", 128, 128, 8, false, 8, 8, 0, 0},   {"128x64x8", 128, 64, 8, false, 8, 4, 0, 0},
      {"64x64x8", 64, 64, 8, false, 4, 4, 0, 0},       {"128x128x16", 128, 128, 16, true, 0, 0, 2, 4},
      {"256x64x16", 256, 64, 16, true, 0, 0, 4, 2},    {"128x64x16", 128, 64, 16, true, 0, 0, 2, 2},
      {"64x64x16", 64, 64, 16, true, 0, 0, 2, 2},      {"128x64x16w8", 128, 64, 16, true, 0, 0, 4, 2},
  };
  return tiles;
}

const GemmTile* find_gemm_tile(const std::string& name) {
  for (const GemmTile& t : gemm_tiles())
    if (t.name == name) return &t;
  return nullptr;
}

std::string ImplicitGemmVariant::summary() const {
  return "implicit GEMM of the " + pass_name(pass_) +
         " pass (operands gathered on the fly into cp.async-pipelined shared tiles); fp32 SIMT, 3xTF32 or "
         "TF32 mma.sync; the t sum optionally split over CTAs, reduced in order";
}

Status split_not_too_few(int64_t tiles, int split, int64_t k_tiles, const DeviceInfo& dev) {
  if (dev.sms > 0 && 4 * tiles * split < dev.sms && 4 * int64_t(split) <= k_tiles)
    return Status::no("splits " + std::to_string(split) + " x " + std::to_string(tiles) + " tiles fill under a quarter of the " +
                      std::to_string(dev.sms) + " SMs, and splits " + std::to_string(4 * split) + " is allowed");
  return Status::yes();
}

Status split_not_too_many(int64_t tiles, int split, const DeviceInfo& dev) {
  if (split > 1 && dev.sms > 0 && tiles * (split / 2) >= 2 * int64_t(dev.sms))
    return Status::no("splits " + std::to_string(split) + ": " + std::to_string(tiles) + " tiles x " +
                      std::to_string(split / 2) + " already fill the " + std::to_string(dev.sms) + " SMs twice");
  return Status::yes();
}

int splits_for_waves(int waves, int64_t tiles, int64_t k_tiles, const DeviceInfo& dev) {
  const int64_t wanted = dev.sms > 0 ? int64_t(waves) * dev.sms / std::max<int64_t>(tiles, 1) : waves;
  return int(std::clamp<int64_t>(wanted, 1, std::max<int64_t>(k_tiles, 1)));
}

bool derives_splits(const Config& c) {
  if (!c.is_object() || c.contains("splits") || !c.contains("waves")) return false;
  const json& w = c.at("waves");
  return w.is_number_integer() && w.get<int64_t>() >= 1 && w.get<int64_t>() <= 1024;
}

Status waves_allowed(const Config& c, int64_t tiles, int64_t k_tiles, const DeviceInfo& dev) {
  if (!c.contains("waves")) return Status::yes();
  const json& w = c.at("waves");
  if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > 1024)
    return Status::no("waves " + w.dump() + "; allowed: an integer from 1 to 1024");
  const int given = splits_for_waves(w.get<int>(), tiles, k_tiles, dev);
  if (c.contains("splits") && c.at("splits") != given)
    return Status::no("splits " + c.at("splits").dump() + " beside waves " + w.dump() + ", which gives splits " +
                      std::to_string(given) + " here; name one of them");
  return Status::yes();
}

ParamSpace ImplicitGemmVariant::space(const Problem&, const DeviceInfo&) const {
  std::vector<json> tiles;
  for (const GemmTile& t : gemm_tiles())
    // backward-filter's m is K (usually <= 128): the 256- and 128-wide n tiles pay little there, and its
    // split sum already gives the GPU many CTAs (no 8-warp tensor-core tile).
    if (pass_ != GemmPass::bwd_filter || (t.bm <= 128 && t.bn == 64 && (!t.tensor_cores || t.threads() <= 128)))
      tiles.push_back(t.name);
  ParamSpace s;
  s.add("math", "fp32 FMA, 3xTF32 or TF32 tensor cores (tf32 only with precision = 1)",
        {kMathFp32, kMath3xTf32, kMathTf32})
      .add("tile", "CTA tile BMxBNxBK (BK 8: fp32 SIMT tiles; BK 16: tensor-core tiles)", tiles)
      .add("stages", "shared-memory pipeline depth (cp.async ring)", int_values({2, 3}));
  if (pass_ == GemmPass::bwd_filter)
    s.add("waves", "the n*P*Q sum of each tile split over the most CTAs, summed in order by a second kernel, that "
                   "fill the SMs this many times over (the split count follows each shape's tile grid)",
          int_values({1, 2, 4, 8}))
        .alternative("splits", "CTAs sharing the sum, as a count (the tunable before waves; older tables' configs)",
                     "waves");
  else
    s.add("splits", "CTAs sharing the t sum of each tile, summed in order by a second kernel (small images, "
                    "whose GEMM has too few tiles to fill the GPU)", int_values({1, 2, 4}), 1);
  return s;
}

Config ImplicitGemmVariant::resolve(const Problem& p, const Config& c, const DeviceInfo& dev) const {
  if (pass_ != GemmPass::bwd_filter || !derives_splits(c) || !c.contains("tile") || !c.at("tile").is_string())
    return c;
  const GemmTile* tile = find_gemm_tile(c.at("tile").get<std::string>());
  if (!tile) return c;
  const LayerShape l(p);
  const GemmExtent e = gemm_extent(pass_, l);
  Config out = c;
  out["splits"] = splits_for_waves(cfg_int(c, "waves"), ceil_div(e.m, tile->bm) * ceil_div(e.n, tile->bn),
                                   k_tiles(pass_, l, *tile), dev);
  return out;
}

Status ImplicitGemmVariant::constraints(const LayerShape& l, const Config& c, const DeviceInfo& dev) const {
  const std::string math = config_math(c);
  const GemmTile* tile = find_gemm_tile(c.at("tile").get<std::string>());
  if (!tile) return Status::no("unknown tile '" + c.at("tile").get<std::string>() + "'");
  if (tile->tensor_cores != (math != kMathFp32))
    return Status::no("tile " + tile->name + (tile->tensor_cores ? " is a tensor-core tile; math fp32 needs a SIMT tile"
                                                                 : " is an fp32 SIMT tile; math " + math +
                                                                       " needs a tensor-core tile"));
  const int stages = cfg_int(c, "stages");
  if (stages < 1 || stages > 3) return Status::no("stages must be 1, 2 or 3");
  const GemmExtent e = gemm_extent(pass_, l);
  const int64_t tiles = ceil_div(e.m, tile->bm) * ceil_div(e.n, tile->bn);
  if (pass_ != GemmPass::bwd_filter && c.contains("waves"))
    return Status::no("waves is backward-filter's rule; this pass takes splits (a count)");
  if (const Status w = waves_allowed(c, tiles, k_tiles(pass_, l, *tile), dev); !w) return w;
  if (!c.contains("splits")) return Status::no("needs splits (a count) or, backward-filter, waves (a rule)");
  const int split = splits(c);
  if (split < 1) return Status::no("splits must be >= 1");
  if (split > k_tiles(pass_, l, *tile))
    return Status::no("splits " + std::to_string(split) + " > the " + std::to_string(k_tiles(pass_, l, *tile)) +
                      " k-tiles of the n*P*Q sum (tile BK " + std::to_string(tile->bk) + ")");
  // Backward-filter's long sums: too few splits idle the GPU (splits 1 and 4 of the 9-tile ResNet dw);
  // forward and backward-data split only while it adds occupancy. Waves fill the SMs by their rule.
  const Status fill = c.contains("waves")             ? Status::yes()
                      : pass_ == GemmPass::bwd_filter ? split_not_too_few(tiles, split, k_tiles(pass_, l, *tile), dev)
                                                      : split_not_too_many(tiles, split, dev);
  if (!fill.ok) return fill;
  if (double(e.m) + tile->bm > kInt32Limit || double(e.n) + tile->bn > kInt32Limit ||
      double(split) * double(e.m) * double(e.n) > kInt32Limit)
    return Status::no("GEMM too large for the kernel's 32-bit indices");
  return Status::yes();
}

// The CTA tile along the pass's GEMM extents (the family's model quantities gemm_m and gemm_n).
std::vector<std::pair<std::string, int64_t>> ImplicitGemmVariant::model_traits(const Config& c) const {
  const GemmTile* tile = c.contains("tile") && c["tile"].is_string() ? find_gemm_tile(c["tile"].get<std::string>()) : nullptr;
  if (!tile) return {};
  return {{"gemm_m", tile->bm}, {"gemm_n", tile->bn}};
}

Cost ImplicitGemmVariant::cost(const Problem& prob, const Config& c) const {
  const LayerShape l(prob);
  const GemmExtent e = gemm_extent(pass_, l);
  const GemmTile& tile = *find_gemm_tile(c.at("tile").get<std::string>());
  const double m = double(e.m), n = double(e.n), t = double(e.t);
  // flops_variant: the GEMM's 2*m*n*t (backward-data with strides multiplies the zeros of the stride
  // gaps too); 3xTF32's three products per term are not counted. bytes_model: B re-read by every m-tile,
  // A (as gathered, im2col-sized) by every n-tile, the output written once, or with splits the partials
  // written and read back before the output: an approximation of the L2 -> SM traffic.
  const double split = splits(c);
  const double output = split > 1 ? 2.0 * split * m * n + m * n : m * n;
  const double bytes = 4.0 * (double(ceil_div(e.m, tile.bm)) * n * t + double(ceil_div(e.n, tile.bn)) * m * t +
                              output);
  return {prob.direct_flops(), 2.0 * m * n * t, operand_bytes(prob), bytes};
}

Tolerance ImplicitGemmVariant::tolerance(const Problem& prob, const Config& c) const {
  return layer_tolerance(gemm_extent(pass_, LayerShape(prob)).t, c.at("math").get<std::string>());
}

std::vector<std::string> ImplicitGemmVariant::defines(const LayerShape&, const Problem& prob, const Config& c) const {
  const GemmTile& tile = *find_gemm_tile(c.at("tile").get<std::string>());
  const std::string math = c.at("math").get<std::string>();
  std::vector<std::string> o;
  const int math_code = math == kMathFp32 ? 0 : math == kMath3xTf32 ? 1 : 2;
  o.push_back(define("PASS", int(pass_)));
  o.push_back(define("MATH", math_code));
  o.push_back(define("BM", tile.bm));
  o.push_back(define("BN", tile.bn));
  o.push_back(define("BK", tile.bk));
  o.push_back(define("STAGES", cfg_int(c, "stages")));
  if (tile.tensor_cores) {
    o.push_back(define("WARPS_M", tile.warps_m));
    o.push_back(define("WARPS_N", tile.warps_n));
  } else {
    o.push_back(define("TM", tile.tm));
    o.push_back(define("TN", tile.tn));
  }
  if (pass_ == GemmPass::forward)
    for (std::string& d : epilogue_defines(prob)) o.push_back(std::move(d));
  o.push_back(define("SPLITS", splits(c)));
  return o;
}

std::vector<LayerLaunch> ImplicitGemmVariant::launches(const LayerShape& l, const Config& c) const {
  const GemmExtent e = gemm_extent(pass_, l);
  const GemmTile& tile = *find_gemm_tile(c.at("tile").get<std::string>());
  const int split = splits(c);
  std::vector<LayerLaunch> out;
  out.push_back({"implicit_gemm_kernel",
                 dim3(unsigned(ceil_div(e.m, tile.bm)), unsigned(ceil_div(e.n, tile.bn)), unsigned(split)),
                 dim3(unsigned(tile.threads())), smem_bytes(tile, cfg_int(c, "stages"))});
  if (split > 1) out.push_back({"split_reduce_kernel", dim3(unsigned(ceil_div(e.m * e.n, 256))), dim3(256), 0});
  return out;
}

size_t ImplicitGemmVariant::workspace_bytes(const LayerShape& l, const Config& c) const {
  const GemmExtent e = gemm_extent(pass_, l);
  return splits(c) > 1 ? size_t(splits(c)) * size_t(e.m) * size_t(e.n) * sizeof(float) : 0;
}

}  // namespace convtune
