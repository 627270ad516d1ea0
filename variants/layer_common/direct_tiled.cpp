// layer_fwd.direct_tiled: the ConvNets seed's tiled kernel done right (3D grid of image, output-map group
// and output tile; input tile plus halo and the taps in shared memory; a loop over input maps), with
// output-map and output-pixel coarsening per thread, any H and W, any stride.
#include "variants/layer_common/direct_tiled.h"

#include "variants/layer_common/layer_epilogue.h"
#include "variants/layer_fwd/layer_fwd.h"

namespace convtune {

namespace {

int64_t tile_in(int64_t tile, int64_t stride, int64_t taps) { return (tile - 1) * stride + taps; }

// Powers of two, plus the layer's own output-map count when it is a small odd one (3 RGB maps): a block
// of 4 maps for 3 would spend a quarter of its work on a map that does not exist.
std::vector<json> map_counts(int64_t out_maps, int largest) {
  std::vector<json> v;
  for (int m = 1; m <= largest; m *= 2) v.push_back(m);
  if (out_maps < largest && (out_maps & (out_maps - 1)) != 0) v.push_back(out_maps);
  return v;
}

}  // namespace

ParamSpace DirectTiledVariant::space(const Problem& p, const DeviceInfo&) const {
  const int64_t out_maps = correlation(LayerShape(p)).out_maps;
  return ParamSpace()
      .add("tile_w", "output tile width", int_values({16, 32, 64}))
      .add("tile_h", "output tile height", int_values({2, 4, 8, 16, 32}))
      .add("maps", "output maps per block", map_counts(out_maps, 64))
      .add("maps_per_thread", "output maps per thread", map_counts(out_maps, 8))
      .add("pix_per_thread", "consecutive output pixels per thread (a row)", int_values({2, 4, 8, 16}))
      .add("rows_per_thread", "output rows per thread (each input row read feeds them all)", int_values({1, 2, 4}),
           1)
      .add("in_chunk", "input maps staged in shared memory at a time", int_values({1, 4, 8}))
      .add("stages", "chunks in shared memory (2: the next is copied while one is computed)", int_values({1, 2}), 1);
}

Status DirectTiledVariant::constraints(const LayerShape& l, const Config& c, const DeviceInfo& dev) const {
  const Correlation k = correlation(l);
  if (l.r > 16 || l.s > 16) return Status::no("filter larger than 16x16: the kernel unrolls every tap");
  if (cfg_int(c, "maps") % cfg_int(c, "maps_per_thread") != 0) return Status::no("maps_per_thread must divide maps");
  const int maps = cfg_int(c, "maps");
  if ((maps & (maps - 1)) != 0 && maps != k.out_maps)
    return Status::no("maps = " + std::to_string(maps) + " is neither a power of two nor the " +
                      std::to_string(k.out_maps) + " output maps");
  if (cfg_int(c, "maps") / 2 >= k.out_maps)
    return Status::no("maps per block at least twice the " + std::to_string(k.out_maps) + " output maps (half idle)");
  if (cfg_int(c, "tile_w") % cfg_int(c, "pix_per_thread") != 0) return Status::no("pix_per_thread must divide tile_w");
  if (cfg_int(c, "tile_h") % cfg_int(c, "rows_per_thread") != 0) return Status::no("rows_per_thread must divide tile_h");
  if (cfg_int(c, "in_chunk") > k.in_maps && cfg_int(c, "in_chunk") > 1)
    return Status::no("in_chunk larger than the " + std::to_string(k.in_maps) + " input maps");
  if (cfg_int(c, "stages") > 1 && dev.cc_major < 8)  // below sm_80 staging is a plain load: no overlap
    return Status::no("stages = 2 overlaps copies with cp.async: compute capability 8.0 or later");
  if (cfg_int(c, "stages") > 1 && cfg_int(c, "in_chunk") >= k.in_maps)
    return Status::no("stages = 2 with one chunk of the " + std::to_string(k.in_maps) + " input maps: nothing to overlap");
  const int64_t threads = cfg_int(c, "tile_w") / cfg_int(c, "pix_per_thread") *
                          (cfg_int(c, "tile_h") / cfg_int(c, "rows_per_thread")) *
                          (cfg_int(c, "maps") / cfg_int(c, "maps_per_thread"));
  if (threads < 32) return Status::no(std::to_string(threads) + " threads per block: less than a warp");
  const int64_t window = (cfg_int(c, "pix_per_thread") - 1) * k.stride_w + l.s;
  if (cfg_int(c, "maps_per_thread") * cfg_int(c, "pix_per_thread") * cfg_int(c, "rows_per_thread") + window > 96)
    return Status::no("more than 96 accumulators and window registers per thread");
  return Status::yes();
}

std::vector<std::string> DirectTiledVariant::defines(const LayerShape& l, const Problem& p, const Config& c) const {
  const Correlation k = correlation(l);
  std::vector<std::string> d = {define("OUT_MAPS", k.out_maps), define("IN_MAPS", k.in_maps),
                                define("IN_H", k.in_h),         define("IN_W", k.in_w),
                                define("OUT_H", k.out_h),       define("OUT_W", k.out_w),
                                define("STRIDE_H", k.stride_h), define("STRIDE_W", k.stride_w),
                                define("DIL_H", k.dil_h),       define("DIL_W", k.dil_w),
                                define("PAD_TOP", k.pad_top),   define("PAD_LEFT", k.pad_left),
                                define("FLIP_SWAP", k.flip_swap),
                                define("TILE_W", cfg_int(c, "tile_w")),
                                define("TILE_H", cfg_int(c, "tile_h")),
                                define("MAPS", cfg_int(c, "maps")),
                                define("MAPS_PER_THREAD", cfg_int(c, "maps_per_thread")),
                                define("PIX_PER_THREAD", cfg_int(c, "pix_per_thread")),
                                define("ROWS_PER_THREAD", cfg_int(c, "rows_per_thread")),
                                define("IN_CHUNK", cfg_int(c, "in_chunk")),
                                define("STAGES", cfg_int(c, "stages"))};
  for (std::string& e : epilogue_defines(p)) d.push_back(std::move(e));  // BIAS 0, ACT 0 for backward-data
  return d;
}

std::vector<LayerLaunch> DirectTiledVariant::launches(const LayerShape& l, const Config& c) const {
  const Correlation k = correlation(l);
  const int64_t tw = cfg_int(c, "tile_w"), th = cfg_int(c, "tile_h"), maps = cfg_int(c, "maps");
  const int64_t chunk = cfg_int(c, "in_chunk");
  const int64_t tiles = ceil_div(k.out_w, tw) * ceil_div(k.out_h, th);
  // As the kernel lays it out: a thread's taps padded to 4 floats where it has 3 to 7 maps, all taps to 4
  // floats, tile rows padded to an odd number of float4s where the window is read as float4s, each stage
  // (taps, then tile) to 4 floats, and 4 floats after the last stage as a margin.
  const bool vec_window = k.stride_w == 1 && cfg_int(c, "pix_per_thread") % 4 == 0;
  const int64_t row = vec_window ? 4 * (ceil_div(tile_in(tw, k.stride_w, l.s), 4) | 1) : tile_in(tw, k.stride_w, l.s);
  const int64_t per_thread = cfg_int(c, "maps_per_thread");
  const int64_t tap_stride = maps / per_thread * (per_thread > 2 ? 4 * ceil_div(per_thread, 4) : per_thread);
  const int64_t stage = 4 * ceil_div(chunk * l.r * l.s * tap_stride, 4) +
                        4 * ceil_div(chunk * tile_in(th, k.stride_h, l.r) * row, 4);
  const int64_t smem = 4 * (cfg_int(c, "stages") * stage + 4);
  return {{"layer_direct_tiled_kernel",
           dim3(unsigned(tiles), unsigned(ceil_div(k.out_maps, maps)), unsigned(l.n)),
           dim3(unsigned(tw / cfg_int(c, "pix_per_thread")), unsigned(th / cfg_int(c, "rows_per_thread")),
                unsigned(maps / cfg_int(c, "maps_per_thread"))),
           int(smem)}};
}

// Per block and input map: the input tile with its halo and the group's taps, from L2; the output once.
Cost DirectTiledVariant::cost(const Problem& p, const Config& c) const {
  const LayerShape l(p);
  const Correlation k = correlation(l);
  const int64_t tw = cfg_int(c, "tile_w"), th = cfg_int(c, "tile_h"), maps = cfg_int(c, "maps");
  const double blocks = double(ceil_div(k.out_w, tw) * ceil_div(k.out_h, th) * ceil_div(k.out_maps, maps) * l.n);
  const double per_block = double(k.in_maps) * double(tile_in(th, k.stride_h, l.r) * tile_in(tw, k.stride_w, l.s) + l.r * l.s * maps);
  const double out = double(k.out_maps * k.out_h * k.out_w * l.n);
  // Backward-data also multiplies the zeros between dilated dy pixels: about u*v times the direct count.
  const double own_flops = 2.0 * out * double(k.in_maps * l.r * l.s);
  return {p.direct_flops(), own_flops, operand_bytes(p), 4.0 * (blocks * per_block + out)};
}

}  // namespace convtune
