// Every JIT kernel compiles with NVRTC for sm_90 over its space: with CONVTUNE_NVRTC_ALL=1 every config at one
// radius, the first config at every radius 0..16 and a spread (every 14th) at radii 0, 1, 8, 16; on the CPU a
// covering sample of those programs (test_support.h: covering_programs), which compiles every kernel source
// with every value of each of its defines (tiles, coarsening...), and every radius, at least once.
#include <gtest/gtest.h>

#include <set>

#include "harness/error.h"
#include "harness/family.h"
#include "harness/variant.h"

#include "tests/cpu/test_support.h"

using namespace convtune;

namespace {

// The programs of the configs considered that can run; programs() is the CPU's covering sample of them
// (all of them with CONVTUNE_NVRTC_ALL=1): every kernel source and its defines' values, with the `shared`
// ones (problem dims) once in any source.
class ProgramSet {
 public:
  void add(const Variant& v, const Problem& p, const Config& c) {
    if (!v.can_implement(p, c, dev)) return;
    for (auto& prog : v.programs(p, c)) considered_.push_back(prog);
  }
  std::vector<JitProgram> programs(const std::vector<std::string>& shared = {}) const {
    return test::covering_programs(considered_, 2, shared);
  }
  const DeviceInfo dev = DeviceInfo::offline_sm90();

 private:
  std::vector<JitProgram> considered_;
};

std::vector<JitProgram> other_family_programs() {
  ProgramSet set;
  // Other families (a documented sample): per variant and shape of the family's test shapes and example,
  // the first implementable config and every 20th after it (CI time: conv1d's tiled kernel takes 1-30 s a
  // program), thinned on the CPU by covering_programs. The layer families are left to their own compile
  // tests (test_layer_direct, _gemm, _implicit_gemm, _wgmma, _winograd): their spaces run to thousands; and
  // conv2d_separable to test_separable (its whole space at one radius, samples at the other radii).
  for (const Family* fam : FamilyRegistry::instance().all()) {
    if (fam->name() == "conv2d" || fam->name() == "conv2d_separable" || fam->name().rfind("layer_", 0) == 0) continue;
    std::vector<Problem> problems = fam->test_problems();
    problems.push_back(fam->example());
    for (const Variant* v : test::built_in_variants(fam->name()))
      for (const Problem& p : problems) {
        size_t i = 0;
        for (const auto& c : v->space(p, set.dev).enumerate())
          if (v->can_implement(p, c, set.dev) && i++ % 20 == 0) set.add(*v, p, c);
      }
  }
  return set.programs({"-DM="});  // each filter length once in the family, as the radius in conv2d
}

// conv2d: per variant, every implementable config at r = 3, every 14th at the extreme radii 0, 1, 8, 16,
// and the first at each other radius up to 16 (the radius changes the code); on the CPU a covering sample
// of those programs: every kernel source and each of its defines' values, and every radius, at least once.
std::vector<JitProgram> conv2d_programs() {
  ProgramSet set;
  const DeviceInfo& dev = set.dev;
  for (const Variant* v : test::built_in_variants("conv2d"))
    for (int r = 0; r <= 16; ++r) {
      const Problem p = Problem::from_json({{"family", "conv2d"}, {"h", 1000}, {"w", 999}, {"r", r}});
      const size_t every = r == 3 ? 1 : r == 0 || r == 1 || r == 8 || r == 16 ? 14 : 0;  // 0: the first alone
      size_t index = 0;  // among the implementable configs at this radius
      for (const auto& c : v->space(p, dev).enumerate()) {
        if (!v->can_implement(p, c, dev)) continue;
        const bool take = every == 0 ? index == 0 : index % every == 0;
        ++index;
        if (take) set.add(*v, p, c);
      }
    }
  return set.programs({"-DRADIUS="});  // every radius once in the family, as every parameter value per source
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

// The CPU's sample of a compile test's programs: every kernel source, and every option it is compiled with,
// at least once, in far fewer programs than the whole set.
TEST(CompileSample, ProgramsCoverEverySourceAndEveryDefinesValue) {
  std::vector<JitProgram> programs;
  for (const char* source : {"a.cuh", "b.cuh"})
    for (int tile : {8, 16, 32, 64})
      for (int r = 0; r <= 16; ++r)
        programs.push_back({source, {"-DTILE=" + std::to_string(tile), "-DRADIUS=" + std::to_string(r)}});
  programs.push_back(programs.front());  // a repeat is compiled once
  const auto chosen = test::covering_programs(programs);
  std::set<std::string> covered;
  for (const JitProgram& p : chosen)
    for (const std::string& option : p.options) covered.insert(p.source + " " + option);
  EXPECT_EQ(covered.size(), 2u * (4 + 17));
  std::vector<std::string> described;
  for (const JitProgram& p : chosen) described.push_back(p.describe());
  EXPECT_EQ(std::set<std::string>(described.begin(), described.end()).size(), described.size()) << "one twice";
  if (test::compile_every_point()) EXPECT_EQ(chosen.size(), programs.size() - 1);
  else EXPECT_LE(chosen.size(), 2u * (4 + 17));  // the stride, then the cheapest program of each value per source
  std::vector<std::string> again;
  for (const JitProgram& p : test::covering_programs(programs)) again.push_back(p.describe());
  EXPECT_EQ(again, described) << "not deterministic";
}

// A value is compiled in the cheapest program that has it: a 1025-tap filter at 16 outputs a thread took 30 s
// of CI's time where the same values in two small programs take 2 s. Derived defines are no keys.
TEST(CompileSample, EachValueComesFromTheCheapestProgramThatHasIt) {
  auto program = [](int m, int p) {
    return JitProgram{"a.cuh", {"-DM=" + std::to_string(m), "-DP=" + std::to_string(p),
                                "-DSMEM_BYTES=" + std::to_string(4 * m * p)}};
  };
  const std::vector<JitProgram> programs = {program(62, 4), program(1025, 16), program(62, 16), program(1025, 4)};
  std::set<std::string> chosen;
  for (const JitProgram& p : test::covering_programs(programs, 0)) chosen.insert(p.describe());
  if (test::compile_every_point()) return;
  EXPECT_EQ(chosen, (std::set<std::string>{program(62, 4).describe(), program(62, 16).describe(),
                                           program(1025, 4).describe()}));
}
