// layer_fwd's bias and activation (none, ReLU, sigmoid, tanh) without a GPU: the float64 reference against
// hand-worked values; the kernels' fp32 activation (layer_epilogue.cuh, host code too) against it; a bad
// activation in a spec; problem keys of the shipped tables unchanged; the `epilogue` parameter (fused or a
// separate kernel) and cuDNN's fused call's documented refusals; every forward kernel compiled with the new
// activations. The GPU suite (tests/gpu/test_layer_epilogue_gpu.cpp) runs them all against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "harness/dispatch_table.h"
#include "harness/family.h"
#include "harness/spec.h"
#include "harness/variant.h"
#include "variants/layer_common/kernels/layer_epilogue.cuh"
#include "variants/layer_fwd/layer_fwd.h"
#include "variants/layer_fwd/separate_epilogue.h"

#include "tests/cpu/test_support.h"

using namespace convtune;
using namespace convtune::test;

namespace {

// The variants whose kernels fuse the epilogue, and so offer `epilogue` = separate.
const char* const kFusingVariants[] = {"layer_fwd.direct_tiled", "layer_fwd.implicit_gemm",
                                       "layer_fwd.implicit_gemm_wgmma", "layer_fwd.implicit_gemm_wgmma_ws",
                                       "layer_fwd.winograd"};
const Activation kActivations[] = {Activation::none, Activation::relu, Activation::sigmoid, Activation::tanh};

Problem forward(json dims) {
  dims["family"] = "layer_fwd";
  return Problem::from_json(dims, "p");
}

// n c h w k r s pad_h pad_w u v (stride 1, 3x3: every variant runs it), then bias and activation.
Problem awkward(bool bias, Activation act) {
  return forward({{"n", 2}, {"c", 33}, {"h", 9}, {"w", 11}, {"k", 70}, {"r", 3}, {"s", 3}, {"pad_h", 1},
                  {"pad_w", 1}, {"bias", bias ? 1 : 0}, {"relu", int(act)}});
}

const Variant& variant(const std::string& name) { return Registry::instance().get(name); }

// The variant's first config (enumeration order) that can run `p` on an offline H100, with `epilogue`.
Config first_config(const Variant& v, const Problem& p, const char* epilogue) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (Config c : v.space(p, dev).enumerate()) {
    if (c.contains(kEpilogueParam)) c[kEpilogueParam] = epilogue;
    if (v.can_implement(p, c, dev)) return c;
  }
  ADD_FAILURE() << v.name() << " runs no config of " << p.key();
  return Config::object();
}

}  // namespace

// ---- the convention ------------------------------------------------------------------------------------

// x = [1, -2] (one 1 x 2 image), two 1x1 filters 2 and 0.5, bias [0.5, -1]:
//   y = [2*1 + 0.5, 2*(-2) + 0.5, 0.5*1 - 1, 0.5*(-2) - 1] = [2.5, -3.5, -0.5, -2], then the activation:
//   sigmoid(v) = 1 / (1 + e^-v), tanh(v); the values below from Python's math.exp and math.tanh.
TEST(LayerEpilogue, ReferenceAppliesEachActivationAfterTheBias) {
  const std::vector<float> x = {1, -2}, filter = {2, 0.5f}, bias = {0.5f, -1};
  const json shape = {{"n", 1}, {"c", 1}, {"h", 1}, {"w", 2}, {"k", 2}, {"r", 1}, {"s", 1}, {"bias", 1}};
  const std::vector<std::vector<double>> want = {
      {2.5, -3.5, -0.5, -2},
      {2.5, 0, 0, 0},
      {0.9241418199787566, 0.02931223075135632, 0.3775406687981454, 0.11920292202211755},
      {0.9866142981514303, -0.9981778976111987, -0.46211715726000974, -0.9640275800758169}};
  for (Activation act : kActivations) {
    json dims = shape;
    dims["relu"] = int(act);
    expect_values(cpu_reference(forward(dims), {x, filter, bias}), want[size_t(act)], activation_name(act));
  }
  // Without a bias the activation takes the sum alone: tanh of [2, -4, 0.5, -1].
  json plain = shape;
  plain["bias"] = 0;
  plain["relu"] = int(Activation::tanh);
  expect_values(cpu_reference(forward(plain), {x, filter}),
                {0.9640275800758169, -0.999329299739067, 0.46211715726000974, -0.7615941559557649}, "tanh, no bias");
}

// What the kernels compute in fp32 (layer_activation<ACT>, here with the host's expf) is the reference's
// activation within the bounds layer_epilogue.cuh states: a few ulp, sigmoid 1e-6 relative (its tails
// included), tanh 3e-7 absolute (near 0 too); and a NaN stays a NaN.
TEST(LayerEpilogue, KernelActivationIsTheReferences) {
  float (*const kernel[])(float) = {layer_activation<0>, layer_activation<1>, layer_activation<2>,
                                          layer_activation<3>};
  std::vector<float> values = {0.f, -0.f, 1e-7f, -1e-6f, 1e-4f, -3e-3f, 0.02f, -0.4f};
  for (float v = -20.f; v <= 20.f; v += 0.0625f * 3.f) values.push_back(v);
  for (Activation act : kActivations)
    for (float v : values) {
      const float got = kernel[int(act)](v);
      const double want = activate(act, double(v));
      const double bound = act == Activation::tanh ? 3e-7 : (act == Activation::sigmoid ? 1e-6 : 4e-7) * std::abs(want);
      EXPECT_NEAR(got, want, bound + 1e-37) << activation_name(act) << "(" << v << ")";
    }
  for (Activation act : kActivations)
    EXPECT_TRUE(std::isnan(kernel[int(act)](std::numeric_limits<float>::quiet_NaN()))) << activation_name(act);
}

// ---- the activation dim --------------------------------------------------------------------------------

TEST(LayerEpilogue, BadActivationNamesTheFieldAndItsValues) {
  for (int bad : {4, -1}) {
    json spec = {{"name", "t"},
                 {"problems",
                  {{{"family", "layer_fwd"}, {"n", 1}, {"c", 1}, {"h", 4}, {"w", 4}, {"k", 1}, {"r", 3}, {"s", 3},
                    {"relu", {1, bad}}}}}};
    const std::string e = input_error([&] { SweepSpec::parse(spec); });
    for (const std::string part : {std::string("spec.problems[0].relu"), std::to_string(bad), std::string("0..3"),
                                   std::string("0 = none, 1 = ReLU, 2 = sigmoid, 3 = tanh")})
      EXPECT_TRUE(contains(e, part)) << "'" << e << "' lacks '" << part << "'";
  }
}

// A problem with relu = 0 or 1 keeps the key it had, so the shipped runs and dispatch tables still name it:
// every layer_fwd entry of the shipped fleet table has its recorded key, and the table still loads (its
// models' features count the family's dims).
TEST(LayerEpilogue, ShippedProblemKeysStayTheSame) {
  EXPECT_EQ(forward({{"n", 32}, {"c", 64}, {"h", 56}, {"w", 56}, {"k", 64}, {"r", 3}, {"s", 3}, {"pad_h", 1},
                     {"pad_w", 1}, {"bias", 1}, {"relu", 1}})
                .key(),
            "layer_fwd/bias=1,c=64,h=56,k=64,n=32,pad_h=1,pad_w=1,precision=0,r=3,relu=1,s=3,u=1,v=1,w=56");
  std::ifstream in(std::string(CONVTUNE_SOURCE_DIR) + "/results/fleet-h100-h200/dispatch.json");
  ASSERT_TRUE(in) << "the shipped fleet table";
  const json fleet = json::parse(in);
  EXPECT_NO_THROW(DispatchTable{fleet});
  int checked = 0;
  for (const json& table : fleet.at("tables"))
    for (const json& e : table.at("entries")) {
      if (e.at("problem").at("family") != "layer_fwd") continue;
      EXPECT_EQ(Problem::from_json(e.at("problem")).key(), e.at("problem_key").get<std::string>());
      ++checked;
    }
  EXPECT_GT(checked, 0);
}

// ---- fused or separate ---------------------------------------------------------------------------------

// Plain problems keep their spaces (and so their candidates' names); a bias or an activation adds the choice,
// whose absence means fused.
TEST(LayerEpilogue, EpilogueParameterOnlyWhereThereIsOne) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* name : kFusingVariants) {
    const Variant& v = variant(name);
    EXPECT_EQ(v.space(awkward(false, Activation::none), dev).find(kEpilogueParam), nullptr) << name;
    for (const Problem& p : {awkward(true, Activation::none), awkward(false, Activation::tanh)}) {
      const ParamSpace space = v.space(p, dev);
      const Param* param = space.find(kEpilogueParam);
      ASSERT_NE(param, nullptr) << name << " " << p.key();
      EXPECT_EQ(param->values, (std::vector<json>{kEpilogueFused, kEpilogueSeparate})) << name;
      EXPECT_EQ(param->absent, kEpilogueFused) << name;
    }
  }
  for (const char* name : {"layer_fwd.im2col_gemm", "layer_fwd.cudnn", "layer_fwd.cudnn_fused"})
    EXPECT_EQ(variant(name).space(awkward(true, Activation::relu), dev).find(kEpilogueParam), nullptr) << name;
}

// Fused: one program with the problem's BIAS and ACT. Separate: the plain problem's programs, then the epilogue
// kernel's, costing y read and written once more and the bias read.
TEST(LayerEpilogue, SeparateIsThePlainKernelThenTheEpilogueKernel) {
  const Problem p = awkward(true, Activation::sigmoid), plain = without_epilogue(p);
  for (const char* name : kFusingVariants) {
    const Variant& v = variant(name);
    const Config fused = first_config(v, p, kEpilogueFused), separate = first_config(v, p, kEpilogueSeparate);
    const Config bare = without_epilogue_choice(separate);
    for (const JitProgram& program : v.programs(p, fused)) {
      EXPECT_TRUE(contains(program.describe(), "-DACT=2")) << name << ": " << program.describe();
      EXPECT_TRUE(contains(program.describe(), "-DBIAS=1")) << name << ": " << program.describe();
    }
    std::vector<JitProgram> want = v.programs(plain, bare);
    want.push_back(separate_epilogue_program(p));
    const std::vector<JitProgram> got = v.programs(p, separate);
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].describe(), want[i].describe()) << name;
    EXPECT_TRUE(contains(got.back().describe(), "layer_fwd_epilogue.cuh")) << got.back().describe();
    const Cost one = v.cost(plain, bare), two = v.cost(p, separate);
    const LayerShape l(p);
    EXPECT_DOUBLE_EQ(two.bytes_model - one.bytes_model, 8.0 * double(l.y_elements()) + 4.0 * double(l.k)) << name;
    EXPECT_DOUBLE_EQ(two.bytes_min, p.min_bytes()) << name;
    EXPECT_DOUBLE_EQ(v.cost(p, fused).bytes_min, p.min_bytes()) << name;
  }
}

// cudnnConvolutionBiasActivationForward fuses ReLU, or the identity with implicit_precomp_gemm only (cuDNN's
// API reference): sigmoid and tanh, and a bias alone with another algorithm, are refused with that reason.
TEST(LayerEpilogue, CudnnFusedRefusesWhatCudnnDocumentsItCannot) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = variant("layer_fwd.cudnn_fused");
  const auto config = [](const char* algo) { return Config{{"algo", algo}, {"math", "fp32"}}; };
  for (Activation act : {Activation::sigmoid, Activation::tanh}) {
    const Status s = v.can_implement(awkward(true, act), config("implicit_precomp_gemm"), dev);
    EXPECT_FALSE(s.ok);
    EXPECT_TRUE(contains(s.reason, "fuses only ReLU or the identity")) << s.reason;
    EXPECT_TRUE(contains(s.reason, activation_name(act))) << s.reason;
    EXPECT_TRUE(variant("layer_fwd.cudnn").can_implement(awkward(true, act), config("gemm"), dev).ok);
  }
  const Status identity = v.can_implement(awkward(true, Activation::none), config("gemm"), dev);
  EXPECT_FALSE(identity.ok);
  EXPECT_TRUE(contains(identity.reason, "only with implicit_precomp_gemm")) << identity.reason;
  EXPECT_TRUE(v.can_implement(awkward(true, Activation::none), config("implicit_precomp_gemm"), dev).ok);
  EXPECT_TRUE(v.can_implement(awkward(true, Activation::relu), config("gemm"), dev).ok);
  EXPECT_TRUE(v.can_implement(awkward(false, Activation::relu), config("gemm"), dev).ok);  // a zero bias
  const Status plain = v.can_implement(awkward(false, Activation::none), config("implicit_precomp_gemm"), dev);
  EXPECT_FALSE(plain.ok);
  EXPECT_TRUE(contains(plain.reason, "nothing to fuse")) << plain.reason;
}

// ---- NVRTC ---------------------------------------------------------------------------------------------

// Sigmoid and tanh in every forward kernel, fused (the test shapes hold them only where a kernel's rules
// allow those shapes: Winograd has none), and the separate epilogue kernel with every BIAS and ACT.
TEST(LayerEpilogue, NewActivationsCompileInEveryKernel) {
  std::vector<JitProgram> programs;
  for (Activation act : {Activation::sigmoid, Activation::tanh}) {
    const Problem p = awkward(true, act);
    for (const Variant* v : test::built_in_variants(kLayerFwd)) {
      if (v->library()) continue;
      for (const JitProgram& program : v->programs(p, first_config(*v, p, kEpilogueFused)))
        programs.push_back(program);
    }
  }
  for (bool bias : {false, true})
    for (Activation act : kActivations)
      if (bias || act != Activation::none) programs.push_back(separate_epilogue_program(awkward(bias, act)));
  EXPECT_EQ(programs.size(), 2 * 6 + 7u);
  expect_all_compile(programs);
}
