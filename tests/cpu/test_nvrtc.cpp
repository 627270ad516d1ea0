// Every JIT kernel compiles with NVRTC for sm_90 over its space: every config at one radius, every
// radius 0..16 for each variant's first config, and a spread of configs (every 14th) at radii 0, 1, 8, 16.
#include <gtest/gtest.h>

#include <set>

#include "harness/error.h"
#include "harness/family.h"
#include "harness/variant.h"

#include "tests/cpu/test_support.h"

using namespace convtune;

namespace {

std::vector<JitProgram> programs_to_compile() {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  std::vector<JitProgram> out;
  std::set<std::string> seen;
  auto add = [&](const Variant& v, const Problem& p, const Config& c) {
    if (!v.can_implement(p, c, dev)) return;
    for (auto& prog : v.programs(p, c))
      if (seen.insert(prog.describe()).second) out.push_back(prog);
  };
  // Other families (a documented sample): per variant and shape of the family's test shapes and example,
  // the first implementable config and every 20th after it (CI time: conv1d's tiled kernel takes ~4 s a
  // program). The layer families are left to their own compile tests (test_layer_direct, _gemm,
  // _implicit_gemm): their spaces run to thousands; and conv2d_separable to test_separable (its whole
  // space at one radius, samples at the other radii).
  for (const Family* fam : FamilyRegistry::instance().all()) {
    if (fam->name() == "conv2d" || fam->name() == "conv2d_separable" || fam->name().rfind("layer_", 0) == 0) continue;
    std::vector<Problem> problems = fam->test_problems();
    problems.push_back(fam->example());
    for (const Variant* v : Registry::instance().of_family(fam->name()))
      for (const Problem& p : problems) {
        size_t i = 0;
        for (const auto& c : v->space(p, dev).enumerate())
          if (v->can_implement(p, c, dev) && i++ % 20 == 0) add(*v, p, c);
      }
  }
  for (const Variant* v : Registry::instance().all()) {
    for (int r = 0; r <= 16; ++r) {
      Problem p = Problem::from_json({{"family", "conv2d"}, {"h", 1000}, {"w", 999}, {"r", r}});
      if (v->family() != p.family) continue;
      const auto configs = v->space(p, dev).enumerate();
      if (r == 3) {
        for (const auto& c : configs) add(*v, p, c);
      } else if (r == 0 || r == 1 || r == 8 || r == 16) {
        for (size_t i = 0; i < configs.size(); i += 14) add(*v, p, configs[i]);
      } else {
        for (const auto& c : configs)
          if (v->can_implement(p, c, dev)) {
            add(*v, p, c);
            break;
          }
      }
    }
  }
  return out;
}

}  // namespace

TEST(Nvrtc, EveryKernelCompilesForSm90) {
  const auto programs = programs_to_compile();
  ASSERT_GT(programs.size(), 100u);
  test::expect_all_compile(programs);
  std::printf("compiled %zu programs\n", programs.size());
}

TEST(Nvrtc, ACompileErrorCarriesTheLog) {
  // An empty block size leaves `* BLOCK_Y` with no left operand: a syntax error.
  JitProgram bad{"conv2d_constant.cuh", {"-DRADIUS=2", "-DBLOCK_X=", "-DBLOCK_Y=4"}};
  try {
    nvrtc_compile(bad, "sm_90");
    FAIL() << "compiled a broken program";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d_constant.cuh"), std::string::npos);
    EXPECT_FALSE(e.log.empty());
  }
}
