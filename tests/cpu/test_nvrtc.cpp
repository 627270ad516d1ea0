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

// Distinct programs of the configs that can run.
class ProgramSet {
 public:
  void add(const Variant& v, const Problem& p, const Config& c) {
    if (!v.can_implement(p, c, dev)) return;
    for (auto& prog : v.programs(p, c))
      if (seen_.insert(prog.describe()).second) programs.push_back(prog);
  }
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  std::vector<JitProgram> programs;

 private:
  std::set<std::string> seen_;
};

std::vector<JitProgram> other_family_programs() {
  ProgramSet set;
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
        for (const auto& c : v->space(p, set.dev).enumerate())
          if (v->can_implement(p, c, set.dev) && i++ % 20 == 0) set.add(*v, p, c);
      }
  }
  return set.programs;
}

// conv2d: every config at r = 3, every 14th at the extreme radii, the first that runs at the others.
std::vector<JitProgram> conv2d_programs() {
  ProgramSet set;
  const DeviceInfo& dev = set.dev;
  for (const Variant* v : Registry::instance().all()) {
    for (int r = 0; r <= 16; ++r) {
      Problem p = Problem::from_json({{"family", "conv2d"}, {"h", 1000}, {"w", 999}, {"r", r}});
      if (v->family() != p.family) continue;
      const auto configs = v->space(p, dev).enumerate();
      // Every other config at r = 3 and a sparser odd-indexed sample at r = 5: CI's critical path.
      if (r == 3 || r == 5) {
        for (size_t i = r == 3 ? 0 : 1; i < configs.size(); i += r == 3 ? 2 : 8) set.add(*v, p, configs[i]);
      } else if (r == 0 || r == 1 || r == 8 || r == 16) {
        for (size_t i = 0; i < configs.size(); i += 14) set.add(*v, p, configs[i]);
      } else {
        for (const auto& c : configs)
          if (v->can_implement(p, c, dev)) {
            set.add(*v, p, c);
            break;
          }
      }
    }
  }
  return set.programs;
}

}  // namespace

// Two tests, so that ctest runs the two halves on two cores (the one test was CI's critical path).
TEST(Nvrtc, Conv2dKernelsCompileForSm90) {
  const auto programs = conv2d_programs();
  ASSERT_GT(programs.size(), 50u);
  test::expect_all_compile(programs);
  std::printf("compiled %zu programs\n", programs.size());
}

TEST(Nvrtc, OtherFamiliesKernelsCompileForSm90) {
  const auto programs = other_family_programs();
  ASSERT_GT(programs.size(), 20u);
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
