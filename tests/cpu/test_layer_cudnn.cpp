// The cuDNN baselines of the layer families without a GPU (no cuDNN handle is created): every algorithm of
// each pass in the space, TF32 only where the problem allows it, every test shape accepted, the cost and
// tolerance models by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/cudnn.h"
#include "harness/family.h"
#include "harness/variant.h"
#include "variants/layer_common/layer_variant.h"

#include "tests/cpu/test_support.h"

using namespace convtune;
using namespace convtune::test;

namespace {

const char* const kConvCudnnVariants[] = {"layer_fwd.cudnn", "layer_bwd_data.cudnn", "layer_bwd_filter.cudnn"};

const Variant& cudnn_variant(const std::string& name) { return Registry::instance().get(name); }

Problem cudnn_layer_problem(const std::string& family, json dims) {
  dims["family"] = family;
  return Problem::from_json(dims, "p");
}

// A conv-layer problem of `family` with this precision: N2 C3 7x9, K5 3x3 pad 1 stride 1.
Problem conv_shape(const std::string& family, int precision) {
  json dims = {{"n", 2}, {"c", 3}, {"h", 7}, {"w", 9}, {"k", 5}, {"r", 3}, {"s", 3}, {"pad_h", 1}, {"pad_w", 1},
               {"precision", precision}};
  if (family == "layer_fwd") dims["bias"] = 1;
  return cudnn_layer_problem(family, dims);
}

std::vector<std::string> names_of(const ParamSpace& space, const std::string& param) {
  const Param* p = space.find(param);
  if (!p) return {};
  std::vector<std::string> out;
  for (const json& v : p->values) out.push_back(v.get<std::string>());
  return out;
}

void expect_names(const std::vector<std::string>& got, const std::vector<std::string>& want, const std::string& what) {
  for (const std::string& name : want)
    EXPECT_NE(std::find(got.begin(), got.end(), name), got.end()) << what << " lacks " << name;
  EXPECT_EQ(got.size(), want.size()) << what;
}

TEST(LayerCudnnSpace, EveryAlgorithmOfEachPass) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  std::vector<std::string> forward;
  for (const auto& a : cudnn_algos(CudnnPass::forward)) forward.push_back(a.name);
  ASSERT_EQ(forward.size(), size_t(CUDNN_CONVOLUTION_FWD_ALGO_COUNT));
  const std::vector<std::string> backward_data = {"algo_0", "algo_1", "fft", "fft_tiling", "winograd",
                                                  "winograd_nonfused"};
  ASSERT_EQ(backward_data.size(), size_t(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT));
  const std::vector<std::string> backward_filter = {"algo_0", "algo_1",   "fft",       "algo_3",
                                                    "winograd", "winograd_nonfused", "fft_tiling"};
  ASSERT_EQ(backward_filter.size(), size_t(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT));
  const std::vector<std::vector<std::string>> algos = {forward, backward_data, backward_filter};
  for (size_t i = 0; i < 3; ++i) {
    const Variant& v = cudnn_variant(kConvCudnnVariants[i]);
    const ParamSpace space = v.space(conv_shape(v.family(), 0), dev);
    expect_names(names_of(space, "algo"), algos[i], v.name());
    expect_names(names_of(space, "math"), {"fp32", "tf32"}, v.name());
    EXPECT_EQ(space.params().size(), 2u) << v.name();
  }
}

TEST(LayerCudnnSpace, NumberedAlgorithmsStayNamesInConfigStrings) {
  const Config c = parse_config("algo=algo_0,math=fp32", "cfg");
  EXPECT_TRUE(c.at("algo").is_string());
  EXPECT_TRUE(cudnn_variant("layer_bwd_filter.cudnn").can_implement(conv_shape("layer_bwd_filter", 0), c,
                                                              DeviceInfo::offline_sm90()));
}

TEST(LayerCudnnSpace, PoolingHasOneConfigWithoutParameters) {
  const Variant& v = cudnn_variant("layer_pool.cudnn");
  const ParamSpace space = v.space(example_problem("layer_pool"), DeviceInfo::offline_sm90());
  EXPECT_TRUE(space.params().empty());
  EXPECT_EQ(space.enumerate().size(), 1u);
}

TEST(LayerCudnnMath, Tf32RefusedUnderStrictFp32) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* name : kConvCudnnVariants) {
    const Variant& v = cudnn_variant(name);
    const char* algo = name == std::string("layer_fwd.cudnn") ? "implicit_gemm" : "algo_1";
    const Config tf32 = {{"algo", algo}, {"math", "tf32"}};
    const Status strict = v.can_implement(conv_shape(v.family(), 0), tf32, dev);
    EXPECT_FALSE(strict.ok) << name;
    EXPECT_TRUE(contains(strict.reason, "precision")) << name << ": " << strict.reason;
    EXPECT_TRUE(v.can_implement(conv_shape(v.family(), 1), tf32, dev)) << name;
    Config fp32 = tf32;
    fp32["math"] = "fp32";
    EXPECT_TRUE(v.can_implement(conv_shape(v.family(), 0), fp32, dev)) << name;
  }
}

TEST(LayerCudnnMath, UnknownValuesRefusedWithTheAllowedOnes) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = cudnn_variant("layer_bwd_data.cudnn");
  const Status algo = v.can_implement(conv_shape(v.family(), 1), {{"algo", "implicit_gemm"}, {"math", "fp32"}}, dev);
  EXPECT_FALSE(algo.ok);
  EXPECT_TRUE(contains(algo.reason, "winograd_nonfused")) << algo.reason;
  const Status math = v.can_implement(conv_shape(v.family(), 1), {{"algo", "algo_1"}, {"math", "3xtf32"}}, dev);
  EXPECT_FALSE(math.ok);
  EXPECT_TRUE(contains(math.reason, "fp32, tf32")) << math.reason;
}

// Every config the math allows, on every shape the GPU tests verify.
TEST(LayerCudnnCanImplement, AcceptsEveryTestProblem) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* name : {"layer_fwd.cudnn", "layer_bwd_data.cudnn", "layer_bwd_filter.cudnn", "layer_pool.cudnn"}) {
    const Variant& v = cudnn_variant(name);
    EXPECT_TRUE(v.library()) << name;
    EXPECT_EQ(v.complexity(), 1) << name;
    for (const Problem& p : find_family(v.family()).test_problems())
      for (const Config& c : v.space(p, dev).enumerate()) {
        if (c.contains("math") && c["math"] == "tf32" && !tf32_allowed(p)) continue;
        const Status s = v.can_implement(p, c, dev);
        EXPECT_TRUE(s.ok) << name << " " << p.key() << " " << config_string(c) << ": " << s.reason;
      }
  }
}

// N2 C3 7x9, K5 3x3 pad 1 stride 1: P x Q = 7 x 9, each output 3*3*3 = 27 taps.
TEST(LayerCudnnCost, HandComputed) {
  const double flops = 2.0 * (2 * 5 * 7 * 9) * 27;  // 34020
  const Config c = {{"algo", "fft"}, {"math", "fp32"}};
  const Cost fwd = cudnn_variant("layer_fwd.cudnn").cost(conv_shape("layer_fwd", 0), c);
  EXPECT_DOUBLE_EQ(fwd.flops, flops);
  EXPECT_DOUBLE_EQ(fwd.flops_variant, flops);
  EXPECT_DOUBLE_EQ(fwd.bytes_min, 4.0 * (378 + 135 + 5 + 630));  // x, filter, bias, y
  EXPECT_DOUBLE_EQ(fwd.bytes_model, fwd.bytes_min);
  const Cost data = cudnn_variant("layer_bwd_data.cudnn").cost(conv_shape("layer_bwd_data", 0), c);
  EXPECT_DOUBLE_EQ(data.flops, flops);
  EXPECT_DOUBLE_EQ(data.bytes_min, 4.0 * (630 + 135 + 378));  // dy, filter, dx
  const Cost filter = cudnn_variant("layer_bwd_filter.cudnn").cost(conv_shape("layer_bwd_filter", 0), c);
  EXPECT_DOUBLE_EQ(filter.flops_variant, flops);
  EXPECT_DOUBLE_EQ(filter.bytes_model, 4.0 * (378 + 630 + 135));  // x, dy, dw
  // Pooling N2 C3 8x8, 2x2 stride 2: 2*3*4*4 = 96 outputs of 4 taps.
  const Problem pool = cudnn_layer_problem("layer_pool", {{"n", 2}, {"c", 3}, {"h", 8}, {"w", 8}, {"r", 2}, {"s", 2}, {"u", 2},
                                            {"v", 2}, {"op", 0}});
  const Cost pooling = cudnn_variant("layer_pool.cudnn").cost(pool, Config::object());
  EXPECT_DOUBLE_EQ(pooling.flops, 96.0 * 4);
  EXPECT_DOUBLE_EQ(pooling.bytes_min, 4.0 * (384 + 96));
}

TEST(LayerCudnnTolerance, PerMathAndAlgorithm) {
  const Variant& v = cudnn_variant("layer_bwd_filter.cudnn");
  const Problem p = conv_shape("layer_bwd_filter", 1);
  const Tolerance direct = v.tolerance(p, {{"algo", "algo_1"}, {"math", "fp32"}});
  // n*P*Q = 2*7*9 = 126 terms per dw element: 2e-7 * sqrt(126) = 2.2e-6, under the 1e-5 floor.
  EXPECT_DOUBLE_EQ(direct.rel_l2, 1e-5);
  EXPECT_DOUBLE_EQ(direct.max_rel, 1e-4);
  const Tolerance fft = v.tolerance(p, {{"algo", "fft_tiling"}, {"math", "fp32"}});
  EXPECT_GE(fft.rel_l2, kSpectralFp32Tolerance.rel_l2);
  EXPECT_GE(fft.max_rel, kSpectralFp32Tolerance.max_rel);
  const Tolerance tf32 = v.tolerance(p, {{"algo", "algo_1"}, {"math", "tf32"}});
  EXPECT_DOUBLE_EQ(tf32.rel_l2, 3e-3);
  EXPECT_DOUBLE_EQ(tf32.max_rel, 3e-2);
  const Tolerance pooling = cudnn_variant("layer_pool.cudnn").tolerance(example_problem("layer_pool"), Config::object());
  EXPECT_DOUBLE_EQ(pooling.rel_l2, kDirectFp32Tolerance.rel_l2);
}

}  // namespace
