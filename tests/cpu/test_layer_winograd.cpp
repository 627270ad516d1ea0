// The Winograd F(m x m,3x3) variants, m = 2 and 4: the whole method run on the CPU in fp32 through the kernels' own
// transform functions (layer_winograd_tiles.cuh) against the float64 references, within the variant's
// tolerance; the shapes it refuses; its cost; and every program compiling with NVRTC.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "harness/family.h"
#include "harness/variant.h"
#include "variants/layer_common/layer_epilogue.h"
#include "variants/layer_common/layer_variant.h"
#include "variants/layer_common/winograd.h"

#include "tests/cpu/test_support.h"
#include "test_support.h"

using namespace convtune;
using namespace convtune::test;

namespace {

using test::random_inputs;

// Backward-filter in fp32 as the GPU runs it: per tile, x's transformed tile and dy's transformed block,
// their products summed over images and tiles per transform point, then G^T M G.
template <int M>
std::vector<double> host_filter_gradient(const Problem& p, const std::vector<std::vector<float>>& in) {
  constexpr int T = M + 2, P = T * T;
  const LayerShape l(p);
  const wino::WinoDims d = winograd_dims(LayerPass::bwd_filter, M, l);
  std::vector<float> m(size_t(P) * d.co * d.ci, 0.f);  // [co][ci][P]
  for (int64_t image = 0; image < l.n; ++image)
    for (int tile = 0; tile < d.tiles(); ++tile) {
      std::vector<float> v(size_t(P) * d.ci);
      for (int ci = 0; ci < d.ci; ++ci) {
        float tile_in[T][T], t[T][T];
        wino::load_input_tile<M>(in[0].data() + (image * d.ci + ci) * d.ih * d.iw, d, tile / d.tw, tile % d.tw, tile_in);
        wino::input_tile<M>(tile_in, t);
        std::copy(&t[0][0], &t[0][0] + P, v.begin() + size_t(ci) * P);
      }
      for (int co = 0; co < d.co; ++co) {
        float g[M][M], e[T][T];
        wino::load_gradient_tile<M>(in[1].data() + (image * d.co + co) * d.oh * d.ow, d, tile / d.tw, tile % d.tw, g);
        wino::gradient_tile<M>(g, e);
        for (int ci = 0; ci < d.ci; ++ci)
          for (int x = 0; x < P; ++x) m[(size_t(co) * d.ci + ci) * P + x] += e[x / T][x % T] * v[size_t(ci) * P + x];
      }
    }
  std::vector<double> dw(size_t(p.output_elements()), std::nan(""));
  for (int co = 0; co < d.co; ++co)
    for (int ci = 0; ci < d.ci; ++ci) {
      float t[T][T], g[3][3];
      std::copy(m.begin() + (size_t(co) * d.ci + ci) * P, m.begin() + (size_t(co) * d.ci + ci + 1) * P, &t[0][0]);
      wino::filter_gradient_tile<M>(t, g);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) dw[size_t(((co * d.ci + ci) * 3 + i) * 3 + j)] = g[i][j];
    }
  return dw;
}

// The method in fp32 as the GPU runs it: U, V, the t^2 products summed over ci, then A^T M A, bias, ReLU.
template <int M>
std::vector<double> host_winograd(const Problem& p, LayerPass pass, const std::vector<std::vector<float>>& in) {
  if (pass == LayerPass::bwd_filter) return host_filter_gradient<M>(p, in);
  constexpr int T = M + 2, P = T * T;
  const LayerShape l(p);
  const wino::WinoDims d = winograd_dims(pass, M, l);
  const float* bias = pass == LayerPass::forward && p.at("bias") == 1 ? in.at(2).data() : nullptr;
  const Activation act = pass == LayerPass::forward ? activation_of(p) : Activation::none;
  std::vector<float> u(size_t(P) * d.co * d.ci);  // [co][ci][P]
  for (int co = 0; co < d.co; ++co)
    for (int ci = 0; ci < d.ci; ++ci) {
      float g[3][3], t[T][T];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) g[i][j] = in[1][size_t(wino::filter_index(int(pass), d, co, ci, i, j))];
      wino::filter_tile<M>(g, t);
      std::copy(&t[0][0], &t[0][0] + P, u.begin() + (size_t(co) * d.ci + ci) * P);
    }
  std::vector<double> out(size_t(p.output_elements()), std::nan(""));
  for (int64_t image = 0; image < l.n; ++image)
    for (int tile = 0; tile < d.tiles(); ++tile) {
      std::vector<float> v(size_t(P) * d.ci);
      for (int ci = 0; ci < d.ci; ++ci) {
        float tile_in[T][T], t[T][T];
        wino::load_input_tile<M>(in[0].data() + (image * d.ci + ci) * d.ih * d.iw, d, tile / d.tw, tile % d.tw, tile_in);
        wino::input_tile<M>(tile_in, t);
        std::copy(&t[0][0], &t[0][0] + P, v.begin() + size_t(ci) * P);
      }
      for (int co = 0; co < d.co; ++co) {
        float m[T][T] = {}, y[M][M];
        for (int ci = 0; ci < d.ci; ++ci)
          for (int x = 0; x < P; ++x) m[x / T][x % T] += u[(size_t(co) * d.ci + ci) * P + x] * v[size_t(ci) * P + x];
        wino::output_tile<M>(m, y);
        for (int i = 0; i < M; ++i)
          for (int j = 0; j < M; ++j) {
            const int oy = M * (tile / d.tw) + i, ox = M * (tile % d.tw) + j;
            if (oy >= d.oh || ox >= d.ow) continue;
            float value = y[i][j];
            if (bias) value += bias[co];
            value = float(activate(act, value));
            out[size_t(((image * d.co + co) * d.oh + oy) * d.ow + ox)] = value;
          }
      }
    }
  return out;
}

std::vector<double> host_winograd(int m, const Problem& p, LayerPass pass, const std::vector<std::vector<float>>& in) {
  return m == 2 ? host_winograd<2>(p, pass, in) : host_winograd<4>(p, pass, in);
}

// n c h w k r s pad_h pad_w u v (+ bias relu for the forward pass, then precision).
Problem winograd_shape(const std::string& family, std::vector<int64_t> values) {
  if (family == "layer_fwd") values.insert(values.end(), {1, 1});
  values.push_back(0);
  return layer_problem(family, find_family(family).dims(), values);
}

std::vector<Problem> shapes(const std::string& family) {
  return {winograd_shape(family, {2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1}), winograd_shape(family, {3, 6, 11, 8, 9, 3, 3, 0, 2, 1, 1}),
          winograd_shape(family, {1, 64, 6, 5, 32, 3, 3, 2, 0, 1, 1}), winograd_shape(family, {1, 1, 1, 1, 1, 3, 3, 1, 1, 1, 1})};
}

const Variant& winograd_variant(const std::string& family) { return Registry::instance().get(family + ".winograd"); }

}  // namespace

TEST(LayerWinograd, HostMethodMatchesReferencesWithinTolerance) {
  unsigned seed = 7;
  for (int m : {2, 4})
    for (const char* family : kLayerPassFamilies)
      for (const Problem& p : shapes(family)) {
        const auto in = random_inputs(p, seed++);
        const auto [rel_l2, max_rel] = reference_errors(host_winograd(m, p, layer_pass_of(family), in), cpu_reference(p, in));
        const Tolerance tol = winograd_variant(family).tolerance(p, {{"tile", m}, {"chunk", 1}});
        EXPECT_LE(rel_l2, tol.rel_l2) << p.key() << " m " << m;
        EXPECT_LE(max_rel, tol.max_rel) << p.key() << " m " << m;
        std::printf("m %d %s: rel_l2 %.2e (bound %.1e), max_rel %.2e (bound %.1e)\n", m, p.key().c_str(), rel_l2,
                    tol.rel_l2, max_rel, tol.max_rel);
      }
}

// The C256 14x14 layer's 2304-term sums, where F(4x4,3x3)'s larger rounding matters most: within the bound
// with room to spare on one image's worth of tiles.
TEST(LayerWinograd, F4x4WithinTheBoundOnTheWidestLayer) {
  unsigned seed = 99;
  for (const char* family : {"layer_fwd", "layer_bwd_data"}) {
    const Problem p = winograd_shape(family, {1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1});
    const auto in = random_inputs(p, seed++);
    const auto [rel_l2, max_rel] = reference_errors(host_winograd(4, p, layer_pass_of(family), in), cpu_reference(p, in));
    const Tolerance tol = winograd_variant(family).tolerance(p, {{"tile", 4}, {"chunk", 1}});
    EXPECT_LE(rel_l2, tol.rel_l2 / 2) << family;
    EXPECT_LE(max_rel, tol.max_rel / 2) << family;
    std::printf("m 4 %s: rel_l2 %.2e (bound %.1e), max_rel %.2e (bound %.1e)\n", p.key().c_str(), rel_l2, tol.rel_l2,
                max_rel, tol.max_rel);
  }
}

TEST(LayerWinograd, RefusesWhatWinogradOf3x3CannotDo) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* family : kLayerPassFamilies) {
    const Variant& v = winograd_variant(family);
    const Config c{{"tile", 2}, {"chunk", 1}};
    EXPECT_TRUE(v.can_implement(winograd_shape(family, {1, 2, 8, 8, 2, 3, 3, 1, 1, 1, 1}), c, dev).ok);
    const Status five = v.can_implement(winograd_shape(family, {1, 2, 8, 8, 2, 5, 5, 2, 2, 1, 1}), c, dev);
    EXPECT_FALSE(five.ok);
    EXPECT_TRUE(contains(five.reason, "r = s = 3")) << five.reason;
    const Status strided = v.can_implement(winograd_shape(family, {1, 2, 8, 8, 2, 3, 3, 1, 1, 2, 1}), c, dev);
    EXPECT_FALSE(strided.ok);
    EXPECT_TRUE(contains(strided.reason, "stride 1")) << strided.reason;
    EXPECT_FALSE(v.can_implement(winograd_shape(family, {2, 2, 8, 8, 2, 3, 3, 1, 1, 1, 1}), {{"tile", 2}, {"chunk", 3}}, dev).ok);
    const Status three = v.can_implement(winograd_shape(family, {2, 2, 8, 8, 2, 3, 3, 1, 1, 1, 1}), {{"tile", 3}, {"chunk", 1}}, dev);
    EXPECT_FALSE(three.ok);
    EXPECT_TRUE(contains(three.reason, "tile 3 is not one of 2, 4")) << three.reason;
  }
}

// Backward-filter's sums run over every image and tile: the C128 layer's 6272 tiles per transform point
// (m = 2). dy's 2x2 block through A = [1 0; 1 1; 1 -1; 0 -1]: 2 adds per column, then 2 per row of 4.
TEST(LayerWinograd, BackwardFilterCostByHand) {
  const Problem p = winograd_shape("layer_bwd_filter", {32, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1});
  const Cost c = winograd_variant("layer_bwd_filter").cost(p, {{"tile", 2}, {"chunk", 32}});
  const double tiles = 32.0 * 196;
  EXPECT_DOUBLE_EQ(c.flops_variant, 2.0 * 16 * 128 * 128 * tiles + 32.0 * 128 * tiles + 12.0 * 128 * tiles);
  EXPECT_DOUBLE_EQ(c.bytes_model, c.bytes_min + 4.0 * 16 * (128.0 * 128 * 2 + 2.0 * 256 * tiles));
}

// The C128 28x28 layer: 32 images of 14 x 14 tiles (m = 2) or 7 x 7 (m = 4), ci = co = 128, chunk 8
// (4 chunks). Transform flops counted by hand from the matrices: m = 2, B^T's rows hold 2 terms (32 per
// tile), A^T's 3 (24); m = 4, B^T's rows cost 4, 5, 5, 5, 5, 4 adds and scalings over 6 + 6 columns and
// rows (336), A^T's 4, 5, 5, 6 over 6 + 4 (200).
TEST(LayerWinograd, CostByHand) {
  const Problem p = winograd_shape("layer_fwd", {32, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1});
  const Cost two = winograd_variant("layer_fwd").cost(p, {{"tile", 2}, {"chunk", 8}});
  double tiles = 32.0 * 196;
  EXPECT_DOUBLE_EQ(two.flops, 2.0 * 32 * 128 * 784 * 128 * 9);
  EXPECT_DOUBLE_EQ(two.flops_variant, 2.0 * 16 * 128 * 128 * tiles + 32.0 * 128 * tiles + 24.0 * 128 * tiles);
  EXPECT_DOUBLE_EQ(two.bytes_model, two.bytes_min + 4.0 * 16 * (128.0 * 128 * 5 + 2.0 * 256 * tiles));
  const Cost four = winograd_variant("layer_fwd").cost(p, {{"tile", 4}, {"chunk", 8}});
  tiles = 32.0 * 49;
  EXPECT_DOUBLE_EQ(four.flops_variant, 2.0 * 36 * 128 * 128 * tiles + 336.0 * 128 * tiles + 200.0 * 128 * tiles);
  EXPECT_DOUBLE_EQ(four.bytes_model, four.bytes_min + 4.0 * 36 * (128.0 * 128 * 5 + 2.0 * 256 * tiles));
}

TEST(LayerWinogradCompile, EveryPassAndEpilogue) {
  std::vector<JitProgram> programs;
  for (int m : {2, 4})
    for (const char* family : kLayerPassFamilies)
      for (const Problem& p : shapes(family))
        for (const JitProgram& prog : winograd_variant(family).programs(p, {{"tile", m}, {"chunk", 1}})) programs.push_back(prog);
  Problem plain = winograd_shape("layer_fwd", {2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1});
  plain.dims["bias"] = 0;
  plain.dims["relu"] = 0;
  for (const JitProgram& prog : winograd_variant("layer_fwd").programs(plain, {{"tile", 4}, {"chunk", 1}})) programs.push_back(prog);
  expect_all_compile(covering_programs(programs));  // every pass's sources and every epilogue define at least once
}

// A squashing activation after F(4x4,3x3) on the C64 layer: verified on the family's inputs (a unit-scale
// sum) against the family's widened bound. With unit inputs, tanh took the GPU's max_rel past 1e-4.
TEST(LayerWinograd, SquashingActivationsVerifyAtUnitScale) {
  const Family& fam = find_family("layer_fwd");
  unsigned seed = 5;
  for (int act : {1, 2, 3}) {
    const Problem p = layer_problem("layer_fwd", fam.dims(), {1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, act, 0});
    EXPECT_DOUBLE_EQ(p.operands().at(1).amplitude, act == 1 ? 1.0 : 0.125);  // 3 / sqrt(64 * 3 * 3)
    const Tolerance method = winograd_variant("layer_fwd").tolerance(p, {{"tile", 4}, {"chunk", 1}});
    const Tolerance tol = fam.output_tolerance(p, method);
    const double widen_l2 = act == 3 ? 2 : 1, widen_max = act == 3 ? 8 : act == 2 ? 4 : 1;
    EXPECT_DOUBLE_EQ(tol.rel_l2, widen_l2 * 1e-5) << act;  // the method's 1e-5: 2e-7 sqrt(576) is smaller
    EXPECT_DOUBLE_EQ(tol.max_rel, widen_max * 1e-4) << act;
    const auto in = random_inputs(p, seed++);
    const auto [rel_l2, max_rel] = reference_errors(host_winograd(4, p, LayerPass::forward, in), cpu_reference(p, in));
    EXPECT_LE(rel_l2, tol.rel_l2 / 2) << act;
    EXPECT_LE(max_rel, tol.max_rel / 2) << act;
    std::printf("act %d: rel_l2 %.2e (bound %.1e), max_rel %.2e (bound %.1e)\n", act, rel_l2, tol.rel_l2, max_rel,
                tol.max_rel);
  }
}
