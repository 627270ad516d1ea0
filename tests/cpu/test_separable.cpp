// The conv2d_separable family without a GPU: its CPU reference is conv2d's with the outer-product filter,
// its shape matches conv2d's, every kernel compiles with NVRTC over its space, refusals say why, the cost
// model's numbers, and the shipped spec stays within its candidate budget.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "harness/family.h"
#include "harness/spec.h"
#include "harness/sweep_plan.h"
#include "harness/variant.h"
#include "tests/cpu/test_support.h"
#include "variants/conv2d_separable/jit_separable.h"
#include "test_support.h"

using namespace convtune;
using convtune::test::contains;

namespace {

Problem separable(int64_t h, int64_t w, int64_t r) {
  return Problem::from_json({{"family", "conv2d_separable"}, {"h", h}, {"w", w}, {"r", r}});
}

Config tiling(int bx, int by, int px, int py) { return {{"block_x", bx}, {"block_y", by}, {"px", px}, {"py", py}}; }

const JitSeparableVariant& separable_variant(const std::string& name) {
  return dynamic_cast<const JitSeparableVariant&>(Registry::instance().get(name));
}

}  // namespace

TEST(Separable, CpuReferenceIsConv2dWithTheOuterProductFilter) {
  std::mt19937 rng(5);
  // Multiples of 1/64 in [-1, 1]: every product col * row is exact in float, so conv2d's reference gets the
  // same taps, and the two double sums differ only in their order.
  std::uniform_int_distribution<int> u(-64, 64);
  auto fill = [&](std::vector<float>& v) {
    for (float& x : v) x = float(u(rng)) / 64.0f;
  };
  // r larger than the image, r = 0, a one-pixel image, and an ordinary case.
  for (auto [h, w, r] : {std::tuple{23, 37, 4}, {5, 3, 6}, {9, 11, 0}, {1, 1, 2}, {16, 12, 3}}) {
    const Problem sp = separable(h, w, r);
    const Problem cp = Problem::from_json({{"family", "conv2d"}, {"h", h}, {"w", w}, {"r", r}});
    std::vector<float> img(size_t(h * w)), col(size_t(2 * r + 1)), row(size_t(2 * r + 1));
    fill(img);
    fill(col);
    fill(row);
    std::vector<float> outer;
    for (float a : col)
      for (float b : row) outer.push_back(a * b);
    const std::vector<double> got = cpu_reference(sp, {img, col, row});
    const std::vector<double> want = cpu_reference(cp, {img, outer});
    ASSERT_EQ(got.size(), want.size());
    double nonzero = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::abs(want[i]))) << sp.key() << " [" << i << "]";
      nonzero += want[i] != 0;
    }
    EXPECT_GT(nonzero, 0) << sp.key();
  }
}

TEST(Separable, TheFamilyHasConv2dsShapeAndItsOwnOperands) {
  const Family& sep = find_family("conv2d_separable");
  const Family& c2 = find_family("conv2d");
  ASSERT_EQ(sep.dims().size(), 3u);  // h, w, r: conv2d's, whose batch b comes after them
  ASSERT_EQ(c2.dims().size(), 4u);
  EXPECT_EQ(c2.dims()[3].name, "b");
  for (size_t i = 0; i < sep.dims().size(); ++i) {
    EXPECT_EQ(sep.dims()[i].name, c2.dims()[i].name);  // records of the two join on h, w, r
    EXPECT_EQ(sep.dims()[i].min, c2.dims()[i].min);
    EXPECT_EQ(sep.dims()[i].max, c2.dims()[i].max);
  }
  EXPECT_TRUE(contains(sep.summary(), "separable flag is the family"));
  const Problem p = separable(100, 30, 5);
  const auto ops = p.operands();
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].name, "image");
  EXPECT_EQ(ops[0].elements, 3000);
  EXPECT_EQ(ops[1].elements, 11);
  EXPECT_EQ(ops[2].elements, 11);
  EXPECT_EQ(ops[3].name, "output");
  EXPECT_EQ(ops[3].elements, 3000);
  EXPECT_DOUBLE_EQ(p.direct_flops(), 2.0 * 2.0 * 11 * 3000);
  EXPECT_DOUBLE_EQ(p.min_bytes(), 4.0 * (3000 + 11 + 11 + 3000));
  EXPECT_EQ(sep.constraint_dims(), std::vector<std::string>{"r"});

  // The awkward shapes: a 1x1 image, widths that are and are not multiples of 4, r up to 16 and the largest.
  int64_t max_r = 0;
  bool one_pixel = false, aligned_w = false, odd_w = false;
  for (const Problem& t : sep.test_problems()) {
    max_r = std::max(max_r, t.at("r"));
    one_pixel |= t.at("h") == 1 && t.at("w") == 1;
    aligned_w |= t.at("w") % 4 == 0;
    odd_w |= t.at("w") % 2 == 1;
  }
  EXPECT_EQ(max_r, kMaxSeparableRadius);
  EXPECT_TRUE(one_pixel && aligned_w && odd_w);
  EXPECT_EQ(test::builtin_variants("conv2d_separable").size(), 2u);
}

// The host's mirrors of the kernels' tile geometry (separable_common.cuh): the row pass's window and pitch
// cover every tap of the tile, with aligned vector loads.
TEST(Separable, TheRowPassTileCoversTheHalo) {
  for (int px : {1, 2, 4})
    for (int bx : {16, 32, 64})
      for (int64_t r = 0; r <= kMaxSeparableRadius; ++r) {
        const SeparableTiling t(tiling(bx, 8, px, 4));
        const int64_t lead = SeparableTiling::lead(r), skew = lead - r;
        EXPECT_EQ(lead % 4, 0);
        EXPECT_GE(skew, 0);
        EXPECT_EQ(t.window(r) % px, 0);
        EXPECT_GE(t.window(r), skew + px + 2 * r);  // the last output's last tap
        EXPECT_EQ(t.row_pitch(r) % 4, 0);
        EXPECT_GE(t.row_pitch(r), t.tw() - px + t.window(r));  // the last thread's window
        EXPECT_GE(t.row_pitch(r), lead + t.tw() + r);          // the halo right of the tile
      }
}

TEST(Separable, EveryKernelCompilesOverItsSpace) {
  // Every config at r = 3; every 14th at r = 0, 1, 8, 16 and 32; the first implementable one at r = 2, 4, 15
  // (as test_nvrtc does for conv2d); on the CPU a covering sample of those (every radius and parameter
  // value at least once), all of them with CONVTUNE_NVRTC_ALL=1.
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  std::vector<JitProgram> programs;
  std::set<std::string> seen;
  for (const Variant* v : test::built_in_variants("conv2d_separable")) {
    size_t refused_r3 = 0;  // at r = 3, only tiles too large for shared memory may be refused
    std::vector<std::pair<Problem, Config>> considered;
    std::vector<json> points;  // each config with its radius, for the coverage
    for (int64_t r = 0; r <= kMaxSeparableRadius; ++r) {
      const Problem p = separable(1000, 999, r);
      const auto configs = v->space(p, dev).enumerate();
      const bool sampled = r == 0 || r == 1 || r == 8 || r == 16 || r == 32;
      if (!sampled && r != 3 && r != 2 && r != 4 && r != 15) continue;  // CI time: radii where tiling changes
      bool first = true;
      for (size_t i = 0; i < configs.size(); ++i) {
        const Status st = v->can_implement(p, configs[i], dev);
        if (!st) {
          refused_r3 += r == 3;
          EXPECT_TRUE(r != 3 || contains(st.reason, "shared memory")) << v->name() << ": " << st.reason;
          continue;
        }
        if (r == 3 || (sampled && i % 14 == 0) || first) {
          considered.emplace_back(p, configs[i]);
          points.push_back(configs[i]);
          points.back()["r"] = r;
        }
        first = false;
      }
    }
    EXPECT_LE(refused_r3, 1u) << v->name();
    for (size_t i : convtune::test::covering_sample(points, 2))
      for (const JitProgram& prog : v->programs(considered[i].first, considered[i].second))
        if (seen.insert(prog.describe()).second) programs.push_back(prog);
  }
  ASSERT_GT(programs.size(), convtune::test::compile_every_point() ? 150u : 10u);
  convtune::test::expect_all_compile(programs);
  std::printf("compiled %zu programs\n", programs.size());
}

TEST(Separable, RefusalsSayWhy) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* name : {"conv2d_separable.fused", "conv2d_separable.two_pass"}) {
    const Variant& v = Registry::instance().get(name);
    const Problem p = separable(512, 512, 3);
    EXPECT_TRUE(v.can_implement(p, tiling(32, 8, 4, 4), dev)) << name;
    EXPECT_TRUE(contains(v.can_implement(p, tiling(32, 8, 3, 4), dev).reason, "px must be 1, 2 or 4"));
    EXPECT_TRUE(contains(v.can_implement(p, tiling(6, 8, 1, 4), dev).reason, "not a multiple of 4"));
    EXPECT_TRUE(contains(v.can_implement(p, tiling(64, 32, 4, 4), dev).reason, "threads > device limit"));
    const Problem c2 = Problem::from_json({{"family", "conv2d"}, {"h", 64}, {"w", 64}, {"r", 3}});
    EXPECT_TRUE(contains(v.can_implement(c2, tiling(32, 8, 4, 4), dev).reason, "not a conv2d_separable problem"));
    // Shared memory: the limit comes from the device.
    DeviceInfo small = dev;
    small.max_smem_per_block_optin = 48 * 1024;
    const std::string why = v.can_implement(separable(512, 512, 16), tiling(32, 16, 4, 8), small).reason;
    EXPECT_TRUE(contains(why, "shared memory")) << name << ": " << why;
    EXPECT_TRUE(v.can_implement(separable(512, 512, 16), tiling(32, 16, 4, 8), dev)) << name;
  }
  // The fused kernel's largest tile at the largest radius outgrows an H100's 227 KiB.
  const std::string why = Registry::instance().get("conv2d_separable.fused").can_implement(
      separable(512, 512, 32), tiling(64, 16, 4, 8), DeviceInfo::offline_sm90()).reason;
  EXPECT_TRUE(contains(why, "separable_fused: shared memory")) << why;
  // A one-pixel image and r = 32 with a small tile: fine.
  EXPECT_TRUE(Registry::instance().get("conv2d_separable.fused").can_implement(separable(1, 1, 32), tiling(16, 4, 1, 2), dev));
}

TEST(Separable, CostModel) {
  // 64 x 64, r = 2 (5 taps), tile 32 x 16 (block 16 x 8, px 2, py 2): 2 x 4 = 8 blocks.
  const Problem p = separable(64, 64, 2);
  const Config c = tiling(16, 8, 2, 2);
  const SeparableTiling t(c);
  // lead 4, skew 2, window: 2 + 2 + 4 = 8 floats; pitch 32 - 2 + 8 = 38 -> 40.
  ASSERT_EQ(t.window(2), 8);
  ASSERT_EQ(t.row_pitch(2), 40);
  const double hw = 64 * 64;

  const Cost fused = separable_variant("conv2d_separable.fused").cost(p, c);
  EXPECT_DOUBLE_EQ(fused.flops, 2.0 * 2 * 5 * hw);
  EXPECT_DOUBLE_EQ(fused.bytes_min, 4.0 * (2 * hw + 2 * 5));
  // Row pass over 16 + 4 rows x 32, column pass over 16 x 32, per block; the tile 20 x 40 loaded once.
  EXPECT_DOUBLE_EQ(fused.flops_variant, 2.0 * 5 * 8 * (20 * 32 + 16 * 32));
  EXPECT_DOUBLE_EQ(fused.bytes_model, 4.0 * (8 * 20 * 40 + hw));

  const Cost two = separable_variant("conv2d_separable.two_pass").cost(p, c);
  EXPECT_DOUBLE_EQ(two.flops, fused.flops);
  EXPECT_DOUBLE_EQ(two.flops_variant, two.flops);  // whole tiles here: exactly the separable sum
  // Rows: the 16 x 40 tile per block, the intermediate stored; columns: 20 x 32 per block, the output stored.
  EXPECT_DOUBLE_EQ(two.bytes_model, 4.0 * (8 * 16 * 40 + hw + 8 * 20 * 32 + hw));

  // Launches: the fused kernel's shared memory holds the tile and the intermediate; two_pass uses scratch.
  const auto fs = separable_variant("conv2d_separable.fused").steps(Separable(p), t);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].smem, 4 * 20 * (40 + 32));
  EXPECT_EQ(fs[0].grid.x, 2u);
  EXPECT_EQ(fs[0].grid.y, 4u);
  const auto ts = separable_variant("conv2d_separable.two_pass").steps(Separable(p), t);
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_TRUE(!ts[0].from_scratch && ts[0].to_scratch && ts[1].from_scratch && !ts[1].to_scratch);
  EXPECT_EQ(ts[0].smem, 4 * 16 * 40);
  EXPECT_EQ(ts[1].smem, 4 * 20 * 32);
}

TEST(Separable, TheShippedSpecComparesWithConv2dWithinItsBudget) {
  const auto path = std::string(CONVTUNE_SOURCE_DIR) + "/sweeps/conv2d_separable.json";
  const SweepSpec s = SweepSpec::load(path);
  const SweepPlan plan = make_plan(s, DeviceInfo::offline_sm90());
  // Every separable shape has its conv2d twin, and both separable variants run on it.
  std::set<std::string> shapes[2];
  std::map<std::string, std::set<std::string>> variants;
  for (const Problem& p : s.problems) {
    const std::string shape = p.key().substr(p.key().find('/'));
    shapes[p.family == "conv2d_separable"].insert(shape);
  }
  EXPECT_EQ(shapes[0], shapes[1]);
  for (const PlannedCandidate& c : plan.candidates)
    if (c.problem.family == "conv2d_separable" && !dynamic_cast<const PluginVariant*>(c.variant)) {
      variants[c.problem.key()].insert(c.variant->name());
      EXPECT_TRUE(c.status) << c.variant->name() << " " << config_string(c.config) << ": " << c.status.reason;
    }
  EXPECT_EQ(variants.size(), shapes[1].size());
  for (const auto& [key, names] : variants) EXPECT_EQ(names.size(), 2u) << key;
  size_t runnable = 0;  // (of the built-in variants: a plug-in test may have loaded more)
  for (const PlannedCandidate& c : plan.candidates) runnable += c.status && !dynamic_cast<const PluginVariant*>(c.variant);
  EXPECT_LE(runnable, 400u);  // about four minutes on an H100
}
