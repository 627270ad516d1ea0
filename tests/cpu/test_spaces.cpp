// The tuning spaces, dimension ranges and variant refusals as designed, pinned value by value. A space's
// values are design decisions (the variant's comment or DESIGN.md says why each is there: powers of two of
// threads, odd window widths for conflict-free banks, the 2,3,5,7-smooth FFT sizes...); changing one is a
// decision to make on purpose, with this test updated alongside. The refusals are pinned whole at their
// limits: the last value accepted, the first refused. Expected values are written out from the rules.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "harness/family.h"
#include "harness/perf_model.h"
#include "harness/variant.h"
#include "test_support.h"
#include "variants/conv1d_parts/parts_common.h"
#include "variants/layer_common/implicit_gemm.h"
#include "variants/layer_common/layer_variant.h"

namespace convtune {
namespace {

// "name: v1, v2 | name2: ..." with " (absent: x)" where a config may leave the parameter out.
std::string space_text(const Variant& v, const Problem& p) {
  const ParamSpace space = v.space(p, DeviceInfo::offline_sm90());  // kept: params() refers into it
  std::string out;
  for (const Param& param : space.params()) {
    out += (out.empty() ? "" : " | ") + param.name + ":";
    for (size_t i = 0; i < param.values.size(); ++i)
      out += (i ? ", " : " ") + (param.values[i].is_string() ? param.values[i].get<std::string>() : param.values[i].dump());
    if (!param.absent.is_null()) out += " (absent: " + param.absent.dump() + ")";
  }
  return out;
}

struct Designed {
  const char* variant;
  int complexity;
  const char* space;
};

void expect_designed(const std::vector<Designed>& table) {
  for (const Designed& d : table) {
    const Variant& v = Registry::instance().get(d.variant);
    const Problem p = find_family(v.family()).example();
    EXPECT_EQ(space_text(v, p), d.space) << d.variant;
    EXPECT_EQ(v.complexity(), d.complexity) << d.variant;
    EXPECT_FALSE(v.library()) << d.variant;
  }
}

// ---- spaces -------------------------------------------------------------------------------------------------

// The seeds' five strategies and register tiling (variants/conv2d/direct.cpp): blocks of 16 to 128 threads a
// row; tiles whose input (with a halo of up to 2r = 32) still fits 1024 threads; complexity rising with the
// machinery each adds (selection prefers the simpler of two within noise).
TEST(SpacesAsDesigned, Conv2dDirectVariants) {
  expect_designed({
      {"conv2d.naive", 0, "block_x: 16, 32, 64, 128 | block_y: 1, 2, 4, 8, 16"},
      {"conv2d.constant", 1, "block_x: 16, 32, 64, 128 | block_y: 1, 2, 4, 8, 16"},
      {"conv2d.coarsened", 2, "block_x: 32, 64, 128 | block_y: 1, 2, 4, 8 | coarsen: 2, 4, 8 | direction: x, y"},
      {"conv2d.tiled_in", 3, "out_x: 4, 8, 16, 24, 28 | out_y: 4, 8, 16, 24, 28"},
      {"conv2d.tiled_halo_l2", 3, "tile_x: 16, 32, 64 | tile_y: 4, 8, 16, 32"},
      {"conv2d.register_tiled", 4,
       "block_x: 16, 32, 64 | block_y: 2, 4, 8, 16 | px: 1, 2, 4 | py: 1, 2, 4, 8 | order: input_rows, filter_rows"},
  });
}

// conv1d's spatial variants (variants/conv1d/spatial.cpp, window.cpp): the tiled kernels' outputs 32 apart in
// 32-tap register rows; the window's odd widths (a warp's reads hit 32 banks); staging added after tables
// were shipped, so a config without it means registers.
TEST(SpacesAsDesigned, Conv1dSpatialVariants) {
  expect_designed({
      {"conv1d.direct", 1, "threads: 128, 256, 512 | outputs_per_thread: 1, 2, 4, 8 | filter: constant, global"},
      {"conv1d.overlap_discard", 3, "threads: 128, 256 | outputs_per_thread: 4, 8, 16 | tap_group: 4, 8"},
      {"conv1d.overlap_add", 4,
       "threads: 128, 256 | outputs_per_thread: 4, 8, 16 | tap_group: 4, 8 | schedule: k2, k3, k4, atomic"},
      {"conv1d.window", 3,
       "threads: 128, 256 | outputs_per_thread: 7, 11, 15, 23, 31 | staging: registers, async (absent: \"registers\")"},
  });
}

// The implicit GEMM of the forward and backward-data passes (variants/layer_common/implicit_gemm.cpp): the
// SIMT tiles of 256 threads and the tensor-core tiles of gemm_tiles(), a 2- or 3-stage cp.async ring, and a
// split of the t sum for small images (added later: a config without it is unsplit).
TEST(SpacesAsDesigned, ForwardAndBackwardDataImplicitGemm) {
  const std::string space =
      "math: fp32, 3xtf32, tf32 | tile: 128x128x8, 128x64x8, 64x64x8, 128x128x16, 256x64x16, 128x64x16, 64x64x16, "
      "128x64x16w8 | stages: 2, 3 | splits: 1, 2, 4 (absent: 1)";
  expect_designed({{"layer_fwd.implicit_gemm", 4, space.c_str()}, {"layer_bwd_data.implicit_gemm", 4, space.c_str()}});
}

// ---- the families' dimensions -------------------------------------------------------------------------------

std::string dims_text(const std::string& family) {
  std::string out;
  for (const DimSpec& d : find_family(family).dims()) {
    out += (out.empty() ? "" : ", ") + d.name + " " + std::to_string(d.min) + ".." + std::to_string(d.max);
    if (d.has_default) out += " =" + std::to_string(d.default_value) + (d.keyed_at_default ? "" : " unkeyed");
  }
  return out;
}

// Images up to 2^16 a side, radii to 32; conv1d's signals to 2^28 (filters to 2^20), slices of them to 2^29;
// layers of up to 2^16 per dim, filters and windows to 64, padding below them; the batch of conv2d added
// after tables were shipped (unkeyed at 1, so older keys stay).
TEST(FamilyDims, EachFamilysDimensionsRangesAndDefaults) {
  EXPECT_EQ(dims_text("conv2d"), "h 1..65536, w 1..65536, r 0..32, b 1..65535 =1 unkeyed");
  EXPECT_EQ(dims_text("conv2d_separable"), "h 1..65536, w 1..65536, r 0..32");
  EXPECT_EQ(dims_text("conv1d"), "n 1..268435456, m 1..1048576, mode 0..1 =1");
  EXPECT_EQ(dims_text("conv1d_parts"), "n 1..268435456, m 1..268435456, start 0..536870912, end 1..536870912");
  const std::string shape = "n 1..65536, c 1..65536, h 1..65536, w 1..65536, k 1..65536, r 1..64, s 1..64, "
                            "pad_h 0..63 =0, pad_w 0..63 =0, u 1..64 =1, v 1..64 =1";
  EXPECT_EQ(dims_text("layer_fwd"), shape + ", bias 0..1 =0, relu 0..3 =0, precision 0..1 =0");
  EXPECT_EQ(dims_text("layer_bwd_data"), shape + ", precision 0..1 =0");
  EXPECT_EQ(dims_text("layer_bwd_filter"), shape + ", precision 0..1 =0");
  EXPECT_EQ(dims_text("layer_pool"), "n 1..65536, c 1..65536, h 1..65536, w 1..65536, r 1..64, s 1..64, pad_h 0..63 =0, "
                                     "pad_w 0..63 =0, u 1..64, v 1..64, op 0..2 =0");
}

std::string operands_text(const Problem& p) {
  std::string out;
  for (const Operand& o : p.operands()) out += (out.empty() ? "" : ", ") + o.name + " " + std::to_string(o.elements);
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

// Each family's operands in order (inputs, then the output), its direct flop count (2 per input-tap pair;
// pooling 1 per window element) and the dims a dispatch entry must match, on shapes worked by hand.
TEST(FamilyDims, OperandsFlopsAndConstraintDimsOfEachFamily) {
  auto validated = [](Problem p) {
    validate(p, "p");
    return p;
  };
  const Problem c2 = validated({"conv2d", {{"h", 3}, {"w", 5}, {"r", 1}, {"b", 2}}});
  EXPECT_EQ(operands_text(c2), "image 30, filter 9, output 30");
  EXPECT_DOUBLE_EQ(c2.direct_flops(), 2.0 * 9 * 30);
  const Problem sep = validated({"conv2d_separable", {{"h", 3}, {"w", 5}, {"r", 2}}});
  EXPECT_EQ(operands_text(sep), "image 15, column_filter 5, row_filter 5, output 15");
  EXPECT_DOUBLE_EQ(sep.direct_flops(), 2.0 * 2 * 5 * 15);
  EXPECT_EQ(operands_text(validated({"conv1d", {{"n", 10}, {"m", 3}, {"mode", 0}}})), "signal 10, filter 3, output 8");
  EXPECT_EQ(operands_text(validated({"conv1d", {{"n", 10}, {"m", 3}, {"mode", 1}}})), "signal 10, filter 3, output 12");
  EXPECT_EQ(operands_text(validated({"conv1d_parts", {{"n", 5}, {"m", 3}, {"start", 1}, {"end", 5}}})), "a 5, b 3, output 4");
  // The layers: n 2, c 3, 8 x 9, k 5, 3 x 2 filter, pad 1 / 0, stride 2 / 1: P 4, Q 8.
  const std::map<std::string, int64_t> shape = {{"n", 2}, {"c", 3}, {"h", 8},     {"w", 9},     {"k", 5},
                                                {"r", 3}, {"s", 2}, {"pad_h", 1}, {"pad_w", 0}, {"u", 2}, {"v", 1}};
  const Problem fwd = validated({"layer_fwd", shape});
  EXPECT_EQ(operands_text(fwd), "x 432, filter 90, y 320");
  Problem biased = fwd;
  biased.dims["bias"] = 1;
  EXPECT_EQ(operands_text(biased), "x 432, filter 90, bias 5, y 320");
  EXPECT_DOUBLE_EQ(fwd.direct_flops(), 2.0 * 320 * 18);
  EXPECT_EQ(operands_text(validated({"layer_bwd_data", shape})), "dy 320, filter 90, dx 432");
  EXPECT_EQ(operands_text(validated({"layer_bwd_filter", shape})), "x 432, dy 320, dw 90");
  EXPECT_DOUBLE_EQ(validated({"layer_bwd_filter", shape}).direct_flops(), 2.0 * 320 * 18);
  std::map<std::string, int64_t> window = shape;
  window.erase("k");
  const Problem pool = validated({"layer_pool", window});
  EXPECT_EQ(operands_text(pool), "x 432, y 192");
  EXPECT_DOUBLE_EQ(pool.direct_flops(), 192.0 * 6);

  EXPECT_EQ(joined(find_family("conv2d").constraint_dims()), "r");
  EXPECT_EQ(joined(find_family("conv2d_separable").constraint_dims()), "r");
  EXPECT_EQ(joined(find_family("conv1d").constraint_dims()), "m mode");
  EXPECT_EQ(joined(find_family("conv1d_parts").constraint_dims()), "");
  EXPECT_EQ(joined(find_family("layer_fwd").constraint_dims()), "r s u v pad_h pad_w bias relu precision");
  EXPECT_EQ(joined(find_family("layer_bwd_data").constraint_dims()), "r s u v pad_h pad_w precision");
  EXPECT_EQ(joined(find_family("layer_bwd_filter").constraint_dims()), "r s u v pad_h pad_w precision");
  EXPECT_EQ(joined(find_family("layer_pool").constraint_dims()), "r s u v pad_h pad_w op");
  for (const char* f : {"layer_fwd", "layer_bwd_data", "layer_bwd_filter"}) EXPECT_EQ(joined(find_family(f).required_dims()), "precision");
  for (const char* f : {"conv2d", "conv2d_separable", "conv1d", "conv1d_parts", "layer_pool"})
    EXPECT_EQ(joined(find_family(f).required_dims()), "") << f;
}

// ---- conv1d_parts' block lengths (parts_common.cpp) ---------------------------------------------------------

TEST(PartsBlocks, BlockLengthsArePowersOfTwoUpToTheFirstThatCoversTheSequence) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(parts::block_lengths(64, 4096, 100000), (V{64, 128, 256, 512, 1024, 2048, 4096}));
  EXPECT_EQ(parts::block_lengths(64, 4096, 300), (V{64, 128, 256, 512}));
  EXPECT_EQ(parts::block_lengths(64, 4096, 256), (V{64, 128, 256}));  // 256 covers all 256: the last
  EXPECT_EQ(parts::block_lengths(64, 4096, 257), (V{64, 128, 256, 512}));
  EXPECT_EQ(parts::block_lengths(64, 4096, 1), (V{64}));
  EXPECT_EQ(parts::block_lengths(64, 64, 100000), (V{64}));
}

TEST(PartsBlocks, ABlockLengthOutsideTheDesignIsNamedWithWhy) {
  EXPECT_EQ(parts::block_length_problem("l_a", 32, 64, 4096, 1000), "l_a=32 is outside [64, 4096]");
  EXPECT_EQ(parts::block_length_problem("l_b", 8192, 64, 4096, 100000), "l_b=8192 is outside [64, 4096]");
  EXPECT_EQ(parts::block_length_problem("l_a", 96, 64, 4096, 1000), "l_a=96 is not a power of two");
  EXPECT_EQ(parts::block_length_problem("l_a", 1024, 64, 4096, 300),
            "l_a=1024 is longer than needed: a block of 512 already covers all 300 samples");
  EXPECT_EQ(parts::block_length_problem("l_a", 512, 64, 4096, 300), "");   // 256 does not cover 300
  EXPECT_EQ(parts::block_length_problem("l_a", 512, 64, 4096, 256),
            "l_a=512 is longer than needed: a block of 256 already covers all 256 samples");
  // The shortest block is always fine, and covers a short sequence: the next is padding only.
  EXPECT_EQ(parts::block_length_problem("l_b", 64, 64, 4096, 10), "");
  EXPECT_EQ(parts::block_length_problem("l_b", 128, 64, 4096, 10),
            "l_b=128 is longer than needed: a block of 64 already covers all 10 samples");
  EXPECT_EQ(parts::block_length_problem("l_b", 4096, 64, 4096, 100000), "");
}

TEST(PartsBlocks, FftLengthsAndTheirFlops) {
  EXPECT_EQ(parts::fft_length("pow2", 1000), 1024);
  EXPECT_EQ(parts::fft_length("pow2", 1024), 1024);
  EXPECT_EQ(parts::fft_length("smooth", 1000), 1000);  // 2^3 5^3
  EXPECT_EQ(parts::fft_length("smooth", 1001), 1008);  // 1001 = 7 11 13, ..., 1008 = 2^4 3^2 7
  EXPECT_EQ(parts::fft_length("smooth", 121), 125);    // 11^2, 2 61, 3 41, 4 31, 5^3
  EXPECT_EQ(parts::fft_length("smooth", 1013), 1024);  // no 7-smooth integer in 1013..1023
  EXPECT_EQ(parts::fft_length("pow2", 1001), 1024);
  EXPECT_DOUBLE_EQ(parts::real_fft_flops(1024), 2.5 * 1024 * 10);
  EXPECT_DOUBLE_EQ(parts::real_fft_flops(8), 2.5 * 8 * 3);
}

// ---- refusals of the conv2d and conv1d kernels, whole, at their limits -----------------------------------------

std::string refusal(const char* variant, const Problem& p, const Config& c, const DeviceInfo& dev) {
  const Status s = Registry::instance().get(variant).can_implement(p, c, dev);
  return s.ok ? "yes" : s.reason;
}

const Config kBlock16 = {{"block_x", 16}, {"block_y", 1}};

// variants/conv2d/jit_conv2d.cpp: the radius the kernels unroll, the device's threads per block, grid.y's
// 65535 blocks, and shared memory against the opt-in limit for dynamic memory, the plain one for static.
TEST(Conv2dRefusals, KernelLimitsAreNamedWithTheValueAndTheLimit) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  EXPECT_EQ(refusal("conv2d.naive", find_family("conv1d").example(), kBlock16, dev), "not a conv2d problem");
  EXPECT_EQ(refusal("conv2d.naive", test::conv2d(64, 64, 16), kBlock16, dev), "yes");
  EXPECT_EQ(refusal("conv2d.naive", test::conv2d(64, 64, 17), kBlock16, dev),
            "radius 17 > 16 (kernels unroll the filter fully)");
  EXPECT_EQ(refusal("conv2d.naive", test::conv2d(64, 64, 1), {{"block_x", 64}, {"block_y", 16}}, dev), "yes");
  EXPECT_EQ(refusal("conv2d.naive", test::conv2d(64, 64, 1), {{"block_x", 128}, {"block_y", 16}}, dev),
            "block of 2048 threads > device limit 1024");
  // tiled_in's block is its input tile: 28 + 2r a side, 32 x 32 at r = 2, 34 x 34 at r = 3.
  EXPECT_EQ(refusal("conv2d.tiled_in", test::conv2d(64, 64, 2), {{"out_x", 28}, {"out_y", 28}}, dev), "yes");
  EXPECT_EQ(refusal("conv2d.tiled_in", test::conv2d(64, 64, 3), {{"out_x", 28}, {"out_y", 28}}, dev),
            "block of 1156 threads > device limit 1024");
  EXPECT_EQ(refusal("conv2d.naive", test::conv2d(65535, 1, 1), kBlock16, dev), "yes");
  EXPECT_EQ(refusal("conv2d.naive", test::conv2d(65536, 1, 1), kBlock16, dev), "grid.y of 65536 blocks > 65535");
  // register_tiled 64 x 16 threads of 8 x 4 at r = 16: in_y = 16 * 8 + 32 = 160 rows; the window of px = 4
  // rounds 4 + 32 up to 36, the pitch (256 - 4 + 36) up to a multiple of 4, 288: 4 * 160 * 288 = 184320 B.
  const Config big = {{"block_x", 64}, {"block_y", 16}, {"px", 4}, {"py", 8}, {"order", "input_rows"}};
  DeviceInfo tight = dev;
  tight.max_smem_per_block_optin = 184320;
  EXPECT_EQ(refusal("conv2d.register_tiled", test::conv2d(4096, 4096, 16), big, tight), "yes");
  tight.max_smem_per_block_optin = 184319;
  EXPECT_EQ(refusal("conv2d.register_tiled", test::conv2d(4096, 4096, 16), big, tight),
            "shared memory 184320 B > device limit 184319 B");
  // tiled_halo_l2 declares its 32 x 32 tile statically (4096 B): the limit without opting in applies.
  DeviceInfo plain = dev;
  plain.max_smem_per_block = 4095;
  EXPECT_EQ(refusal("conv2d.tiled_halo_l2", test::conv2d(64, 64, 1), {{"tile_x", 32}, {"tile_y", 32}}, plain),
            "shared memory 4096 B > device limit 4095 B");
  plain.max_smem_per_block = 4096;
  plain.max_smem_per_block_optin = 4095;
  EXPECT_EQ(refusal("conv2d.tiled_halo_l2", test::conv2d(64, 64, 1), {{"tile_x", 32}, {"tile_y", 32}}, plain), "yes");
  EXPECT_EQ(refusal("conv2d.register_tiled", test::conv2d(64, 64, 1),
                    {{"block_x", 16}, {"block_y", 2}, {"px", 3}, {"py", 1}, {"order", "input_rows"}}, dev),
            "px must be 1, 2 or 4 (the vector width of shared loads)");
}

Problem c1d(int64_t n, int64_t m, int64_t mode) { return {"conv1d", {{"n", n}, {"m", m}, {"mode", mode}}}; }

Config window(int threads, int per_thread, const char* staging = "registers") {
  return {{"threads", threads}, {"outputs_per_thread", per_thread}, {"staging", staging}};
}
Config tiles(int threads, int per_thread, const char* schedule = nullptr) {
  Config c = {{"threads", threads}, {"outputs_per_thread", per_thread}, {"tap_group", 4}};
  if (schedule) c["schedule"] = schedule;
  return c;
}

// variants/conv1d/window.cpp and spatial.cpp.
TEST(Conv1dRefusals, KernelLimitsAreNamedWithTheValueAndTheLimit) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  EXPECT_EQ(refusal("conv1d.window", c1d(100000, 64, 1), window(128, 7), dev), "yes");
  EXPECT_EQ(refusal("conv1d.window", c1d(100000, 65, 1), window(128, 7), dev),
            "m = 65 > 64 (the window is unrolled: the tiled and FFT variants take longer filters)");
  EXPECT_EQ(refusal("conv1d.window", c1d(100000, 9, 1), window(128, 8), dev),
            "outputs_per_thread 8 must be odd (bank conflicts)");
  EXPECT_EQ(refusal("conv1d.window", c1d(100000, 9, 1), window(128, -1), dev),
            "outputs_per_thread -1 must be odd (bank conflicts)");
  EXPECT_EQ(refusal("conv1d.window", c1d(100000, 9, 1), window(128, 1), dev), "yes");
  DeviceInfo ampere = dev;
  ampere.cc_major = 8;
  EXPECT_EQ(refusal("conv1d.window", c1d(100000, 9, 1), window(128, 7, "async"), ampere), "yes");
  DeviceInfo narrow = dev;
  narrow.max_threads_per_block = 255;
  EXPECT_EQ(refusal("conv1d.window", c1d(100000, 9, 1), window(256, 7), narrow), "more threads than the device allows");
  narrow.max_threads_per_block = 256;
  EXPECT_EQ(refusal("conv1d.window", c1d(100000, 9, 1), window(256, 7), narrow), "yes");
  // 256 x 31 outputs + 63 halo + 8 of the cp.async span: 4 * 8007 = 32028 B.
  DeviceInfo tight = dev;
  tight.max_smem_per_block_optin = 32027;
  EXPECT_EQ(refusal("conv1d.window", c1d(100000, 64, 1), window(256, 31), tight),
            "shared memory 32028 B > device limit 32027 B");
  tight.max_smem_per_block_optin = 32028;
  EXPECT_EQ(refusal("conv1d.window", c1d(100000, 64, 1), window(256, 31), tight), "yes");

  const Config constant = {{"threads", 128}, {"outputs_per_thread", 1}, {"filter", "constant"}};
  EXPECT_EQ(refusal("conv1d.direct", c1d(100000, 16384, 1), constant, dev), "yes");
  EXPECT_EQ(refusal("conv1d.direct", c1d(100000, 16385, 1), constant, dev),
            "m = 16385 > 16384 taps do not fit in constant memory");
  EXPECT_EQ(refusal("conv1d.overlap_discard", c1d(100000, 16385, 1), tiles(128, 4), dev),
            "m = 16385 > 16384 taps do not fit in constant memory");
  narrow.max_threads_per_block = 255;
  EXPECT_EQ(refusal("conv1d.direct", c1d(100000, 9, 1), {{"threads", 256}, {"outputs_per_thread", 1}, {"filter", "global"}},
                    narrow),
            "more threads than the device allows");
  EXPECT_EQ(refusal("conv1d.overlap_discard", c1d(100000, 9, 1), tiles(256, 4), narrow), "more threads than the device allows");

  // overlap-add: a block of 128 x 4 = 512 outputs takes 512 - (m - 1) inputs; the K-step schedule needs
  // 1 + ceil((m - 1) / inputs) steps, at least 2: m = 257 gives 256 inputs and 2 steps, m = 258 255 and 3.
  EXPECT_EQ(refusal("conv1d.overlap_add", c1d(100000, 512, 1), tiles(128, 4, "atomic"), dev), "yes");
  EXPECT_EQ(refusal("conv1d.overlap_add", c1d(100000, 513, 1), tiles(128, 4, "atomic"), dev),
            "a block of 512 outputs holds no input block for m = 513 (needs threads * outputs_per_thread >= m)");
  EXPECT_EQ(refusal("conv1d.overlap_add", c1d(100000, 257, 1), tiles(128, 4, "k2"), dev), "yes");
  EXPECT_EQ(refusal("conv1d.overlap_add", c1d(100000, 258, 1), tiles(128, 4, "k2"), dev),
            "2 steps let overlapping blocks run together; this block length needs 3");
  EXPECT_EQ(refusal("conv1d.overlap_add", c1d(100000, 258, 1), tiles(128, 4, "k3"), dev), "yes");
  // The tiled kernels stage 256 x 16 outputs and ceil(33 / 32) = 2 rows of 32 taps: 4 * 4160 = 16640 B.
  tight.max_smem_per_block_optin = 16639;
  EXPECT_EQ(refusal("conv1d.overlap_add", c1d(100000, 33, 1), tiles(256, 16, "atomic"), tight),
            "shared memory 16640 B > device limit 16639 B");
  EXPECT_EQ(refusal("conv1d.overlap_discard", c1d(100000, 33, 1), tiles(256, 16), tight),
            "shared memory 16640 B > device limit 16639 B");
  tight.max_smem_per_block_optin = 16640;
  EXPECT_EQ(refusal("conv1d.overlap_discard", c1d(100000, 33, 1), tiles(256, 16), tight), "yes");
}

// ---- cost models worked by hand ----------------------------------------------------------------------------

// Tiles that do not divide the image: blocks round up. 100 x 70 at r = 1, 16 x 16 tiles: 7 x 5 = 35 blocks.
TEST(CostsByHand, Conv2dTilesRoundUpAndCoarseningAlongYReadsColumnsOfRows) {
  const Problem p = test::conv2d(100, 70, 1);  // 7000 outputs, 9 taps
  const Cost in = Registry::instance().get("conv2d.tiled_in").cost(p, {{"out_x", 16}, {"out_y", 16}});
  EXPECT_DOUBLE_EQ(in.bytes_model, 4.0 * (35 * 18 * 18 + 7000));
  EXPECT_DOUBLE_EQ(in.bytes_min, 4.0 * (7000 + 9 + 7000));
  EXPECT_DOUBLE_EQ(in.flops, 2.0 * 9 * 7000);
  // tiled_halo_l2, 16 x 16 at r = 1: taps inside the tile along an axis 16 * 3 - 2 = 46.
  const Cost halo = Registry::instance().get("conv2d.tiled_halo_l2").cost(p, {{"tile_x", 16}, {"tile_y", 16}});
  EXPECT_DOUBLE_EQ(halo.bytes_model, 4.0 * (35 * (256 + 9 * 256 - 46 * 46) + 7000));
  // Coarsened along y by 2: per thread (2 + 2) rows of 3 inputs, 3500 threads.
  const Cost y = Registry::instance().get("conv2d.coarsened").cost(
      p, {{"block_x", 32}, {"block_y", 4}, {"coarsen", 2}, {"direction", "y"}});
  EXPECT_DOUBLE_EQ(y.bytes_model, 4.0 * (3500 * 3 * 4 + 7000));
  // A batch of 3 images: three times each block and output.
  const Problem batch{"conv2d", {{"h", 100}, {"w", 70}, {"r", 1}, {"b", 3}}};
  EXPECT_DOUBLE_EQ(Registry::instance().get("conv2d.tiled_in").cost(batch, {{"out_x", 16}, {"out_y", 16}}).bytes_model,
                   3 * in.bytes_model);
}

// conv1d, n = 1000, m = 33, full: 1032 outputs.
TEST(CostsByHand, Conv1dWindowAndOverlapAddOnAPartialLastBlock) {
  const Problem p = c1d(1000, 33, 1);
  // window, 128 x 7 = 896 outputs a block: 2 blocks of 896 + 32 inputs; every block computes all 896.
  const Cost w = Registry::instance().get("conv1d.window").cost(p, window(128, 7));
  EXPECT_DOUBLE_EQ(w.bytes_model, 4.0 * (2 * 928 + 33 + 1032));
  EXPECT_DOUBLE_EQ(w.flops_variant, 2.0 * 2 * 896 * 33);
  EXPECT_DOUBLE_EQ(w.flops, 2.0 * 1000 * 33);
  EXPECT_DOUBLE_EQ(w.bytes_min, 4.0 * (1000 + 33 + 1032));
  // overlap-add, 128 x 4 = 512 outputs from 480 inputs a block: ceil(1000 / 480) = 3 blocks, 2 overlaps of 32.
  const Cost a = Registry::instance().get("conv1d.overlap_add").cost(p, tiles(128, 4, "k2"));
  EXPECT_DOUBLE_EQ(a.bytes_model, 4.0 * (1000 + 33 + 3 * 512 + 2 * 32));
  EXPECT_DOUBLE_EQ(a.flops_variant, 2.0 * 3 * 512 * 33);
  // direct, 256 x 2 = 512 outputs a block: 3 blocks of 512 + 32 inputs.
  const Cost d = Registry::instance().get("conv1d.direct").cost(p, {{"threads", 256}, {"outputs_per_thread", 2}, {"filter", "global"}});
  EXPECT_DOUBLE_EQ(d.bytes_model, 4.0 * (3 * 544 + 33 + 1032));
  EXPECT_DOUBLE_EQ(d.flops_variant, 2.0 * 1032 * 33);
}

// perf_model.cpp's floor of a problem on a table's device: the slower of moving its operands at the copy
// bandwidth and doing its direct flops at the FP32 rate; 3000 GB/s and 60000 GFLOP/s where the table has no
// (positive) ceilings. conv2d 1024 x 1024 at r = 0: 8388612 bytes, 2097152 flops.
TEST(CostsByHand, TheModelsFloorIsTheSlowerOfCopyingAndComputing) {
  const Problem p = test::conv2d(1024, 1024, 0);
  EXPECT_DOUBLE_EQ(table_floor_ms(json::object(), p), 8388612 / 3e12 * 1e3);
  EXPECT_DOUBLE_EQ(table_floor_ms(json::array(), p), 8388612 / 3e12 * 1e3);
  EXPECT_DOUBLE_EQ(table_floor_ms({{"ceilings", 5}}, p), 8388612 / 3e12 * 1e3);
  EXPECT_DOUBLE_EQ(table_floor_ms({{"ceilings", {{"copy_gbps", 1000}, {"fp32_gflops", 10}}}}, p), 2097152 / 10e9 * 1e3);
  EXPECT_DOUBLE_EQ(table_floor_ms({{"ceilings", {{"copy_gbps", 1000}, {"fp32_gflops", 1e6}}}}, p), 8388612 / 1e12 * 1e3);
  EXPECT_DOUBLE_EQ(table_floor_ms({{"ceilings", {{"copy_gbps", 0}, {"fp32_gflops", -1}}}}, p), 8388612 / 3e12 * 1e3);
  // Compute-bound at the defaults: r = 16 (1089 taps) on 1024 x 1024, 0.038 ms of flops against 0.0028 ms of copying.
  const Problem wide = test::conv2d(1024, 1024, 16);
  EXPECT_DOUBLE_EQ(table_floor_ms(json::object(), wide), 2.0 * 1089 * 1048576 / 6e13 * 1e3);
}

// ---- the layer variants' shared rules (variants/layer_common/layer_variant.cpp, implicit_gemm.cpp) ----------

Problem layer(const std::string& family, int64_t precision) {
  return {family, {{"n", 2}, {"c", 3}, {"h", 8}, {"w", 9}, {"k", 5}, {"r", 3}, {"s", 2}, {"pad_h", 1}, {"pad_w", 0},
                   {"u", 2}, {"v", 1}, {"precision", precision}}};
}

TEST(LayerRules, MathIsFp32Or3xTf32AndTf32OnlyWherePrecisionAllowsIt) {
  const Problem strict = layer("layer_bwd_data", 0), relaxed = layer("layer_bwd_data", 1);
  for (const char* math : {"fp32", "3xtf32"}) {
    EXPECT_TRUE(math_allowed(strict, math).ok) << math;
    EXPECT_TRUE(math_allowed(relaxed, math).ok) << math;
  }
  EXPECT_EQ(math_allowed(strict, "tf32").reason, "math tf32 needs precision = 1 (this problem is strict fp32)");
  EXPECT_TRUE(math_allowed(relaxed, "tf32").ok);
  EXPECT_EQ(math_allowed(relaxed, "bf16").reason, "unknown math 'bf16'; allowed: fp32, 3xtf32, tf32");
  EXPECT_EQ(config_math(json::object()), "fp32");
  EXPECT_EQ(config_math({{"math", "tf32"}}), "tf32");
}

// The shape above: P = (8 + 2 - 3) / 2 + 1 = 4, Q = (9 - 2) / 1 + 1 = 8.
TEST(LayerRules, SumLengthsDefinesAndOperandBytesOfAShape) {
  const Problem p = layer("layer_fwd", 0);
  Problem full = p;
  validate(full, "p");  // bias and relu at their defaults
  const LayerShape l(full);
  EXPECT_EQ(forward_sum_length(l), 3 * 3 * 2);
  EXPECT_EQ(bwd_data_sum_length(l), 5 * 3 * 2);
  EXPECT_EQ(bwd_filter_sum_length(l), 2 * 4 * 8);
  EXPECT_EQ(layer_defines(l), (std::vector<std::string>{"-DN=2", "-DC=3", "-DH=8", "-DW=9", "-DK=5", "-DR=3", "-DS=2",
                                                        "-DPAD_H=1", "-DPAD_W=0", "-DU=2", "-DV=1", "-DP=4", "-DQ=8"}));
  // x 2*3*8*9 = 432, filter 5*3*3*2 = 90, y 2*5*4*8 = 320 floats.
  EXPECT_DOUBLE_EQ(operand_bytes(full), 4.0 * (432 + 90 + 320));
}

TEST(LayerRules, ALaunchFitsTheDevicesThreadsGridAndSharedMemory) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  auto fits = [&](dim3 grid, dim3 block, int smem) {
    const Status s = launch_fits(LayerLaunch{"k", grid, block, smem}, dev);
    return s.ok ? std::string("yes") : s.reason;
  };
  EXPECT_EQ(fits(dim3(1), dim3(32, 32), 0), "yes");
  EXPECT_EQ(fits(dim3(1), dim3(32, 16, 2), 0), "yes");
  EXPECT_EQ(fits(dim3(1), dim3(1025), 0), "k: block of 1025 threads > device limit 1024");
  EXPECT_EQ(fits(dim3(1), dim3(8, 8, 17), 0), "k: block of 1088 threads > device limit 1024");
  EXPECT_EQ(fits(dim3(1, 65535, 65535), dim3(1), 0), "yes");
  EXPECT_EQ(fits(dim3(1, 65536), dim3(1), 0), "k: grid.y or grid.z > 65535 blocks");
  EXPECT_EQ(fits(dim3(1, 1, 65536), dim3(1), 0), "k: grid.y or grid.z > 65535 blocks");
  EXPECT_EQ(fits(dim3(1u << 31), dim3(1), 0), "yes");  // grid.x may reach 2^31 - 1
  EXPECT_EQ(fits(dim3(1), dim3(1), 227 * 1024), "yes");
  EXPECT_EQ(fits(dim3(1), dim3(1), 227 * 1024 + 1), "k: shared memory 232449 B > device limit 232448 B");
}

// The GEMM tiles as the comment above gemm_tiles() designs them: SIMT tiles of 256 threads with 8x8, 8x4 or
// 4x4 outputs each; tensor-core tiles of BK 16 whose warps hold 64x32 or 32x32 of the tile.
TEST(LayerRules, GemmTilesAreTheDesignedSimtAndTensorCoreTiles) {
  std::vector<std::string> simt, tensor;
  for (const GemmTile& t : gemm_tiles()) {
    EXPECT_EQ(t.name.rfind(std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" + std::to_string(t.bk), 0), 0u);
    if (!t.tensor_cores) {
      simt.push_back(t.name + " " + std::to_string(t.tm) + "x" + std::to_string(t.tn));
      EXPECT_EQ(t.threads(), 256) << t.name;
      EXPECT_EQ(t.bk, 8) << t.name;
    } else {
      tensor.push_back(t.name + " " + std::to_string(t.warps_m) + "x" + std::to_string(t.warps_n) + " warps of " +
                       std::to_string(t.bm / t.warps_m) + "x" + std::to_string(t.bn / t.warps_n));
      EXPECT_EQ(t.bk, 16) << t.name;
    }
    EXPECT_EQ(find_gemm_tile(t.name), &t);
  }
  EXPECT_EQ(simt, (std::vector<std::string>{"128x128x8 8x8", "128x64x8 8x4", "64x64x8 4x4"}));
  EXPECT_EQ(tensor, (std::vector<std::string>{"128x128x16 2x4 warps of 64x32", "256x64x16 4x2 warps of 64x32",
                                              "128x64x16 2x2 warps of 64x32", "64x64x16 2x2 warps of 32x32",
                                              "128x64x16w8 4x2 warps of 32x32"}));
  EXPECT_EQ(find_gemm_tile("128x64x4"), nullptr);
}

// Splits against the SMs (132 on the offline H100): too few when the tiles x splits CTAs fill under a
// quarter of them while four times the splits still has k-tiles; too many once half the splits already fill
// them twice.
TEST(LayerRules, SplitCountsAreCheckedAgainstTheSms) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  EXPECT_EQ(split_not_too_few(9, 1, 4, dev).reason,
            "splits 1 x 9 tiles fill under a quarter of the 132 SMs, and splits 4 is allowed");
  EXPECT_TRUE(split_not_too_few(9, 1, 3, dev).ok);  // splits 4 would not have a k-tile each
  EXPECT_EQ(split_not_too_few(32, 1, 100, dev).reason,
            "splits 1 x 32 tiles fill under a quarter of the 132 SMs, and splits 4 is allowed");
  EXPECT_TRUE(split_not_too_few(33, 1, 100, dev).ok);  // 4 x 33 = 132: a quarter exactly
  EXPECT_EQ(split_not_too_few(2, 16, 1000, dev).reason,
            "splits 16 x 2 tiles fill under a quarter of the 132 SMs, and splits 64 is allowed");
  EXPECT_TRUE(split_not_too_few(9, 1, 4, DeviceInfo{}).ok);  // SMs unknown
  EXPECT_EQ(split_not_too_many(264, 2, dev).reason, "splits 2: 264 tiles x 1 already fill the 132 SMs twice");
  EXPECT_TRUE(split_not_too_many(263, 2, dev).ok);
  EXPECT_EQ(split_not_too_many(132, 4, dev).reason, "splits 4: 132 tiles x 2 already fill the 132 SMs twice");
  EXPECT_TRUE(split_not_too_many(131, 4, dev).ok);
  EXPECT_TRUE(split_not_too_many(100000, 1, dev).ok);  // unsplit: never too many
  EXPECT_TRUE(split_not_too_many(264, 2, DeviceInfo{}).ok);
}

}  // namespace
}  // namespace convtune
