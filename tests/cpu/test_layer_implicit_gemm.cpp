// The implicit-GEMM variants without a GPU: the GEMM evaluated on the host through the kernel's own
// gather functions equals each family's float64 reference on every test shape (the only test of the index
// math short of a GPU); a sample of the spaces' programs compiles; the precision and splits rules; the cost.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "harness/family.h"
#include "harness/runner.h"
#include "harness/variant.h"
#include "harness/dispatch_table.h"
#include "variants/layer_common/implicit_gemm.h"
#include "variants/layer_common/layer_epilogue.h"
#include "variants/layer_common/layer_variant.h"

#include "tests/cpu/test_support.h"
#include "test_support.h"

using namespace convtune;
using namespace convtune::test;

namespace {

const char* const kImplicitPasses[] = {"layer_fwd", "layer_bwd_data", "layer_bwd_filter"};

using test::random_inputs;

// D = A B through Gemm's gathers and output map, in double, as the kernel's store_element finishes it.
// `writes` counts the stores per output element: each must be written exactly once.
template <class Gemm>
std::vector<double> host_gemm(const GemmShape& s, const float* a, const float* b, const float* bias, Activation act,
                              size_t out_elements, std::vector<int>& writes) {
  std::vector<double> d(out_elements, 0.0);
  writes.assign(out_elements, 0);
  for (int m = 0; m < Gemm::m_size(s); ++m) {
    const typename Gemm::Row row = Gemm::row(s, m);
    for (int n = 0; n < Gemm::n_size(s); ++n) {
      const typename Gemm::Col col = Gemm::col(s, n);
      double acc = 0;
      for (int t = 0; t < Gemm::t_size(s); ++t) {
        const typename Gemm::Tap tap = Gemm::tap(s, t);
        const int ao = Gemm::a_offset(s, row, tap), bo = Gemm::b_offset(s, col, tap);
        if (ao >= 0 && bo >= 0) acc += double(a[ao]) * double(b[bo]);
      }
      if (bias) acc += double(bias[n]);
      acc = activate(act, acc);
      const size_t at = size_t(Gemm::d_row(s, m) + n * Gemm::d_col_stride(s));
      if (at >= out_elements) {
        ADD_FAILURE() << "output index " << at << " out of range (m " << m << ", n " << n << ")";
        continue;
      }
      d[at] = acc;
      ++writes[at];
    }
  }
  return d;
}

std::vector<double> host_gemm_of(const Problem& p, const std::vector<std::vector<float>>& in,
                                  std::vector<int>& writes) {
  const GemmShape s{LayerShape(p)};
  const size_t out = size_t(p.output_elements());
  if (p.family == "layer_fwd") {
    const float* bias = p.at("bias") == 1 ? in.at(2).data() : nullptr;
    return host_gemm<igemm::FwdGemm>(s, in[0].data(), in[1].data(), bias, activation_of(p), out, writes);
  }
  if (p.family == "layer_bwd_data")
    return host_gemm<igemm::BwdDataGemm>(s, in[0].data(), in[1].data(), nullptr, Activation::none, out, writes);
  return host_gemm<igemm::BwdFilterGemm>(s, in[1].data(), in[0].data(), nullptr, Activation::none, out, writes);  // A = dy
}

// Out-of-range rows, columns and taps (as in a partial edge tile) must gather zeros.
template <class Gemm>
void expect_out_of_range_is_zero(const GemmShape& s) {
  const typename Gemm::Row past_m = Gemm::row(s, Gemm::m_size(s));
  const typename Gemm::Col past_n = Gemm::col(s, Gemm::n_size(s));
  const typename Gemm::Tap past_t = Gemm::tap(s, Gemm::t_size(s));
  for (int t = 0; t < Gemm::t_size(s); ++t) {
    EXPECT_EQ(Gemm::a_offset(s, past_m, Gemm::tap(s, t)), -1);
    EXPECT_EQ(Gemm::b_offset(s, past_n, Gemm::tap(s, t)), -1);
  }
  EXPECT_EQ(Gemm::a_offset(s, Gemm::row(s, 0), past_t), -1);
  EXPECT_EQ(Gemm::b_offset(s, Gemm::col(s, 0), past_t), -1);
}

Problem big(const std::string& family, std::vector<int64_t> values) {
  return layer_problem(family, find_family(family).dims(), values);
}

// The 56x56 ResNet stage and the 7x7 stride-2 stem (values in dims() order: n c h w k r s pad_h pad_w u v).
std::vector<Problem> big_shapes(const std::string& family) {
  return {big(family, {32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1}), big(family, {32, 3, 224, 224, 64, 7, 7, 3, 3, 2, 2})};
}

// A sample of each space's programs (compiling all of them took ~3 CPU minutes): per problem the first and
// last implementable config and every 4th between, plus the first of each math not yet in the sample, so
// that every PASS x MATH pairing is considered (tf32 through a precision = 1 copy of the ResNet shape); the
// tests compile covering_programs of these (every define's value at least once; all with CONVTUNE_NVRTC_ALL=1).
std::vector<JitProgram> sampled_programs(const std::string& family) {
  const Variant& v = Registry::instance().get(family + ".implicit_gemm");
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  std::vector<Problem> problems = find_family(family).test_problems();
  for (const Problem& p : big_shapes(family)) problems.push_back(p);
  Problem relaxed = big_shapes(family).front();
  relaxed.dims["precision"] = 1;
  problems.push_back(relaxed);
  std::vector<JitProgram> out;
  std::set<std::string> maths;
  for (const Problem& p : problems) {
    std::vector<Config> ok;
    for (const Config& c : v.space(p, dev).enumerate())
      if (v.can_implement(p, c, dev)) ok.push_back(c);
    for (size_t i = 0; i < ok.size(); ++i) {
      const std::string math = ok[i].at("math").get<std::string>();
      const bool pick = i % 4 == 0 || i + 1 == ok.size() || !maths.count(math);
      if (!pick) continue;
      maths.insert(math);
      for (const JitProgram& prog : v.programs(p, v.resolve(p, ok[i], dev))) out.push_back(prog);
    }
  }
  EXPECT_EQ(maths, (std::set<std::string>{kMathFp32, kMath3xTf32, kMathTf32})) << family;
  return out;
}

Config config(const std::string& math, const std::string& tile, int stages, int splits = 1) {
  return {{"math", math}, {"tile", tile}, {"stages", stages}, {"splits", splits}};
}

}  // namespace

TEST(LayerImplicitGemm, HostGemmThroughGathersMatchesReferences) {
  unsigned seed = 1;
  for (const char* family : kImplicitPasses)
    for (const Problem& p : find_family(family).test_problems()) {
      const auto in = random_inputs(p, seed++);
      const std::vector<double> want = cpu_reference(p, in);
      std::vector<int> writes;
      const std::vector<double> got = host_gemm_of(p, in, writes);
      ASSERT_EQ(got.size(), want.size()) << p.key();
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(writes[i], 1) << p.key() << " element " << i << " written " << writes[i] << " times";
        EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::fabs(want[i]))) << p.key() << " [" << i << "]";
      }
    }
}

TEST(LayerImplicitGemm, OutOfRangeGathersAreZero) {
  for (const char* family : kImplicitPasses)
    for (const Problem& p : find_family(family).test_problems()) {
      const GemmShape s{LayerShape(p)};
      expect_out_of_range_is_zero<igemm::FwdGemm>(s);
      expect_out_of_range_is_zero<igemm::BwdDataGemm>(s);
      expect_out_of_range_is_zero<igemm::BwdFilterGemm>(s);
    }
}

TEST(LayerImplicitGemmCompile, Forward) {
  expect_all_compile(covering_programs(sampled_programs("layer_fwd")));
}
TEST(LayerImplicitGemmCompile, BackwardData) {
  expect_all_compile(covering_programs(sampled_programs("layer_bwd_data")));
}
TEST(LayerImplicitGemmCompile, BackwardFilter) {
  expect_all_compile(covering_programs(sampled_programs("layer_bwd_filter")));
}

TEST(LayerImplicitGemm, Tf32OnlyWithPrecisionOne) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* family : kImplicitPasses) {
    const Variant& v = Registry::instance().get(std::string(family) + ".implicit_gemm");
    Problem p = big_shapes(family).front();
    Config c = config(kMathTf32, "128x64x16", 2);
    if (std::string(family) == "layer_bwd_filter") {
      c.erase("splits");
      c["waves"] = 1;
    }
    const Status strict = v.can_implement(p, c, dev);
    EXPECT_FALSE(strict.ok) << family;
    EXPECT_TRUE(contains(strict.reason, "precision")) << strict.reason;
    p.dims["precision"] = 1;
    EXPECT_TRUE(v.can_implement(p, c, dev).ok) << family << ": " << v.can_implement(p, c, dev).reason;
    c["math"] = kMath3xTf32;
    p.dims["precision"] = 0;
    EXPECT_TRUE(v.can_implement(p, c, dev).ok) << family;
    // 3xTF32 is held to the strict fp32 bound, max(1e-5, 2e-7 sqrt(m)): m = 576 products per output for
    // forward and backward-data (the floor), n*p*q = 32*56*56 = 100352 per dw element for backward-filter.
    const double strict_rel = std::string(family) == "layer_bwd_filter" ? 6.33568e-5 : 1e-5;
    EXPECT_NEAR(v.tolerance(p, c).rel_l2, strict_rel, 1e-10) << family;
    EXPECT_NEAR(v.tolerance(p, config(kMathFp32, "128x64x8", 2)).rel_l2, strict_rel, 1e-10) << family;
  }
}

TEST(LayerImplicitGemm, TileMustMatchMath) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = Registry::instance().get("layer_fwd.implicit_gemm");
  const Problem p = big_shapes("layer_fwd").front();
  EXPECT_FALSE(v.can_implement(p, config(kMathFp32, "128x64x16", 2), dev).ok);
  EXPECT_FALSE(v.can_implement(p, config(kMath3xTf32, "128x64x8", 2), dev).ok);
  EXPECT_FALSE(v.can_implement(p, config(kMathFp32, "7x7x7", 2), dev).ok);
  EXPECT_TRUE(v.can_implement(p, config(kMathFp32, "128x64x8", 3), dev).ok);
}

TEST(LayerImplicitGemm, SplitsAtMostTheKTiles) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = Registry::instance().get("layer_bwd_filter.implicit_gemm");
  // n*P*Q = 2*7*9 = 126 terms: 16 k-tiles of 8, 8 of 16.
  const Problem p = find_family("layer_bwd_filter").test_problems().at(1);
  Config c = config(kMathFp32, "64x64x8", 2);
  c["splits"] = 16;
  EXPECT_TRUE(v.can_implement(p, c, dev).ok) << v.can_implement(p, c, dev).reason;
  c["splits"] = 17;
  EXPECT_FALSE(v.can_implement(p, c, dev).ok);
  c = config(kMath3xTf32, "64x64x16", 2);
  c["splits"] = 8;
  EXPECT_TRUE(v.can_implement(p, c, dev).ok);
  c["splits"] = 16;
  const Status s = v.can_implement(p, c, dev);
  EXPECT_FALSE(s.ok);
  EXPECT_TRUE(contains(s.reason, "k-tiles")) << s.reason;
}

TEST(LayerImplicitGemm, SplitsThatIdleTheGpuArePruned) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();  // 132 SMs
  const Variant& v = Registry::instance().get("layer_bwd_filter.implicit_gemm");
  const Problem p = big_shapes("layer_bwd_filter").front();  // m = 64, n = 576: 9 tiles of 128x64, 1568 k-tiles
  Config c = config(kMath3xTf32, "128x64x16", 2);
  c["splits"] = 1;
  const Status s = v.can_implement(p, c, dev);
  EXPECT_FALSE(s.ok);
  EXPECT_TRUE(contains(s.reason, "quarter")) << s.reason;
  c["splits"] = 4;  // 36 CTAs * 4 >= 132
  EXPECT_TRUE(v.can_implement(p, c, dev).ok) << v.can_implement(p, c, dev).reason;
}

// Backward-filter's split count is a rule (waves), worked by hand: the 64 x 576 dW of the C64 56x56 layer is
// 9 tiles of 128x64 (or of 64x64), 6272 k-tiles of 16; on 132 SMs waves 1, 2, 4 and 8 give floor(w * 132 / 9)
// = 14, 29, 58 and 117 splits; the 126-term test shape's 8 k-tiles of 16 cap them at 8.
TEST(LayerImplicitGemm, BackwardFilterSplitsComeFromWaves) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = Registry::instance().get("layer_bwd_filter.implicit_gemm");
  const Problem p = big_shapes("layer_bwd_filter").front();
  const std::map<int, int> by_hand = {{1, 14}, {2, 29}, {4, 58}, {8, 117}};
  std::set<int> waves;
  for (const Config& c : v.space(p, dev).enumerate()) {
    waves.insert(c.at("waves").get<int>());
    if (c.at("tile") != "128x64x16" && c.at("tile") != "64x64x8") continue;
    EXPECT_EQ(v.resolve(p, c, dev).at("splits"), by_hand.at(c.at("waves").get<int>())) << c.dump();
  }
  EXPECT_EQ(waves, (std::set<int>{1, 2, 4, 8}));
  const Problem short_sum = find_family("layer_bwd_filter").test_problems().at(1);
  Config c = config(kMath3xTf32, "64x64x16", 2);
  c.erase("splits");
  c["waves"] = 8;
  EXPECT_EQ(v.resolve(short_sum, c, dev).at("splits"), 8);
  EXPECT_TRUE(v.can_implement(short_sum, c, dev).ok) << v.can_implement(short_sum, c, dev).reason;
  // The record's bytes are those of the split count the rule gives.
  c = config(kMath3xTf32, "128x64x16", 2);
  c.erase("splits");
  c["waves"] = 1;
  EXPECT_DOUBLE_EQ(Runner::skeleton(v, p, c, Ceilings{}, dev).at("bytes_model").get<double>(),
                   v.cost(p, config(kMath3xTf32, "128x64x16", 2, 14)).bytes_model);
  c["waves"] = -1;
  EXPECT_EQ(v.can_implement(p, c, dev).reason, "waves -1; allowed: an integer from 1 to 1024");
  Config forward = config(kMath3xTf32, "128x64x16", 2);
  forward["waves"] = 1;
  EXPECT_EQ(Registry::instance().get("layer_fwd.implicit_gemm").can_implement(big_shapes("layer_fwd").front(), forward, dev).reason,
            "waves is backward-filter's rule; this pass takes splits (a count)");
}

// Forward and backward-data split t only for grids too small to fill the GPU: the C256 14x14 layer's
// 6272 x 256 GEMM is 196 tiles of 128x64 (splits 2 allowed, 4 not: 392 CTAs already fill 132 SMs twice);
// the 56x56 layer's 1568 tiles take no split.
TEST(LayerImplicitGemm, ForwardSplitsOnlyForSmallGrids) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* family : {"layer_fwd", "layer_bwd_data"}) {
    const Variant& v = Registry::instance().get(std::string(family) + ".implicit_gemm");
    const Problem small = big(family, {32, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1});
    Config c = config(kMath3xTf32, "128x64x16", 2);
    for (int split : {1, 2}) {
      c["splits"] = split;
      EXPECT_TRUE(v.can_implement(small, c, dev).ok) << family << " " << v.can_implement(small, c, dev).reason;
    }
    c["splits"] = 4;
    const Status s = v.can_implement(small, c, dev);
    EXPECT_FALSE(s.ok) << family;
    EXPECT_TRUE(contains(s.reason, "twice")) << s.reason;
    c["splits"] = 2;
    EXPECT_FALSE(v.can_implement(big_shapes(family).front(), c, dev).ok) << family;
  }
}

// Dispatch tables exported before forward splits existed name configs without "splits": completing them
// gives splits 1; backward-filter, which always had the parameter, still requires it (or, now, waves).
TEST(LayerImplicitGemm, AConfigFromBeforeForwardSplitsStillChecks) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* family : kImplicitPasses) {
    const Variant& v = Registry::instance().get(std::string(family) + ".implicit_gemm");
    const Problem p = big_shapes(family).front();
    Config old = config(kMath3xTf32, "64x64x16", 2);
    old.erase("splits");
    const ParamSpace space = v.space(p, dev);
    if (std::string(family) == "layer_bwd_filter") {
      EXPECT_THROW(space.complete_config(old, "cfg"), InputError);
      Config older_table = old;  // before waves, backward-filter named its split count
      older_table["splits"] = 16;
      EXPECT_EQ(space.complete_config(older_table, "cfg"), older_table);
      EXPECT_TRUE(v.can_implement(p, older_table, dev).ok) << v.can_implement(p, older_table, dev).reason;
    } else {
      Config explicit_one = old;
      explicit_one["splits"] = 1;
      EXPECT_EQ(space.complete_config(old, "cfg"), explicit_one) << family;
    }
  }
}

TEST(LayerImplicitGemm, CostByHand) {
  const Variant& v = Registry::instance().get("layer_fwd.implicit_gemm");
  const Problem p = big_shapes("layer_fwd").front();  // m = 32*56*56 = 100352, n = 64, t = 64*9 = 576
  const Cost c = v.cost(p, config(kMathFp32, "128x64x8", 2));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 100352 * 64 * 576);
  EXPECT_DOUBLE_EQ(c.flops_variant, 7398752256.0);
  EXPECT_DOUBLE_EQ(c.bytes_min, 4.0 * (6422528 + 36864 + 6422528));
  // B (64 x 576) re-read by 784 m-tiles, gathered A (100352 x 576) by 1 n-tile, y written once.
  EXPECT_DOUBLE_EQ(c.bytes_model, 4.0 * (784.0 * 36864 + 57802752 + 6422528));

  const Variant& f = Registry::instance().get("layer_bwd_filter.implicit_gemm");
  const Problem q = big_shapes("layer_bwd_filter").front();  // m = 64, n = 576, t = 100352
  Config cf = config(kMathFp32, "64x64x8", 2);
  cf["splits"] = 16;
  const Cost cb = f.cost(q, cf);
  EXPECT_DOUBLE_EQ(cb.flops, 7398752256.0);
  // B (576 x 100352) once per m-tile, A (64 x 100352) by 9 n-tiles, 16 partials written and read, dw written.
  EXPECT_DOUBLE_EQ(cb.bytes_model, 4.0 * (57802752.0 + 9.0 * 6422528 + 2.0 * 16 * 36864 + 36864));
}

TEST(LayerImplicitGemm, SpacesAreSmall) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* family : kImplicitPasses) {
    const Variant& v = Registry::instance().get(std::string(family) + ".implicit_gemm");
    EXPECT_EQ(v.complexity(), 4);
    const Problem p = big_shapes(family).front();
    size_t valid = 0;
    for (const Config& c : v.space(p, dev).enumerate()) valid += v.can_implement(p, c, dev).ok;
    EXPECT_GT(valid, 0u) << family;
    EXPECT_LE(valid, 40u) << family;  // the sweep measures every point
  }
}

// A backward-filter GEMM that fills the GPU by itself can run unsplit: no second kernel, no workspace (a
// split of s keeps s partial dW arrays). The C512 7x7 ResNet layer's dW is 512 x 4608, 288 tiles of 128x64
// (4 x 288 >= 132 SMs), so waves 1 must give splits 1 and can_implement allow it, for SIMT and
// tensor-core tiles; without it every dW of a large layer would allocate splits x 512 x 4608 floats.
TEST(LayerImplicitGemm, BackwardFilterOnAFullGridCanRunUnsplit) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = Registry::instance().get("layer_bwd_filter.implicit_gemm");
  const Problem p = big("layer_bwd_filter", {32, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1});
  std::set<std::string> unsplit_tiles;
  for (const Config& c : v.space(p, dev).enumerate())
    if (v.resolve(p, c, dev).at("splits") == 1 && v.can_implement(p, c, dev).ok)
      unsplit_tiles.insert(c.at("tile").get<std::string>());
  EXPECT_TRUE(unsplit_tiles.count("128x64x16")) << "no unsplit 128x64 tensor-core config";
  EXPECT_TRUE(unsplit_tiles.count("128x64x8")) << "no unsplit 128x64 SIMT config";
}

namespace {

// The value of "-DNAME=value" among a program's options, or -1.
int64_t define_value(const JitProgram& prog, const std::string& name) {
  for (const std::string& o : prog.options)
    if (o.rfind("-D" + name + "=", 0) == 0) return std::stoll(o.substr(name.size() + 3));
  return -1;
}

}  // namespace

// The dispatch model's quantities of each layer pass (Family::model_quantities, run by the rules' stack
// machine) are that pass's GEMM extents, as the kernels' gathers define them, on the test shapes and on
// random ones (strides, padding and non-square filters included).
TEST(LayerModelQuantities, AreThePassesGemmExtents) {
  std::mt19937 rng(5);
  for (const char* family : kImplicitPasses) {
    const Family& f = find_family(family);
    std::vector<std::string> dims;
    for (const auto& d : f.dims()) dims.push_back(d.name);
    const auto quantities = f.model_quantities();
    ASSERT_EQ(quantities.size(), 3u) << family;
    std::vector<Problem> shapes = f.test_problems();
    while (shapes.size() < 60) {
      auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
      const int64_t r = pick(1, 7), s = pick(1, 7);
      Problem p = layer_problem(family, f.dims(), {pick(1, 9), pick(1, 70), pick(r, 60), pick(s, 60), pick(1, 70), r, s,
                                                   pick(0, r - 1), pick(0, s - 1), pick(1, 3), pick(1, 3)});
      shapes.push_back(p);
    }
    for (const Problem& p : shapes) {
      const GemmPass pass = std::string(family) == "layer_fwd"        ? GemmPass::forward
                            : std::string(family) == "layer_bwd_data" ? GemmPass::bwd_data
                                                                      : GemmPass::bwd_filter;
      const GemmExtent e = gemm_extent(pass, LayerShape(p));
      std::vector<int64_t> values;
      for (const auto& d : dims) values.push_back(p.at(d));
      const int64_t want[3] = {e.m, e.n, e.t};
      for (size_t q = 0; q < 3; ++q) {
        const auto steps = compile_quantity(quantities[q].second, dims, family);
        const convtune_dispatch::Quantity quantity{quantities[q].first.c_str(), steps.data(), int(steps.size())};
        EXPECT_EQ(convtune_dispatch::quantity_value(quantity, values.data()), double(want[q]))
            << family << " " << quantities[q].first << " on " << p.key();
      }
    }
  }
}

// A GEMM variant's traits are the CTA tile its kernel is compiled with (BM or 64 x WGS, and BN), along the
// quantities of the same names: from them the model counts a shape's tiles and waves.
TEST(LayerModelQuantities, GemmVariantsTraitsAreTheirCompiledTiles) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  int checked = 0;
  for (const char* family : kImplicitPasses)
    for (const std::string strategy : {"implicit_gemm", "implicit_gemm_wgmma", "implicit_gemm_wgmma_ws"}) {
      const Variant* v = Registry::instance().find(std::string(family) + "." + strategy);
      if (!v) continue;
      const Problem p = big_shapes(family).front();
      for (const Config& c : v->space(p, dev).enumerate()) {
        if (!v->can_implement(p, c, dev).ok) continue;
        const auto traits = v->model_traits(c);
        ASSERT_EQ(traits.size(), 2u) << v->name();
        const JitProgram prog = v->programs(p, v->resolve(p, c, dev)).front();
        const int64_t bm = define_value(prog, "BM") > 0 ? define_value(prog, "BM") : 64 * define_value(prog, "WGS");
        EXPECT_EQ(traits[0], std::make_pair(std::string("gemm_m"), bm)) << v->name() << " " << c.dump();
        EXPECT_EQ(traits[1], std::make_pair(std::string("gemm_n"), define_value(prog, "BN"))) << v->name() << " " << c.dump();
        ++checked;
      }
    }
  EXPECT_GE(checked, 20);
}
