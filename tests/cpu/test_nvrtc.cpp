// Every JIT kernel compiles with NVRTC for sm_90 over its space: with CONVTUNE_NVRTC_ALL=1 every config at one
// radius, the first config at every radius 0..16 and a spread (every 14th) at radii 0, 1, 8, 16; on the CPU a
// covering sample of those (test_support.h: covering_sample), which compiles every variant, radius and
// parameter value at least once.
#include <gtest/gtest.h>

#include <set>

#include "harness/error.h"
#include "harness/family.h"
#include "harness/variant.h"

#include "tests/cpu/test_support.h"

using namespace convtune;

namespace {

// Points a stride takes on the CPU before the coverage pass adds the values it missed.
constexpr size_t kSampleStrideTarget = 4;

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
  // program), thinned on the CPU by covering_sample over configs and problem dims. The layer families are left to their own compile tests (test_layer_direct, _gemm,
  // _implicit_gemm): their spaces run to thousands; and conv2d_separable to test_separable (its whole
  // space at one radius, samples at the other radii).
  for (const Family* fam : FamilyRegistry::instance().all()) {
    if (fam->name() == "conv2d" || fam->name() == "conv2d_separable" || fam->name().rfind("layer_", 0) == 0) continue;
    std::vector<Problem> problems = fam->test_problems();
    problems.push_back(fam->example());
    for (const Variant* v : Registry::instance().of_family(fam->name())) {
      std::vector<std::pair<const Problem*, Config>> considered;
      std::vector<json> points;  // each config with its problem's dims, for the coverage
      for (const Problem& p : problems) {
        size_t i = 0;
        for (const auto& c : v->space(p, set.dev).enumerate())
          if (v->can_implement(p, c, set.dev) && i++ % 20 == 0) {
            considered.emplace_back(&p, c);
            points.push_back(c);
            for (const auto& [dim, value] : p.dims) points.back()["problem." + dim] = value;
          }
      }
      for (size_t i : test::covering_sample(points, kSampleStrideTarget))
        set.add(*v, *considered[i].first, considered[i].second);
    }
  }
  return set.programs;
}

// conv2d: per variant, every implementable config at r = 3, every 14th at the extreme radii 0, 1, 8, 16,
// and the first at each other radius up to 16 (the radius changes the code); on the CPU a covering sample
// of the family's points: every variant and every value of its parameters, and every radius, at least once.
std::vector<JitProgram> conv2d_programs() {
  ProgramSet set;
  const DeviceInfo& dev = set.dev;
  struct Point {
    const Variant* variant;
    Problem problem;
    Config config;
  };
  std::vector<Point> considered;
  std::vector<json> points;  // the variant, its parameters by qualified name, and the radius
  for (const Variant* v : Registry::instance().of_family("conv2d"))
    for (int r = 0; r <= 16; ++r) {
      const Problem p = Problem::from_json({{"family", "conv2d"}, {"h", 1000}, {"w", 999}, {"r", r}});
      const size_t every = r == 3 ? 1 : r == 0 || r == 1 || r == 8 || r == 16 ? 14 : 0;  // 0: the first alone
      size_t index = 0;  // among the implementable configs at this radius
      for (const auto& c : v->space(p, dev).enumerate()) {
        if (!v->can_implement(p, c, dev)) continue;
        const bool take = every == 0 ? index == 0 : index % every == 0;
        ++index;
        if (!take) continue;
        considered.push_back({v, p, c});
        json point = {{"variant", v->name()}, {"r", r}};
        for (const auto& [name, value] : c.items()) point[v->name() + "." + name] = value;
        points.push_back(std::move(point));
      }
    }
  for (size_t i : test::covering_sample(points, kSampleStrideTarget))
    set.add(*considered[i].variant, considered[i].problem, considered[i].config);
  return set.programs;
}

}  // namespace

// Two tests, so that ctest runs the two halves on two cores (the one test was CI's critical path).
TEST(Nvrtc, Conv2dKernelsCompileForSm90) {
  const auto programs = conv2d_programs();
  ASSERT_GT(programs.size(), test::compile_every_point() ? 50u : 17u);  // at least one a radius
  test::expect_all_compile(programs);
  std::printf("compiled %zu programs\n", programs.size());
}

TEST(Nvrtc, OtherFamiliesKernelsCompileForSm90) {
  const auto programs = other_family_programs();
  ASSERT_GT(programs.size(), test::compile_every_point() ? 20u : 5u);
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

// The CPU's sample of a compile test: a stride plus, for each name=value the stride missed, the first
// point that has it; every point under CONVTUNE_NVRTC_ALL=1.
TEST(CompileSample, CoversEveryValueOfEveryParameterWithFewPoints) {
  std::vector<json> points;
  for (int a : {1, 2, 3, 4, 5, 6, 7})
    for (int b : {8, 16, 32, 64, 128})
      for (int r = 0; r <= 16; ++r) points.push_back({{"a", a}, {"b", b}, {"r", r}});
  const auto chosen = test::covering_sample(points, 6);
  std::set<std::string> covered;
  for (size_t i : chosen)
    for (const auto& [name, value] : points[i].items()) covered.insert(name + "=" + value.dump());
  EXPECT_EQ(covered.size(), 7u + 5u + 17u);
  if (test::compile_every_point()) EXPECT_EQ(chosen.size(), points.size());
  else EXPECT_LE(chosen.size(), 6u + 17u);  // the stride, then one point per radius covers a and b too
  EXPECT_EQ(chosen, test::covering_sample(points, 6)) << "not deterministic";
}
