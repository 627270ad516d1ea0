#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include <unistd.h>

#include "harness/error.h"
#include "harness/spec.h"
#include "harness/sweep_plan.h"
#include "test_support.h"

using namespace convtune;

namespace {

std::string error_of(const json& j) {
  try {
    SweepSpec::parse(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

json minimal() {
  return {{"name", "t"}, {"problems", {{{"family", "conv2d"}, {"h", 64}, {"w", 64}, {"r", 1}}}}};
}

}  // namespace

TEST(Spec, ExpandsGridsIntoProblems) {
  json j = minimal();
  j["problems"] = {{{"family", "conv2d"}, {"h", {{"pow2", {100, 1000}}}}, {"w", {7, 9}}, {"r", {{"range", {1, 5, 2}}}}}};
  const SweepSpec s = SweepSpec::parse(j);
  // h in {128, 256, 512}, w in {7, 9}, r in {1, 3, 5}
  ASSERT_EQ(s.problems.size(), 18u);
  EXPECT_EQ(s.problems.front().key(), "conv2d/h=128,r=1,w=7");
  EXPECT_EQ(s.problems.back().key(), "conv2d/h=512,r=5,w=9");
  EXPECT_EQ(s.strategy, "exhaustive");
  EXPECT_TRUE(s.measure.cold);
}

// Bounds at the ends of int64 neither overflow nor loop: a huge grid is refused by its size or its dims' range.
TEST(Spec, GridsAtTheEndsOfInt64AreRefusedQuickly) {
  const int64_t top = std::numeric_limits<int64_t>::max(), bottom = std::numeric_limits<int64_t>::min();
  auto with_h = [](json h) {
    json j = minimal();
    j["problems"][0]["h"] = std::move(h);
    return error_of(j);
  };
  EXPECT_NE(with_h({{"pow2", {1, top}}}).find("spec.problems[0].h: 131072 is out of range; allowed 1..65536"),
            std::string::npos)
      << with_h({{"pow2", {1, top}}});
  EXPECT_NE(with_h({{"pow2", {(int64_t(1) << 62) + 1, top}}}).find("spec.problems[0].h.pow2: no power of two"),
            std::string::npos);
  EXPECT_NE(with_h({{"range", {top - 2, top, 1}}}).find("spec.problems[0].h: 9223372036854775805 is out of range"),
            std::string::npos)
      << with_h({{"range", {top - 2, top, 1}}});
  EXPECT_NE(with_h({{"range", {bottom, top, 1}}}).find("spec.problems[0].h.range: more than 100000 values"),
            std::string::npos);
}

// A shape listed twice, by a repeated value or by two grids that overlap, is one problem (measured once).
TEST(Spec, AShapeListedTwiceIsOneProblem) {
  json j = minimal();
  j["problems"][0]["r"] = {1, 1, 2};
  j["problems"].push_back({{"family", "conv2d"}, {"h", 64}, {"w", 64}, {"r", {2, 3}}});
  const SweepSpec s = SweepSpec::parse(j);
  std::vector<std::string> keys;
  for (const Problem& p : s.problems) keys.push_back(p.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"conv2d/h=64,r=1,w=64", "conv2d/h=64,r=2,w=64", "conv2d/h=64,r=3,w=64"}));
}

TEST(Spec, VariantsAndParamsAreResolved) {
  json j = minimal();
  j["variants"] = {"conv2d.constant", "conv2d.tiled*"};
  j["params"] = {{"conv2d.constant", {{"block_x", {32}}, {"block_y", 4}}}};
  const SweepSpec s = SweepSpec::parse(j);
  const auto vs = s.variants_for(s.problems[0]);
  ASSERT_EQ(vs.size(), 3u);
  EXPECT_EQ(vs[0]->name(), "conv2d.constant");
  const auto space = s.space_for(*vs[0], s.problems[0], DeviceInfo::offline_sm90());
  EXPECT_EQ(space.size(), 1u);
}

TEST(Spec, ErrorsNameTheFieldTheValueAndWhatIsAllowed) {
  json j = minimal();
  j.erase("name");
  EXPECT_NE(error_of(j).find("spec.name"), std::string::npos);

  j = minimal();
  j["name"] = "a b";
  EXPECT_NE(error_of(j).find("spec.name"), std::string::npos);

  j = minimal();
  j["variants"] = {"conv2d.*"};
  j["problems"].push_back({{"family", "layer_pool"}, {"n", 1}, {"c", 1}, {"h", 4}, {"w", 4}, {"r", 2}, {"s", 2},
                           {"u", 2}, {"v", 2}});
  const std::string no_variant = error_of(j);
  EXPECT_NE(no_variant.find("spec.variants: none is of the family layer_pool"), std::string::npos) << no_variant;

  j = minimal();
  j["problemz"] = 1;
  EXPECT_NE(error_of(j).find("spec.problemz: unknown field; allowed: name"), std::string::npos) << error_of(j);

  j = minimal();
  j["problems"][0]["r"] = 40;
  EXPECT_NE(error_of(j).find("spec.problems[0].r: 40 is out of range; allowed 0..32"), std::string::npos) << error_of(j);

  j = minimal();
  j["problems"][0]["family"] = "conv9d";
  EXPECT_NE(error_of(j).find("unknown family 'conv9d'; allowed: conv1d, conv1d_parts, conv2d"), std::string::npos) << error_of(j);

  j = minimal();
  j["problems"][0]["h"] = {{"range", {5, 1}}};
  EXPECT_NE(error_of(j).find("spec.problems[0].h.range"), std::string::npos) << error_of(j);

  j = minimal();
  j["variants"] = {"conv2d.nope"};
  EXPECT_NE(error_of(j).find("spec.variants[0]: no variant matches 'conv2d.nope'; allowed: "), std::string::npos)
      << error_of(j);

  j = minimal();
  j["params"] = {{"conv2d.constant", {{"tile", {8}}}}};
  EXPECT_NE(error_of(j).find("spec.params.conv2d.constant.tile: unknown parameter; allowed: block_x, block_y"),
            std::string::npos)
      << error_of(j);

  j = minimal();
  j["strategy"] = "magic";
  EXPECT_NE(error_of(j).find("spec.strategy"), std::string::npos);

  j = minimal();
  j["measure"] = {{"time_cap_s", -1}};
  EXPECT_NE(error_of(j).find("spec.measure.time_cap_s"), std::string::npos);

  j = minimal();
  j["budget"] = {{"seconds", 1}};
  EXPECT_NE(error_of(j).find("spec.budget.seconds: unknown field"), std::string::npos);
}

TEST(Spec, ShippedSpecsParse) {
  for (const char* name : {"default", "full", "quick", "conv2d", "smoke"}) {
    const auto path = std::filesystem::path(CONVTUNE_SOURCE_DIR) / "sweeps" / (std::string(name) + ".json");
    SweepSpec s;
    ASSERT_NO_THROW(s = SweepSpec::load(path.string())) << path;
    EXPECT_EQ(s.name, name);
    const SweepPlan plan = make_plan(s, DeviceInfo::offline_sm90());
    EXPECT_GT(plan.runnable(), 0u) << name;
  }
  EXPECT_THROW(SweepSpec::load("/nonexistent.json"), InputError);
}

// Every spec the repository ships (the README and the docs name them) parses and has work on an H100-class
// device: a spec edited by hand, or a variant renamed under it, fails here rather than on a user's GPU.
TEST(Spec, EverySpecInTheSweepsFolderPlans) {
  int specs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(CONVTUNE_SOURCE_DIR) / "sweeps")) {
    if (entry.path().extension() != ".json") continue;
    SweepSpec s;
    ASSERT_NO_THROW(s = SweepSpec::load(entry.path().string())) << entry.path();
    EXPECT_FALSE(s.name.empty()) << entry.path();
    EXPECT_GT(make_plan(s, DeviceInfo::offline_sm90()).runnable(), 0u) << entry.path();
    ++specs;
  }
  EXPECT_GE(specs, 20);
}

TEST(Spec, TooLargeForTheDeviceIsAnInputError) {
  json j = minimal();
  j["problems"][0]["h"] = 65536;
  j["problems"][0]["w"] = 65536;
  DeviceInfo small = DeviceInfo::offline_sm90();
  small.global_mem_bytes = int64_t(16) << 30;
  const SweepSpec s = SweepSpec::parse(j);
  try {
    make_plan(s, small);
    FAIL() << "planned a problem that cannot fit";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("GiB of device memory"), std::string::npos) << e.what();
  }
}

// The text plan names each skipped kind by its first reason, numbers and all (a masked "tf#" or "precision = #"
// read as noise), and says how many other reasons only differ from it in their numbers.
TEST(Spec, DryRunShowsSkipReasonsWithTheirNumbers) {
  const std::filesystem::path log =
      std::filesystem::temp_directory_path() / ("convtune-dry-run-" + std::to_string(::getpid()) + ".txt");
  const std::string command = test::cli_binary() + " sweep " + CONVTUNE_SOURCE_DIR +
                              "/sweeps/layers.json --dry-run > " + log.string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(log);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(log);
  EXPECT_NE(out.find("math tf32 needs precision = 1 (this problem is strict fp32)"), std::string::npos) << out.substr(0, 2000);
  EXPECT_EQ(out.find("tf#"), std::string::npos);
  EXPECT_NE(out.find(" reasons alike)"), std::string::npos);
}
