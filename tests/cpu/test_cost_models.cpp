// Cost models and tolerances pinned to numbers worked by hand from their formulas (issue 41): a test that
// compares a function with itself, or only bounds it on one side, lets a dropped term through.
#include <gtest/gtest.h>

#include "harness/family.h"
#include "harness/variant.h"
#include "variants/layer_common/layer_variant.h"
#include "test_support.h"

using namespace convtune;

namespace {

using test::conv2d;

Config register_tiled(int block_x, int block_y, int px, int py, const char* order = "input_rows") {
  return {{"block_x", block_x}, {"block_y", block_y}, {"px", px}, {"py", py}, {"order", order}};
}

double register_tiled_bytes(const Problem& p, const Config& c) {
  return Registry::instance().get("conv2d.register_tiled").cost(p, c).bytes_model;
}

}  // namespace

// conv2d.register_tiled: each block of (block_x * px) x (block_y * py) outputs loads its input tile with
// the halo into shared rows once; the output is written once:
//   bytes = 4 * (blocks * in_y * pitch + h * w), in_y = block_y * py + 2r,
//   pitch = (tile_x - px + win + 3) / 4 * 4 with win = (px + 2r + px - 1) / px * px (a row's window of
//   whole px-vectors, the row rounded up to 16 bytes).
TEST(CostModels, RegisterTiledLoadsTheTileWithItsHaloOncePerBlock) {
  // 1024^2, r = 3, 32x8 threads of 4x2: tile 128 x 16, 8 x 64 = 512 blocks; win = 13/4*4 = 12,
  // pitch = (128 - 4 + 12 + 3)/4*4 = 136, in_y = 16 + 6 = 22: 4 * (512 * 2992 + 1048576).
  EXPECT_DOUBLE_EQ(register_tiled_bytes(conv2d(1024, 1024, 3), register_tiled(32, 8, 4, 2)), 10321920.0);
  // 1000^2, r = 1, 16x4 threads of 1x1: tile 16 x 4, 63 x 250 = 15750 blocks (edges rounded up);
  // win = 3, pitch = 21/4*4 = 20, in_y = 6: 4 * (15750 * 120 + 1000000).
  EXPECT_DOUBLE_EQ(register_tiled_bytes(conv2d(1000, 1000, 1), register_tiled(16, 4, 1, 1)), 11560000.0);
  // h 512, w 768, r = 2, 32x2 threads of 2x4: tile 64 x 8, 12 x 64 = 768 blocks; win = 7/2*2 = 6,
  // pitch = (64 - 2 + 6 + 3)/4*4 = 68, in_y = 8 + 4 = 12: 4 * (768 * 816 + 393216).
  EXPECT_DOUBLE_EQ(register_tiled_bytes(conv2d(512, 768, 2), register_tiled(32, 2, 2, 4)), 4079616.0);
  // The loop order changes the kernel, not the traffic.
  EXPECT_DOUBLE_EQ(register_tiled_bytes(conv2d(512, 768, 2), register_tiled(32, 2, 2, 4, "filter_rows")), 4079616.0);
  // r = 0: no halo; one block of 16 x 4, pitch = (16 - 1 + 1 + 3)/4*4 = 16, in_y = 4: 4 * (64 + 64).
  EXPECT_DOUBLE_EQ(register_tiled_bytes(conv2d(4, 16, 0), register_tiled(16, 2, 1, 2)), 512.0);
}

// The same cost's other figures: the direct-equivalent flops (2 * taps * outputs) and the minimum bytes
// (the image read once, the output written once, the filter once).
TEST(CostModels, RegisterTiledFlopsAndMinimumBytes) {
  const Cost c = Registry::instance().get("conv2d.register_tiled").cost(conv2d(1024, 1024, 3), register_tiled(32, 8, 4, 2));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 49 * 1048576);
  EXPECT_DOUBLE_EQ(c.flops_variant, c.flops);
}

// fp32 (and 3xTF32, which carries fp32's accuracy): rel_l2 = max(1e-5, 2e-7 * sqrt(m)) for a sum of m
// products, max_rel ten times that; plain TF32: 3e-3 and 3e-2 whatever the length.
TEST(Tolerances, LayerTolerancePinnedPerMath) {
  for (const char* math : {kMathFp32, kMath3xTf32}) {
    EXPECT_DOUBLE_EQ(layer_tolerance(1, math).rel_l2, 1e-5) << math;  // the floor
    EXPECT_DOUBLE_EQ(layer_tolerance(1, math).max_rel, 1e-4) << math;
    EXPECT_DOUBLE_EQ(layer_tolerance(2500, math).rel_l2, 1e-5) << math;  // 2e-7 * 50: just at the floor
    EXPECT_DOUBLE_EQ(layer_tolerance(10000, math).rel_l2, 2e-5) << math;  // 2e-7 * 100
    EXPECT_DOUBLE_EQ(layer_tolerance(10000, math).max_rel, 2e-4) << math;
    EXPECT_DOUBLE_EQ(layer_tolerance(1000000, math).rel_l2, 2e-4) << math;  // 2e-7 * 1000
    EXPECT_NEAR(layer_tolerance(100352, math).rel_l2, 6.33568e-5, 1e-10) << math;  // 2e-7 * 316.784
  }
  for (int64_t m : {1, 576, 1000000}) {
    EXPECT_DOUBLE_EQ(layer_tolerance(m, kMathTf32).rel_l2, 3e-3) << m;
    EXPECT_DOUBLE_EQ(layer_tolerance(m, kMathTf32).max_rel, 3e-2) << m;
  }
}

// Through the variants: ResNet's 56x56 stage (N32 C64 K64 3x3): forward and backward-data sum
// c*r*s = k*r*s = 576 products (2e-7 * 24 < 1e-5: the floor), backward-filter n*p*q = 32*56*56 = 100352.
TEST(Tolerances, LayerVariantsUseTheirSumLength) {
  auto resnet = [](const std::string& family, int precision) {
    Problem p = find_family(family).example();
    p.dims["precision"] = precision;
    return p;
  };
  struct Case {
    const char* variant;
    Config fp32, tf32;
    double rel_l2;
  };
  const std::vector<Case> cases = {
      {"layer_fwd.implicit_gemm", {{"math", kMath3xTf32}, {"tile", "128x64x16"}, {"stages", 2}},
       {{"math", kMathTf32}, {"tile", "128x64x16"}, {"stages", 2}}, 1e-5},
      {"layer_bwd_data.implicit_gemm", {{"math", kMath3xTf32}, {"tile", "128x64x16"}, {"stages", 2}},
       {{"math", kMathTf32}, {"tile", "128x64x16"}, {"stages", 2}}, 1e-5},
      {"layer_bwd_filter.implicit_gemm", {{"math", kMath3xTf32}, {"tile", "128x64x16"}, {"stages", 2}, {"splits", 16}},
       {{"math", kMathTf32}, {"tile", "128x64x16"}, {"stages", 2}, {"splits", 16}}, 6.33568e-5},
  };
  for (const Case& k : cases) {
    const Variant& v = Registry::instance().get(k.variant);
    const Problem strict = resnet(v.family(), 0), relaxed = resnet(v.family(), 1);
    EXPECT_NEAR(v.tolerance(strict, k.fp32).rel_l2, k.rel_l2, 1e-10) << k.variant;
    EXPECT_NEAR(v.tolerance(strict, k.fp32).max_rel, 10 * k.rel_l2, 1e-9) << k.variant;
    EXPECT_DOUBLE_EQ(v.tolerance(relaxed, k.tf32).rel_l2, 3e-3) << k.variant;
    EXPECT_DOUBLE_EQ(v.tolerance(relaxed, k.tf32).max_rel, 3e-2) << k.variant;
  }
}
