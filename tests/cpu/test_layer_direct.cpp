// The direct layer variants without a GPU: the correlation the tiled kernel computes reproduces each
// pass's reference (the index mapping, evaluated here on the CPU), every kernel compiles over a sample of
// its space, refusals name their reason, and the cost model's numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "harness/family.h"
#include "harness/variant.h"
#include "tests/cpu/test_support.h"
#include "variants/layer_common/direct_tiled.h"
#include "test_support.h"

using namespace convtune;
using convtune::test::contains;

namespace {

using test::random_inputs;

// What layer_direct_tiled.cuh computes for a correlation, in double, without bias or ReLU.
std::vector<double> correlate(const DirectTiledVariant::Correlation& k, const LayerShape& l, const float* in,
                              const float* w) {
  std::vector<double> out(size_t(l.n * k.out_maps * k.out_h * k.out_w));
  size_t e = 0;
  for (int64_t n = 0; n < l.n; ++n)
    for (int64_t o = 0; o < k.out_maps; ++o)
      for (int64_t y = 0; y < k.out_h; ++y)
        for (int64_t x = 0; x < k.out_w; ++x, ++e)
          for (int64_t m = 0; m < k.in_maps; ++m)
            for (int64_t i = 0; i < l.r; ++i)
              for (int64_t j = 0; j < l.s; ++j) {
                const int64_t yy = y * k.stride_h - k.pad_top + i, xx = x * k.stride_w - k.pad_left + j;
                if (yy < 0 || xx < 0 || yy % k.dil_h || xx % k.dil_w) continue;
                if (yy / k.dil_h >= k.in_h || xx / k.dil_w >= k.in_w) continue;
                const double tap = k.flip_swap ? w[((m * k.out_maps + o) * l.r + (l.r - 1 - i)) * l.s + (l.s - 1 - j)]
                                               : w[((o * k.in_maps + m) * l.r + i) * l.s + j];
                out[e] += double(in[((n * k.in_maps + m) * k.in_h + yy / k.dil_h) * k.in_w + xx / k.dil_w]) * tap;
              }
  return out;
}

const DirectTiledVariant& direct(const std::string& name) {
  return dynamic_cast<const DirectTiledVariant&>(Registry::instance().get(name));
}

}  // namespace

TEST(LayerDirect, TheTiledCorrelationIsEachPass) {
  for (const char* name : {"layer_fwd.direct_tiled", "layer_bwd_data.direct"}) {
    const DirectTiledVariant& v = direct(name);
    for (Problem p : find_family(v.family()).test_problems()) {
      if (p.dims.count("bias")) p.dims["bias"] = p.dims["relu"] = 0;
      const auto in = random_inputs(p, 3);
      const LayerShape l(p);
      const std::vector<double> want = cpu_reference(p, in);
      const std::vector<double> got = correlate(v.correlation(l), l, in[0].data(), in[1].data());
      ASSERT_EQ(got.size(), want.size()) << name << " " << p.key();
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-9) << name << " " << p.key() << " [" << i << "]";
    }
  }
}

TEST(LayerDirect, KernelsCompileOverASampleOfTheirSpace) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  std::vector<JitProgram> programs;
  for (const char* name :
       {"layer_fwd.direct_tiled", "layer_bwd_data.direct", "layer_bwd_filter.direct", "layer_bwd_filter.row_tiled"}) {
    const Variant& v = Registry::instance().get(name);
    std::vector<Problem> problems = find_family(v.family()).test_problems();
    problems.push_back(find_family(v.family()).example());
    std::vector<std::pair<const Problem*, Config>> implementable;
    for (const Problem& p : problems)
      for (const Config& c : v.space(p, dev).enumerate())
        if (v.can_implement(p, c, dev)) implementable.emplace_back(&p, c);
    EXPECT_GT(implementable.size(), problems.size()) << name;
    // About 96 configs a variant, however large the space grows. The stride shares no factor with a
    // parameter's value count (2 to 7), so that every value of the fastest-varying parameters is sampled.
    size_t stride = std::max<size_t>(1, implementable.size() / 96);
    while (std::gcd(stride, size_t(210)) != 1) ++stride;
    std::vector<JitProgram> considered;
    for (size_t i = 0; i < implementable.size(); i += stride)
      for (const JitProgram& prog : v.programs(*implementable[i].first, implementable[i].second))
        considered.push_back(prog);
    // All 96 with CONVTUNE_NVRTC_ALL=1; on the CPU a covering sample of their programs, every define's value
    // at least once (this test's compile time was once the CPU suite's longest).
    for (const JitProgram& prog : convtune::test::covering_programs(considered)) programs.push_back(prog);
  }
  EXPECT_GE(programs.size(), convtune::test::compile_every_point() ? 4u * 60 : 4u * 4) << "too few configs sampled";
  convtune::test::expect_all_compile(programs);
}

TEST(LayerDirect, RefusalsSayWhy) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& fwd = Registry::instance().get("layer_fwd.direct_tiled");
  Problem p = find_family("layer_fwd").example();
  Config c = {{"tile_w", 32}, {"tile_h", 4}, {"maps", 16}, {"maps_per_thread", 8}, {"pix_per_thread", 4}, {"rows_per_thread", 1}, {"in_chunk", 4}, {"stages", 1}};
  EXPECT_TRUE(fwd.can_implement(p, c, dev));
  c["tile_w"] = 16;
  c["pix_per_thread"] = 32;
  EXPECT_TRUE(contains(fwd.can_implement(p, c, dev).reason, "pix_per_thread must divide tile_w"));
  c = {{"tile_w", 64}, {"tile_h", 8}, {"maps", 64}, {"maps_per_thread", 4}, {"pix_per_thread", 2}, {"rows_per_thread", 1}, {"in_chunk", 1}, {"stages", 1}};
  EXPECT_TRUE(contains(fwd.can_implement(p, c, dev).reason, "threads > device limit")) << fwd.can_implement(p, c, dev).reason;
  // Two stages overlap copies only with cp.async (sm_80 and later).
  Config staged = {{"tile_w", 32}, {"tile_h", 4}, {"maps", 16}, {"maps_per_thread", 8}, {"pix_per_thread", 4}, {"rows_per_thread", 1}, {"in_chunk", 4}, {"stages", 2}};
  EXPECT_TRUE(fwd.can_implement(p, staged, dev)) << fwd.can_implement(p, staged, dev).reason;
  DeviceInfo turing = dev;
  turing.cc_major = 7, turing.cc_minor = 5;
  EXPECT_TRUE(contains(fwd.can_implement(p, staged, turing).reason, "compute capability 8.0"));
  p.dims["r"] = p.dims["s"] = 17;
  p.dims["pad_h"] = p.dims["pad_w"] = 0;
  EXPECT_TRUE(contains(fwd.can_implement(p, c, dev).reason, "16x16"));

  // Three output maps (dE/dX of an RGB layer): a block of exactly 3, not 4 with one idle.
  const Variant& data = Registry::instance().get("layer_bwd_data.direct");
  const Problem rgb = layer_problem("layer_bwd_data", find_family("layer_bwd_data").dims(), {2, 3, 20, 20, 8, 3, 3, 1, 1, 1, 1, 0});
  const Param* maps = data.space(rgb, dev).find("maps");
  ASSERT_NE(maps, nullptr);
  EXPECT_NE(std::find(maps->values.begin(), maps->values.end(), json(3)), maps->values.end());
  const Config three = {{"tile_w", 32}, {"tile_h", 8}, {"maps", 3}, {"maps_per_thread", 3}, {"pix_per_thread", 4}, {"rows_per_thread", 1}, {"in_chunk", 4}, {"stages", 1}};
  EXPECT_TRUE(data.can_implement(rgb, three, dev)) << data.can_implement(rgb, three, dev).reason;
  EXPECT_TRUE(contains(data.can_implement(find_family("layer_bwd_data").example(), three, dev).reason,
                       "neither a power of two nor the 64 output maps"));

  const Variant& filter = Registry::instance().get("layer_bwd_filter.direct");
  Problem tiny = find_family("layer_bwd_filter").test_problems().front();  // n = h = w = 1: one segment
  const Config split = {{"maps_per_thread", 4}, {"c_per_block", 1}, {"splits", 32}};
  EXPECT_TRUE(contains(filter.can_implement(tiny, split, dev).reason, "segments"));
}

TEST(LayerDirect, RowTiledRefusalsSayWhy) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& rows = Registry::instance().get("layer_bwd_filter.row_tiled");
  const auto dims = find_family("layer_bwd_filter").dims();
  // N32 C3 224x224 K64 R7 pad3: the few-channel layer it is for.
  Problem p = layer_problem("layer_bwd_filter", dims, {32, 3, 224, 224, 64, 7, 7, 3, 3, 1, 1, 0});
  Config c = {{"maps", 8}, {"splits", 256}, {"min_blocks", 4}};
  EXPECT_TRUE(rows.can_implement(p, c, dev)) << rows.can_implement(p, c, dev).reason;
  Problem r9 = layer_problem("layer_bwd_filter", dims, {32, 3, 224, 224, 64, 9, 9, 4, 4, 1, 1, 0});
  EXPECT_TRUE(contains(rows.can_implement(r9, c, dev).reason, "min_blocks x r > 32"));  // under 64 registers
  c["min_blocks"] = 1;
  EXPECT_TRUE(rows.can_implement(r9, c, dev)) << rows.can_implement(r9, c, dev).reason;
  Problem wide = layer_problem("layer_bwd_filter", dims, {32, 3, 224, 224, 64, 17, 17, 8, 8, 1, 1, 0});
  EXPECT_TRUE(contains(rows.can_implement(wide, c, dev).reason, "maps x s > 128"));
  Problem k4 = layer_problem("layer_bwd_filter", dims, {32, 3, 224, 224, 4, 7, 7, 3, 3, 1, 1, 0});
  EXPECT_TRUE(contains(rows.can_implement(k4, c, dev).reason, "k <= 4"));
  c["maps"] = 4;
  EXPECT_TRUE(rows.can_implement(k4, c, dev)) << rows.can_implement(k4, c, dev).reason;
  Problem strided = layer_problem("layer_bwd_filter", dims, {32, 3, 224, 224, 64, 7, 7, 3, 3, 2, 2, 0});
  EXPECT_TRUE(contains(rows.can_implement(strided, c, dev).reason, "stride 1"));
  Problem many = layer_problem("layer_bwd_filter", dims, {32, 32, 56, 56, 64, 3, 3, 1, 1, 1, 1, 0});
  EXPECT_TRUE(contains(rows.can_implement(many, c, dev).reason, "c > 16"));
  Problem few_rows = layer_problem("layer_bwd_filter", dims, {1, 3, 100, 128, 8, 3, 3, 1, 1, 1, 1, 0});
  EXPECT_TRUE(contains(rows.can_implement(few_rows, c, dev).reason, "splits > the 100 (image, row) pairs"));
  DeviceInfo old = dev;
  old.cc_major = 7;
  EXPECT_TRUE(contains(rows.can_implement(p, c, old).reason, "cp.async"));
}

TEST(LayerDirect, RowTiledNeedsAlignedOperandsWhereItCopies16Bytes) {
  const auto& rows = dynamic_cast<const JitLayerVariant&>(Registry::instance().get("layer_bwd_filter.row_tiled"));
  const auto dims = find_family("layer_bwd_filter").dims();
  // 224-wide rows (q = w = 224): x and dy staged 16 bytes at a time; 23-wide rows: a float at a time.
  const LayerShape wide(layer_problem("layer_bwd_filter", dims, {32, 3, 224, 224, 64, 7, 7, 3, 3, 1, 1, 0}));
  const LayerShape odd(layer_problem("layer_bwd_filter", dims, {2, 3, 19, 23, 5, 3, 3, 1, 1, 1, 1, 0}));
  EXPECT_EQ(rows.operand_alignments(wide), (std::vector<size_t>{16, 16}));
  EXPECT_TRUE(rows.operand_alignments(odd).empty());
  alignas(16) static float buffer[16];
  const std::vector<float*> aligned = {buffer, buffer + 4, buffer + 1};  // the output may be anywhere
  EXPECT_TRUE(operands_aligned(aligned, {16, 16}));
  const Status off = operands_aligned({buffer, buffer + 1, buffer}, {16, 16});
  EXPECT_FALSE(off);
  EXPECT_TRUE(contains(off.reason, "operand 1 does not start on a multiple of 16 bytes")) << off.reason;
  EXPECT_TRUE(operands_aligned({buffer + 1, buffer + 3}, {}));  // no requirement: float alignment only
  // More requirements than operands: only the operands are checked (mutation survivor, 2026-11-29: `i <=
  // operands.size()` read one past them; here the slot past the end holds a misaligned pointer).
  std::vector<float*> one = {buffer, buffer + 1};
  one.pop_back();
  EXPECT_TRUE(operands_aligned(one, {16, 16}));
}

TEST(LayerDirect, RowTiledCostModel) {
  // N2 C3 8x8 K10 R3 pad1: dy (2x10x64) staged once per input map, x (2x3x64) once per group of 8 maps (2
  // groups), 4 splits of partial dw (10x3x3x3) written and read, dw written.
  const Problem p = layer_problem("layer_bwd_filter", find_family("layer_bwd_filter").dims(), {2, 3, 8, 8, 10, 3, 3, 1, 1, 1, 1, 0});
  const Cost cost = Registry::instance().get("layer_bwd_filter.row_tiled").cost(p, {{"maps", 8}, {"splits", 4}, {"min_blocks", 1}});
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * (2 * 10 * 64) * (3 * 3 * 3));
  EXPECT_DOUBLE_EQ(cost.bytes_model, 4.0 * (2 * 10 * 64 * 3 + 2 * 3 * 64 * 2 + 2 * 4 * 270 + 270));
}

TEST(LayerDirect, CostModel) {
  // N2 C3 8x8 K4 R3 pad1 stride 1: P = Q = 8. Tiles 8x4 -> 2 tiles, one map group of 8, 2 images.
  const Problem p = layer_problem("layer_fwd", find_family("layer_fwd").dims(), {2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 0, 0, 0});
  const Config c = {{"tile_w", 8}, {"tile_h", 4}, {"maps", 8}, {"maps_per_thread", 4}, {"pix_per_thread", 2}, {"rows_per_thread", 1}, {"in_chunk", 1}, {"stages", 1}};
  const Cost cost = Registry::instance().get("layer_fwd.direct_tiled").cost(p, c);
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * (2 * 4 * 8 * 8) * (3 * 3 * 3));
  EXPECT_DOUBLE_EQ(cost.flops_variant, cost.flops);
  EXPECT_DOUBLE_EQ(cost.bytes_min, 4.0 * (2 * 3 * 64 + 4 * 27 + 2 * 4 * 64));
  // Per block and input map: a 6x10 tile with halo + 9 taps x 8 maps; 4 blocks, 3 maps; the output once.
  EXPECT_DOUBLE_EQ(cost.bytes_model, 4.0 * (4 * 3 * (6 * 10 + 9 * 8) + 2 * 4 * 64));
}
