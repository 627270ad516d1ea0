// layer_fwd's bias and activations on the GPU: every forward variant (ours fused and with a separate epilogue
// kernel, cuDNN unfused and fused) with a bias and each activation (and ReLU without a bias) on awkward shapes,
// verified by the runner against the float64 reference (fresh random inputs, NaN-poisoned output).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "harness/device.h"
#include "harness/family.h"
#include "harness/records.h"
#include "harness/runner.h"
#include "variants/layer_fwd/layer_fwd.h"
#include "variants/layer_fwd/separate_epilogue.h"
#include "tests/gpu/gpu_test_support.h"

using namespace convtune;
using test_gpu::have_gpu;
using test_gpu::quick;

namespace {

const Activation kActivations[] = {Activation::none, Activation::relu, Activation::sigmoid, Activation::tanh};

// n c h w k r s pad_h pad_w u v: odd sizes, C = 1 and K = 1, R != S, mixed strides, 1x1, 7x7, K = 70 over
// C = 33 (partial GEMM tiles); two are 3x3 at stride 1, where Winograd runs too.
const std::vector<std::vector<int64_t>> kShapes = {{2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1},
                                                   {1, 1, 13, 11, 1, 5, 3, 2, 1, 2, 2},
                                                   {2, 33, 9, 11, 70, 3, 3, 1, 1, 1, 1},
                                                   {3, 4, 17, 15, 8, 1, 1, 0, 0, 1, 1},
                                                   {2, 5, 31, 29, 7, 7, 7, 3, 3, 2, 2}};

// Every shape with a bias and each activation, and with ReLU alone (cuDNN's fused call then adds a zero bias).
std::vector<Problem> problems() {
  const auto dims = find_family(kLayerFwd).dims();
  std::vector<Problem> out;
  for (const auto& shape : kShapes) {
    std::vector<int64_t> values = shape;
    values.push_back(1);  // bias
    for (Activation act : kActivations) {
      values.resize(shape.size() + 1);
      values.push_back(int64_t(act));
      out.push_back(layer_problem(kLayerFwd, dims, values));
    }
    values = shape;
    values.insert(values.end(), {0, int64_t(Activation::relu)});
    out.push_back(layer_problem(kLayerFwd, dims, values));
  }
  return out;
}

std::string mode_of(const Config& c) { return separate_epilogue(c) ? kEpilogueSeparate : kEpilogueFused; }

struct Case {
  const Variant* v;
  Problem p;
  Config c;
};

// Two random configs a (variant, problem) that the variant can run here, fused, and one separate; the refusals
// of cuDNN's fused call, by reason, into `refused`.
std::vector<Case> sample_cases(const DeviceInfo& dev, std::map<std::string, std::set<std::string>>& refused) {
  std::mt19937 rng(39);
  std::vector<Case> cases;
  for (const Variant* v : Registry::instance().of_family(kLayerFwd))
    for (const Problem& p : problems()) {
      auto configs = v->space(p, dev).enumerate();
      std::shuffle(configs.begin(), configs.end(), rng);
      std::map<std::string, int> taken;
      for (const Config& c : configs) {
        const Status s = v->can_implement(p, c, dev);
        if (!s && v->name() == "layer_fwd.cudnn_fused") refused[activation_name(activation_of(p))].insert(s.reason);
        if (s && taken[mode_of(c)]++ < (separate_epilogue(c) ? 1 : 2)) cases.push_back({v, p, c});
      }
    }
  return cases;
}

}  // namespace

TEST(GpuLayerEpilogue, EveryVariantAppliesEachActivation) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  JitCache jit(JitCache::default_dir(), dev.arch());
  Runner runner(dev, Ceilings{}, quick(), jit, 39);
  std::map<std::string, std::set<std::string>> refused;
  const std::vector<Case> cases = sample_cases(dev, refused);
  std::vector<JitProgram> programs;
  for (const Case& k : cases)
    for (const JitProgram& program : k.v->programs(k.p, k.c)) programs.push_back(program);
  jit.compile_all(programs);

  std::map<std::string, int> planned, ok;  // by "variant mode activation"
  for (const Case& k : cases) {
    const std::string what = k.v->name() + " " + mode_of(k.c) + " " + activation_name(activation_of(k.p));
    ++planned[what];
    const json rec = runner.run(*k.v, k.p, k.c);
    ASSERT_FALSE(rec.value("context_lost", false)) << "CUDA context lost: " << rec.dump().substr(0, 600);
    const std::string st = rec["status"];
    if (st == status::skipped && k.v->library()) continue;  // cuDNN refusing an algorithm for a shape
    EXPECT_EQ(st, status::ok) << rec["candidate"].get<std::string>() << " on " << k.p.key() << ": "
                              << rec.dump().substr(0, 800);
    if (st != status::ok) continue;
    ++ok[what];
    if (separate_epilogue(k.c)) EXPECT_EQ(rec["details"].value(kEpilogueParam, ""), kEpilogueSeparate);
    if (k.v->name() == "layer_fwd.cudnn_fused")
      EXPECT_EQ(rec["details"].value("call", ""), "cudnnConvolutionBiasActivationForward");
  }
  // Each activation ran correctly at least once in each mode of each variant that planned it.
  for (const auto& [what, n] : planned) EXPECT_GT(ok[what], 0) << what << ": " << n << " planned, none ran correctly";
  for (Activation act : kActivations)
    for (const char* name : {"layer_fwd.direct_tiled", "layer_fwd.implicit_gemm", "layer_fwd.im2col_gemm",
                             "layer_fwd.winograd", "layer_fwd.cudnn"})
      EXPECT_GT(ok[std::string(name) + " " + kEpilogueFused + " " + activation_name(act)], 0) << name;
  for (Activation act : kActivations)
    EXPECT_GT(ok[std::string("layer_fwd.implicit_gemm ") + kEpilogueSeparate + " " + activation_name(act)], 0);
  // cuDNN's fused call: ReLU and a bias alone (the identity) run; sigmoid and tanh are refused by the rule.
  EXPECT_GT(ok[std::string("layer_fwd.cudnn_fused fused relu")], 0);
  EXPECT_GT(ok[std::string("layer_fwd.cudnn_fused fused none")], 0);
  for (const char* act : {"sigmoid", "tanh"}) {
    EXPECT_EQ(planned[std::string("layer_fwd.cudnn_fused fused ") + act], 0) << act;
    EXPECT_TRUE(std::any_of(refused[act].begin(), refused[act].end(), [](const std::string& reason) {
      return reason.find("fuses only ReLU or the identity") != std::string::npos;
    })) << act;
  }
}
