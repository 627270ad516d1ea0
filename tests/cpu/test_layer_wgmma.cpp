// The wgmma implicit-GEMM variants without a GPU: their programs compile for sm_90 (NVRTC's sm_90a), a
// covering sample of the space on the ResNet shape and a sample elsewhere (all of those with CONVTUNE_NVRTC_ALL=1); compute capability and precision
// rules; the cost model. Their arithmetic is checked against the float64 reference by the
// GPU suite.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "harness/family.h"
#include "harness/runner.h"
#include "harness/variant.h"
#include "variants/layer_common/implicit_gemm.h"
#include "variants/layer_common/layer_variant.h"
#include "variants/layer_common/wgmma_gemm.h"

#include "tests/cpu/test_support.h"

using namespace convtune;
using namespace convtune::test;

namespace {

const char* const kWgmmaPasses[] = {"layer_fwd", "layer_bwd_data"};  // the passes of both schedules

const Variant& wgmma(const std::string& family) { return Registry::instance().get(family + ".implicit_gemm_wgmma"); }
const Variant& wgmma_ws(const std::string& family) {
  return Registry::instance().get(family + ".implicit_gemm_wgmma_ws");
}

Problem wgmma_shape(const std::string& family, std::vector<int64_t> values) {
  return layer_problem(family, find_family(family).dims(), values);
}
// The 56x56 ResNet stage (n c h w k r s pad_h pad_w u v).
Problem resnet(const std::string& family) { return wgmma_shape(family, {32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1}); }

Config config(const char* math, int warpgroups, int stages, int tile_n = 64) {
  return {{"math", math}, {"warpgroups", warpgroups}, {"stages", stages}, {"tile_n", tile_n}};
}

// Every config on the ResNet shape (tf32 through a precision = 1 copy), every 3rd elsewhere; with `sample`,
// every sample-th there and every 2*sample-th elsewhere (backward-filter's waves multiply its space by 3).
// The tests compile covering_programs of these: on the CPU every define's value at least once (the ptxas notes
// of other combinations are checked with CONVTUNE_NVRTC_ALL=1, and the sweeps compile every config they run).
std::vector<JitProgram> programs(const Variant& v, const std::string& family, size_t sample = 1,
                                 size_t at_least = 30) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  Problem relaxed = resnet(family);
  relaxed.dims["precision"] = 1;
  std::vector<JitProgram> out;
  std::set<std::string> seen;
  std::vector<Problem> problems = {relaxed};
  for (const Problem& p : find_family(family).test_problems()) problems.push_back(p);
  for (size_t pi = 0; pi < problems.size(); ++pi) {
    size_t i = 0;
    for (const Config& c : v.space(problems[pi], dev).enumerate()) {
      if (!v.can_implement(problems[pi], c, dev) || i++ % (pi == 0 ? sample : sample == 1 ? 3 : 2 * sample) != 0)
        continue;
      for (const JitProgram& prog : v.programs(problems[pi], v.resolve(problems[pi], c, dev)))
        if (seen.insert(prog.describe()).second) out.push_back(prog);
    }
  }
  EXPECT_GE(out.size(), at_least) << v.name();
  return out;
}

}  // namespace

// ptxas notes C751x say it serialized the wgmma's (a wait after every one: correct, but the kernel would
// lose its point) or injected fences around registers an in-flight wgmma uses.
const std::vector<std::string> kForbiddenNotes = {"C751", "serialized"};

TEST(LayerWgmmaCompile, Forward) {
  expect_all_compile(covering_programs(programs(wgmma("layer_fwd"), "layer_fwd")), kForbiddenNotes);
}
TEST(LayerWgmmaCompile, BackwardData) {
  expect_all_compile(covering_programs(programs(wgmma("layer_bwd_data"), "layer_bwd_data")), kForbiddenNotes);
}
// The warp-specialized kernel: its three gathers (filter-tap-major where C or K is a multiple of 32, the tap
// table elsewhere, the per-tap decode for strided backward-data and large filters) are among the test shapes.
TEST(LayerWgmmaCompile, SpecializedForward) {
  expect_all_compile(covering_programs(programs(wgmma_ws("layer_fwd"), "layer_fwd")), kForbiddenNotes);
}
TEST(LayerWgmmaCompile, SpecializedBackwardData) {
  expect_all_compile(covering_programs(programs(wgmma_ws("layer_bwd_data"), "layer_bwd_data")), kForbiddenNotes);
}

TEST(LayerWgmmaCompile, SpecializedBackwardFilter) {
  expect_all_compile(covering_programs(programs(wgmma_ws("layer_bwd_filter"), "layer_bwd_filter", 4)), kForbiddenNotes);
}

Config filter_config(int warpgroups, int tile_n, int splits) {
  Config c = config(kMath3xTf32, warpgroups, 3, tile_n);
  c["splits"] = splits;
  return c;
}

// dw's transpose: m = c*r*s = 2304 rows, n = k = 256 columns, t = n*P*Q = 6272 (196 k-tiles) for the
// C256 ResNet stage.
TEST(LayerWgmma, BackwardFilterSplitRules) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();  // 132 SMs
  const Variant& v = wgmma_ws("layer_bwd_filter");
  const Problem c256 = wgmma_shape("layer_bwd_filter", {32, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1});
  // 36 x 4 tiles: splits 1 and 2 fill the GPU; splits 8 (half of it already 4 x 144 CTAs) is pruned.
  EXPECT_TRUE(v.can_implement(c256, filter_config(1, 64, 1), dev).ok);
  EXPECT_TRUE(v.can_implement(c256, filter_config(1, 64, 2), dev).ok);
  const Status many = v.can_implement(c256, filter_config(1, 64, 8), dev);
  EXPECT_FALSE(many.ok);
  EXPECT_TRUE(contains(many.reason, "fill the 132 SMs twice")) << many.reason;
  // The C64 56x56 K64 stage: 9 x 1 tiles of 3136 k-tiles; splits 1 idles most SMs while 4 is allowed.
  const Problem c64 = wgmma_shape("layer_bwd_filter", {32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1});
  const Status idle = v.can_implement(c64, filter_config(1, 64, 1), dev);
  EXPECT_FALSE(idle.ok);
  EXPECT_TRUE(contains(idle.reason, "under a quarter")) << idle.reason;
  EXPECT_TRUE(v.can_implement(c64, filter_config(1, 64, 32), dev).ok);
  // 5 k-tiles (t = 12*12 = 144), split evenly: 4 splits take 1, 1, 1 and 2; 8 would leave splits empty.
  const Problem tiny = wgmma_shape("layer_bwd_filter", {1, 5, 12, 12, 6, 1, 1, 0, 0, 1, 1});
  EXPECT_TRUE(v.can_implement(tiny, filter_config(1, 64, 4), dev).ok);
  const Status empty = v.can_implement(tiny, filter_config(1, 64, 8), dev);
  EXPECT_FALSE(empty.ok);
  EXPECT_TRUE(contains(empty.reason, "> the 5 k-tiles")) << empty.reason;
  // The cost counts the partials written and read back.
  const Cost one = v.cost(c256, filter_config(1, 64, 1)), two = v.cost(c256, filter_config(1, 64, 2));
  EXPECT_DOUBLE_EQ(two.bytes_model - one.bytes_model, 4.0 * (2 * 2 * 2304.0 * 256 + 2304.0 * 256 - 2304.0 * 256));
  EXPECT_DOUBLE_EQ(one.flops_variant, 2.0 * 2304 * 256 * 6272);
}

TEST(LayerWgmma, SpecializedTakesOneOrTwoMmaWarpgroups) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* family : kWgmmaPasses) {
    const Variant& v = wgmma_ws(family);
    EXPECT_TRUE(v.can_implement(resnet(family), config(kMath3xTf32, 1, 4, 128), dev).ok) << family;
    EXPECT_TRUE(v.can_implement(resnet(family), config(kMath3xTf32, 2, 3, 128), dev).ok) << family;
    const Status four = v.can_implement(resnet(family), config(kMath3xTf32, 4, 2), dev);
    EXPECT_FALSE(four.ok) << family;
    EXPECT_TRUE(contains(four.reason, "warpgroups must be 1 or 2")) << four.reason;
    DeviceInfo ampere = dev;
    ampere.cc_major = 8;
    EXPECT_FALSE(v.can_implement(resnet(family), config(kMath3xTf32, 2, 3), ampere).ok) << family;
  }
}

TEST(LayerWgmma, JitTargetIsArchSpecificOnHopper) {
  EXPECT_EQ(jit_target("sm_90"), "sm_90a");
  EXPECT_EQ(jit_target("sm_80"), "sm_80");
  EXPECT_EQ(jit_target("sm_100"), "sm_100");
}

// Every wgmma variant, with a config its family's ResNet shape accepts.
struct WgmmaCase {
  std::string variant, family;
};
const std::vector<WgmmaCase> kAllWgmma = {{"layer_fwd.implicit_gemm_wgmma", "layer_fwd"},
                                          {"layer_bwd_data.implicit_gemm_wgmma", "layer_bwd_data"},
                                          {"layer_fwd.implicit_gemm_wgmma_ws", "layer_fwd"},
                                          {"layer_bwd_data.implicit_gemm_wgmma_ws", "layer_bwd_data"},
                                          {"layer_bwd_filter.implicit_gemm_wgmma_ws", "layer_bwd_filter"}};
Config case_config(const WgmmaCase& k, const char* math) {
  Config c = config(math, 2, 3);
  if (k.family == "layer_bwd_filter") c["waves"] = 1;
  return c;
}

TEST(LayerWgmma, OnlyComputeCapability90) {
  for (const WgmmaCase& k : kAllWgmma) {
    const Variant& v = Registry::instance().get(k.variant);
    DeviceInfo dev = DeviceInfo::offline_sm90();
    const Config c = case_config(k, kMath3xTf32);
    EXPECT_TRUE(v.can_implement(resnet(k.family), c, dev).ok) << k.variant;
    for (auto cc : {std::pair{8, 0}, std::pair{8, 9}, std::pair{10, 0}}) {
      dev.cc_major = cc.first, dev.cc_minor = cc.second;
      const Status s = v.can_implement(resnet(k.family), c, dev);
      EXPECT_FALSE(s.ok) << k.variant << " cc " << cc.first << "." << cc.second;
      EXPECT_TRUE(contains(s.reason, "compute capability 9.0")) << s.reason;
    }
  }
}

TEST(LayerWgmma, PrecisionRulesAndTolerance) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const WgmmaCase& k : kAllWgmma) {
    const Variant& v = Registry::instance().get(k.variant);
    Problem p = resnet(k.family);
    const Status strict = v.can_implement(p, case_config(k, kMathTf32), dev);
    EXPECT_FALSE(strict.ok) << k.variant;
    EXPECT_TRUE(contains(strict.reason, "precision")) << strict.reason;
    EXPECT_FALSE(v.can_implement(p, case_config(k, kMathFp32), dev).ok) << k.variant;
    // 3xTF32 is held to the strict fp32 bound of an fp32 sum of the same length: max(1e-5, 2e-7 sqrt(m)),
    // m = c*r*s = k*r*s = 576 (the floor) or, for backward-filter, n*p*q = 32*56*56 = 100352.
    const double strict_rel = k.family == "layer_bwd_filter" ? 6.33568e-5 : 1e-5;
    EXPECT_NEAR(v.tolerance(p, case_config(k, kMath3xTf32)).rel_l2, strict_rel, 1e-10) << k.variant;
    p.dims["precision"] = 1;
    EXPECT_TRUE(v.can_implement(p, case_config(k, kMathTf32), dev).ok) << k.variant;
    EXPECT_DOUBLE_EQ(v.tolerance(p, case_config(k, kMathTf32)).rel_l2, 3e-3) << k.variant;
    EXPECT_DOUBLE_EQ(v.tolerance(p, case_config(k, kMathTf32)).max_rel, 3e-2) << k.variant;
  }
}

// The C128 ResNet stage's backward-filter (m = c*r*s = 1152, n = k = 128, 784 k-tiles), and a config of the waves
// rule on it.
Problem c128_stage() { return wgmma_shape("layer_bwd_filter", {32, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1}); }
Config waves_config(int warpgroups, int tile_n, int waves) {
  Config c = config(kMath3xTf32, warpgroups, 3, tile_n);
  c["waves"] = waves;
  return c;
}

// Backward-filter's split count is a rule, `waves`: the most splits whose tiles x splits CTAs fill the SMs
// that many times over. The C128 stage (m = c*r*s = 1152, n = 128, 784 k-tiles) has grids of 36 (1 warpgroup,
// 64 columns), 18 (1, 128 and 2, 64) and 9 tiles (2, 128): on 132 SMs, waves 1 gives 3, 7 and 14 splits,
// waves 2 gives 7, 14 and 29, waves 4 gives 14, 29 and 58.
TEST(LayerWgmma, BackwardFilterSplitsComeFromWavesOverTheSms) {
  DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = wgmma_ws("layer_bwd_filter");
  const Problem c128 = c128_stage();
  auto splits = [&](int warpgroups, int tile_n, int waves, const DeviceInfo& d) {
    return v.resolve(c128, waves_config(warpgroups, tile_n, waves), d).at("splits").get<int>();
  };
  const int by_hand[3][4] = {{3, 7, 7, 14}, {7, 14, 14, 29}, {14, 29, 29, 58}};  // waves 1, 2, 4
  const int waves[3] = {1, 2, 4};
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(splits(1, 64, waves[w], dev), by_hand[w][0]) << waves[w];
    EXPECT_EQ(splits(1, 128, waves[w], dev), by_hand[w][1]) << waves[w];
    EXPECT_EQ(splits(2, 64, waves[w], dev), by_hand[w][2]) << waves[w];
    EXPECT_EQ(splits(2, 128, waves[w], dev), by_hand[w][3]) << waves[w];
  }
  DeviceInfo unknown = dev;
  unknown.sms = 0;  // the CPU compile tests: the count is the waves value
  EXPECT_EQ(splits(2, 128, 4, unknown), 4);
  // 5 k-tiles (t = 12*12 = 144): a split needs one, so the rule stops at 5; and a grid that already fills the
  // SMs (C512 7x7: 36 x 4 tiles of 64 x 128) gets 1, not 0.
  const Problem tiny = wgmma_shape("layer_bwd_filter", {1, 5, 12, 12, 6, 1, 1, 0, 0, 1, 1});
  EXPECT_EQ(v.resolve(tiny, waves_config(1, 64, 4), dev).at("splits"), 5);
  const Problem c512 = wgmma_shape("layer_bwd_filter", {32, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1});
  const Config one = waves_config(1, 128, 1);
  EXPECT_EQ(v.resolve(c512, one, dev).at("splits"), 1);
  EXPECT_TRUE(v.can_implement(c512, one, dev).ok) << v.can_implement(c512, one, dev).reason;
  // Resolving twice changes nothing, and a config naming its splits keeps them.
  EXPECT_EQ(v.resolve(c128, v.resolve(c128, one, dev), dev), v.resolve(c128, one, dev));
  EXPECT_EQ(v.resolve(c128, filter_config(1, 64, 5), dev), filter_config(1, 64, 5));
}

// One config fits every shape: the space no longer depends on the shape, so a choice learnt on one layer can
// run on another (a split count fitted to one tile grid was refused on most others).
TEST(LayerWgmma, BackwardFilterSpaceIsTheSameOnEveryShapeAndRunsOnEach) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = wgmma_ws("layer_bwd_filter");
  const std::vector<Problem> shapes = {c128_stage(),
                                       wgmma_shape("layer_bwd_filter", {8, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1}),
                                       wgmma_shape("layer_bwd_filter", {64, 2048, 7, 7, 512, 1, 1, 0, 0, 1, 1}),
                                       wgmma_shape("layer_bwd_filter", {1, 3, 224, 224, 64, 7, 7, 3, 3, 2, 2})};
  const std::vector<Config> first = v.space(shapes[0], dev).enumerate();
  std::set<int> waves;
  for (const Config& c : first) waves.insert(c.at("waves").get<int>());
  EXPECT_EQ(waves, (std::set<int>{1, 2, 4}));
  for (const Problem& p : shapes) {
    EXPECT_EQ(v.space(p, dev).enumerate(), first) << p.key();
    for (const Config& c : first)
      if (c.at("math") == kMath3xTf32) EXPECT_TRUE(v.can_implement(p, c, dev).ok) << p.key() << " " << c.dump();
  }
}

TEST(LayerWgmma, BackwardFilterWavesRefusals) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = wgmma_ws("layer_bwd_filter");
  const Problem c128 = c128_stage();
  Config c = waves_config(1, 128, 0);
  EXPECT_EQ(v.can_implement(c128, c, dev).reason, "waves 0; allowed: an integer from 1 to 1024");
  c["waves"] = 1;
  c["splits"] = 8;  // waves 1 gives 7 here
  EXPECT_EQ(v.can_implement(c128, c, dev).reason,
            "splits 8 beside waves 1, which gives splits 7 here; name one of them");
  c["splits"] = 7;
  EXPECT_TRUE(v.can_implement(c128, c, dev).ok);
  EXPECT_EQ(wgmma_ws("layer_fwd").can_implement(resnet("layer_fwd"), waves_config(1, 128, 1), dev).reason,
            "waves is backward-filter's rule; this pass does not split its sum");
}

// The record's cost is the resolved config's: waves 1 on the C128 stage with 1 warpgroup of 128 columns is
// 7 splits, whose partials are written and read back.
TEST(LayerWgmma, TheRecordsCostIsTheResolvedConfigs) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = wgmma_ws("layer_bwd_filter");
  const Problem c128 = c128_stage();
  const Config c = waves_config(1, 128, 1);
  const json record = Runner::skeleton(v, c128, c, Ceilings{}, dev);
  Config seven = config(kMath3xTf32, 1, 3, 128);
  seven["splits"] = 7;
  EXPECT_DOUBLE_EQ(record.at("bytes_model").get<double>(), v.cost(c128, seven).bytes_model);
  EXPECT_EQ(record.at("config"), c);  // the record keeps the rule, which is what another shape can reuse
  const std::vector<JitProgram> programs = v.programs(c128, v.resolve(c128, c, dev));
  ASSERT_EQ(programs.size(), 1u);
  EXPECT_NE(std::find(programs[0].options.begin(), programs[0].options.end(), "-DSPLITS=7"), programs[0].options.end());
}

// Persistent CTAs only where each takes two tiles or more, all resident at once; else a CTA a tile.
TEST(LayerWgmma, PersistentGridTakesTwoTilesACtaOrNone) {
  EXPECT_EQ(persistent_grid_x(dim3(1568, 1, 1), 264), 264u);   // 5.9 tiles a CTA
  EXPECT_EQ(persistent_grid_x(dim3(784, 2, 1), 132), 66u);     // two columns share the device
  EXPECT_EQ(persistent_grid_x(dim3(132, 1, 1), 66), 66u);      // exactly two
  EXPECT_EQ(persistent_grid_x(dim3(98, 4, 1), 264), 98u);      // 1.5 a CTA: the hardware schedules them
  EXPECT_EQ(persistent_grid_x(dim3(50, 1, 1), 264), 50u);      // fewer tiles than CTAs that fit
  EXPECT_EQ(persistent_grid_x(dim3(40, 300, 1), 264), 40u);    // the columns alone fill the device
  EXPECT_EQ(persistent_grid_x(dim3(40, 100, 3), 264), 40u);
  EXPECT_EQ(persistent_grid_x(dim3(40, 133, 1), 264), 40u);    // one CTA a column would fill half of it
  EXPECT_EQ(persistent_grid_x(dim3(400, 25, 1), 264), 10u);    // 250 of 264: fills enough
  EXPECT_EQ(persistent_grid_x(dim3(1568, 1, 1), 0), 1568u);    // no device told (a plan without its SMs)
}

// The specialized kernel's grid: (row tiles x splits, column tiles, 1), persistent for forward and
// backward-data; backward-filter's splits fill the SMs, so it takes a CTA a (row tile, split).
TEST(LayerWgmma, SpecializedLaunchesStrideOverRowTilesAndSplits) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* family : {"layer_fwd", "layer_bwd_data", "layer_bwd_filter"}) {
    const auto& v = dynamic_cast<const WgmmaGemmVariant&>(wgmma_ws(family));
    Problem p = resnet(family);
    p.dims[std::string(family) == "layer_bwd_data" ? "c" : "k"] = 256;  // the GEMM's 256 columns: 4 column tiles
    Config c = config(kMath3xTf32, 1, 3, 64);
    if (std::string(family) == "layer_bwd_filter") c["splits"] = 5;
    const std::vector<LayerLaunch> launches = v.launches(LayerShape(p), v.resolve(p, c, dev));
    const auto gemm = std::find_if(launches.begin(), launches.end(), [](const LayerLaunch& l) { return l.main; });
    ASSERT_NE(gemm, launches.end()) << family;
    const bool filter = std::string(family) == "layer_bwd_filter";
    const unsigned rows = filter ? 64 * 9 / 64 : 32 * 56 * 56 / 64;  // GEMM rows (c*r*s or n*h*w) / BM
    EXPECT_EQ(gemm->grid.x, filter ? rows * 5 : rows) << family;
    EXPECT_EQ(gemm->grid.y, 4u) << family;
    EXPECT_EQ(gemm->grid.z, 1u) << family;
    EXPECT_EQ(gemm->persistent, !filter) << family;
  }
  // Only the forward pass stages a tile's biases (4 * tile_n bytes); the tap tables are alike (same r, s).
  const auto launch_smem = [&](const char* family) {
    const auto& v = dynamic_cast<const WgmmaGemmVariant&>(wgmma_ws(family));
    const Problem p = resnet(family);
    for (const LayerLaunch& l : v.launches(LayerShape(p), v.resolve(p, config(kMath3xTf32, 1, 3, 128), dev)))
      if (l.main) return l.dynamic_smem;
    return -1;
  };
  EXPECT_EQ(launch_smem("layer_fwd") - launch_smem("layer_bwd_data"), 4 * 128);
}

TEST(LayerWgmma, SpaceValues) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = wgmma("layer_fwd");
  const Problem p = resnet("layer_fwd");
  EXPECT_FALSE(v.can_implement(p, config(kMath3xTf32, 3, 3), dev).ok);
  EXPECT_FALSE(v.can_implement(p, config(kMath3xTf32, 2, 5), dev).ok);
  EXPECT_TRUE(v.can_implement(p, config(kMath3xTf32, 4, 4), dev).ok);  // 197 KB of shared memory fits 227
  EXPECT_TRUE(v.can_implement(p, config(kMath3xTf32, 2, 3, 128), dev).ok);
  const Status wide = v.can_implement(p, config(kMath3xTf32, 4, 3, 128), dev);
  EXPECT_FALSE(wide.ok);
  EXPECT_TRUE(contains(wide.reason, "registers")) << wide.reason;
  // A split filter past 2^31 floats (K = C = 4096, 8x8 taps: 4096 x 262144 x 2) would overflow the
  // kernel's int offsets.
  const Status huge = v.can_implement(wgmma_shape("layer_fwd", {1, 4096, 16, 16, 4096, 8, 8, 0, 0, 1, 1}), config(kMath3xTf32, 2, 3), dev);
  EXPECT_FALSE(huge.ok);
  EXPECT_TRUE(contains(huge.reason, "32-bit")) << huge.reason;
  // Few columns (K = 16 maps, C = 3 backward-data) pad the 64-wide tile with zeros: allowed, the sweep
  // measures what they cost.
  EXPECT_TRUE(v.can_implement(wgmma_shape("layer_fwd", {8, 1, 64, 64, 16, 5, 5, 2, 2, 1, 1}), config(kMath3xTf32, 2, 3), dev).ok);
  EXPECT_TRUE(wgmma("layer_bwd_data")
                  .can_implement(wgmma_shape("layer_bwd_data", {2, 3, 32, 32, 64, 3, 3, 1, 1, 1, 1}), config(kMath3xTf32, 2, 3), dev)
                  .ok);
}

TEST(LayerWgmma, CostCountsTheGemmAndTheSplitFilter) {
  const Variant& v = wgmma("layer_fwd");
  const Problem p = resnet("layer_fwd");
  const Cost c = v.cost(p, config(kMath3xTf32, 4, 4));
  const double m = 32.0 * 56 * 56, n = 64, t = 576;
  EXPECT_DOUBLE_EQ(c.flops_variant, 2 * m * n * t);
  // 18 k-tiles of one 64-column tile, 16 KB each, written once and read by each of the 392 row tiles.
  const double split = 18.0 * 16384;
  EXPECT_DOUBLE_EQ(c.bytes_model, 392 * split + 4 * (m * t + m * n) + split);
  // 128 columns: one tile of 32 KB blocks (half of them zeros past K = 64), A gathered once.
  const Cost wide = v.cost(p, config(kMath3xTf32, 2, 3, 128));
  EXPECT_DOUBLE_EQ(wide.bytes_model, 784 * 2 * split + 4 * (m * t + m * n) + 2 * split);
  // TF32 reads and writes the big tiles only.
  Problem relaxed = p;
  relaxed.dims["precision"] = 1;
  const Cost tf32 = v.cost(relaxed, config(kMathTf32, 4, 4));
  EXPECT_DOUBLE_EQ(tf32.bytes_model, 392 * split / 2 + 4 * (m * t + m * n) + split / 2);
}
