// Refusals pinned whole: each rule that refuses input names the field, the value and what is allowed, and a
// message that lost its "allowed" part (or any other part) is a regression a user meets at once. Expected
// texts are written out here from the rules (docs/DESIGN.md, the sources' comments), never built by the code
// under test. Each limit is tried at the limit (accepted) and one past it (refused).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/dispatch.h"
#include "harness/dispatch_table.h"
#include "harness/error.h"
#include "harness/fleet.h"
#include "harness/json_file.h"
#include "harness/measure.h"
#include "harness/merge.h"
#include "harness/params.h"
#include "harness/problem.h"
#include "harness/records.h"
#include "harness/replay.h"
#include "harness/run_folder.h"
#include "harness/runner.h"
#include "harness/shard.h"
#include "harness/spec.h"
#include "harness/strategy.h"
#include "harness/sweep_options.h"
#include "harness/variant.h"
#include "test_support.h"
#include "variants/conv1d_parts/schedule.h"

namespace convtune {
namespace {

namespace fs = std::filesystem;

const std::string kFamilies =
    "conv1d, conv1d_parts, conv2d, conv2d_separable, layer_bwd_data, layer_bwd_filter, layer_fwd, layer_pool";

// The InputError of parsing `j` as a spec, or "accepted".
std::string spec_error(const json& j) {
  try {
    SweepSpec::parse(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

json spec_with(const std::string& field, const json& value) {
  json j = {{"name", "t"}, {"problems", {{{"family", "conv2d"}, {"h", 64}, {"w", 64}, {"r", 1}}}}};
  j[field] = value;
  return j;
}

// A spec whose only problem entry gives `dim` the value `v` (conv2d, 64 x 64, radius 1 otherwise).
json spec_dim(const std::string& dim, const json& v) {
  json entry = {{"family", "conv2d"}, {"h", 64}, {"w", 64}, {"r", 1}};
  entry[dim] = v;
  return spec_with("problems", json::array({entry}));
}

std::string problems_error(const json& entry) {
  try {
    expand_problems(entry, "spec.problems[0]");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

// ---- spec.cpp: the grid of a problem entry -----------------------------------------------------------------

TEST(SpecMessages, AListOfDimValuesMustHoldIntegers) {
  EXPECT_EQ(spec_error(spec_dim("h", json::array())), "spec.problems[0].h: an empty list");
  EXPECT_EQ(spec_error(spec_dim("h", {64, "x"})), "spec.problems[0].h[1]: \"x\" is not an integer");
  EXPECT_EQ(spec_error(spec_dim("h", "x")),
            "spec.problems[0].h: must be an integer, a list, {\"range\": [first, last, step]} or {\"pow2\": [first, last]}");
  EXPECT_EQ(spec_error(spec_dim("h", 1.5)),
            "spec.problems[0].h: must be an integer, a list, {\"range\": [first, last, step]} or {\"pow2\": [first, last]}");
  // A range or pow2 object with anything beside it is neither.
  EXPECT_EQ(spec_error(spec_dim("h", {{"range", {1, 2}}, {"step", 1}})),
            "spec.problems[0].h: must be an integer, a list, {\"range\": [first, last, step]} or {\"pow2\": [first, last]}");
  EXPECT_EQ(spec_error(spec_dim("h", {{"pow2", {1, 2}}, {"x", 1}})),
            "spec.problems[0].h: must be an integer, a list, {\"range\": [first, last, step]} or {\"pow2\": [first, last]}");
}

TEST(SpecMessages, ARangeTakesTwoOrThreeIntegersInOrderWithAPositiveStep) {
  const std::string form = "spec.problems[0].h.range: must be [first, last] or [first, last, step]";
  EXPECT_EQ(spec_error(spec_dim("h", {{"range", {8}}})), form);
  EXPECT_EQ(spec_error(spec_dim("h", {{"range", {8, 16, 2, 1}}})), form);
  EXPECT_EQ(spec_error(spec_dim("h", {{"range", 8}})), form);
  EXPECT_EQ(spec_error(spec_dim("h", {{"range", {8.5, 16}}})), "spec.problems[0].h.range[0]: 8.5 is not an integer");
  EXPECT_EQ(spec_error(spec_dim("h", {{"range", {8, "16"}}})), "spec.problems[0].h.range[1]: \"16\" is not an integer");
  EXPECT_EQ(spec_error(spec_dim("h", {{"range", {8, 16, true}}})), "spec.problems[0].h.range[2]: true is not an integer");
  const std::string order = "spec.problems[0].h.range: needs first <= last and a positive step";
  EXPECT_EQ(spec_error(spec_dim("h", {{"range", {8, 16, 0}}})), order);
  EXPECT_EQ(spec_error(spec_dim("h", {{"range", {8, 16, -2}}})), order);
  EXPECT_EQ(spec_error(spec_dim("h", {{"range", {16, 8}}})), order);
  // first == last: one value; a step past last: first alone; the step counted from first.
  EXPECT_EQ(SweepSpec::parse(spec_dim("h", {{"range", {16, 16}}})).problems.size(), 1u);
  EXPECT_EQ(SweepSpec::parse(spec_dim("h", {{"range", {16, 20, 5}}})).problems.size(), 1u);
  const SweepSpec s = SweepSpec::parse(spec_dim("h", {{"range", {10, 20, 5}}}));
  ASSERT_EQ(s.problems.size(), 3u);
  EXPECT_EQ(s.problems[2].at("h"), 20);
}

TEST(SpecMessages, ARangeHoldsAtMostAHundredThousandAndOneValues) {
  // (last - first) / step may reach 100000: [1, 100001] is 100001 values, refused only as problems.
  EXPECT_EQ(problems_error({{"family", "conv2d"}, {"h", {{"range", {1, 100002}}}}, {"w", 8}, {"r", 1}}),
            "spec.problems[0].h.range: more than 100000 values");
  EXPECT_EQ(problems_error({{"family", "conv2d"}, {"h", {{"range", {0, 200002, 2}}}}, {"w", 8}, {"r", 1}}),
            "spec.problems[0].h.range: more than 100000 values");
  EXPECT_EQ(problems_error({{"family", "conv2d"}, {"h", {{"range", {1, 100001}}}}, {"w", 8}, {"r", 1}}),
            "spec.problems[0]: more than 100000 problems");
}

TEST(SpecMessages, AnEntryExpandsToAtMostAHundredThousandProblems) {
  const json at_limit = {{"family", "conv2d"}, {"h", {{"range", {1, 50000}}}}, {"w", {1, 2}}, {"r", 0}};
  EXPECT_EQ(expand_problems(at_limit, "spec.problems[0]").size(), 100000u);
  json past = at_limit;
  past["h"] = {{"range", {1, 50001}}};
  EXPECT_EQ(problems_error(past), "spec.problems[0]: more than 100000 problems");
}

TEST(SpecMessages, Pow2TakesPositiveBoundsInOrderAndNeedsAPowerBetweenThem) {
  EXPECT_EQ(spec_error(spec_dim("h", {{"pow2", 8}})), "spec.problems[0].h.pow2: must be [first, last]");
  EXPECT_EQ(spec_error(spec_dim("h", {{"pow2", {8, "x"}}})), "spec.problems[0].h.pow2[1]: \"x\" is not an integer");
  EXPECT_EQ(spec_error(spec_dim("h", {{"pow2", {0.5, 8}}})), "spec.problems[0].h.pow2[0]: 0.5 is not an integer");
  const std::string order = "spec.problems[0].h.pow2: needs 0 < first <= last";
  EXPECT_EQ(spec_error(spec_dim("h", {{"pow2", {0, 8}}})), order);
  EXPECT_EQ(spec_error(spec_dim("h", {{"pow2", {-4, 8}}})), order);
  EXPECT_EQ(spec_error(spec_dim("h", {{"pow2", {16, 8}}})), order);
  EXPECT_EQ(spec_error(spec_dim("h", {{"pow2", {5, 7}}})), "spec.problems[0].h.pow2: no power of two in [5, 7]");
  // Bounds inclusive: [1, 1] is {1}; [4, 4] is {4}; [3, 16] is {4, 8, 16}.
  auto values = [](int64_t a, int64_t b) {
    std::vector<int64_t> out;
    for (const Problem& p : SweepSpec::parse(spec_dim("h", {{"pow2", {a, b}}})).problems) out.push_back(p.at("h"));
    return out;
  };
  EXPECT_EQ(values(1, 1), (std::vector<int64_t>{1}));
  EXPECT_EQ(values(4, 4), (std::vector<int64_t>{4}));
  EXPECT_EQ(values(3, 16), (std::vector<int64_t>{4, 8, 16}));
}

TEST(SpecMessages, AProblemEntryWithoutAFamilyNamesTheFamilies) {
  const std::string want = "spec.problems[0].family: missing; allowed: " + kFamilies;
  EXPECT_EQ(problems_error({{"h", 8}}), want);
  EXPECT_EQ(problems_error({{"family", 3}}), want);
  EXPECT_EQ(problems_error(json::array({1})), want);
  EXPECT_EQ(problems_error({{"family", "conv3d"}}), "spec.problems[0].family: unknown family 'conv3d'; allowed: " + kFamilies);
}

// ---- spec.cpp: the spec's fields ---------------------------------------------------------------------------

TEST(SpecMessages, TheSpecsFieldsAreNamedWithWhatTheyTake) {
  EXPECT_EQ(spec_error(json::array()), "spec: must be a JSON object");
  EXPECT_EQ(spec_error(spec_with("problem", 1)),
            "spec.problem: unknown field; allowed: name, description, problems, variants, params, strategy, budget, "
            "measure, plugins");
  json unnamed = spec_with("name", "");
  EXPECT_EQ(spec_error(unnamed), "spec.name: \"\"; allowed: a short name for the run folder, e.g. \"conv2d\"");
  unnamed.erase("name");
  EXPECT_EQ(spec_error(unnamed), "spec.name: missing; a short name for the run folder, e.g. \"conv2d\"");
  EXPECT_EQ(spec_error(spec_with("name", 7)), "spec.name: 7; allowed: a short name for the run folder, e.g. \"conv2d\"");
  EXPECT_EQ(spec_error(spec_with("name", "a b")), "spec.name: 'a b' may hold only letters, digits, '-' and '_'");
  EXPECT_EQ(spec_error(spec_with("name", "Run-2_b")), "accepted");
  const std::string allowed = "; allowed: a non-empty list of {\"family\": ..., dims...}";
  EXPECT_EQ(spec_error(spec_with("problems", json::array())), "spec.problems: []" + allowed);
  EXPECT_EQ(spec_error(spec_with("problems", {{"family", "conv2d"}})), "spec.problems: {\"family\":\"conv2d\"}" + allowed);
  json no_problems = spec_with("name", "t");
  no_problems.erase("problems");
  EXPECT_EQ(spec_error(no_problems), "spec.problems: missing; a list of {\"family\": ..., dims...}");
  EXPECT_EQ(spec_error(spec_with("description", 3)), "accepted");  // free text, not read
}

TEST(SpecMessages, VariantsAreANonEmptyListOfNamesOrGlobs) {
  const std::string list = "spec.variants: must be a non-empty list of names or globs";
  EXPECT_EQ(spec_error(spec_with("variants", json::array())), list);
  EXPECT_EQ(spec_error(spec_with("variants", "conv2d.*")), list);
  EXPECT_EQ(spec_error(spec_with("variants", {"conv2d.naive", 3})), "spec.variants[1]: must be a string");
  const std::string nope = spec_error(spec_with("variants", {"conv2d.naive", "conv2d.nope"}));
  // The allowed names are the registry's, sorted: plug-ins that another test of the same process loaded
  // (conv1d.compiled_conv1d) may come first, depending on how ctest shards the suite.
  EXPECT_EQ(nope.rfind("spec.variants[1]: no variant matches 'conv2d.nope'; allowed: conv1d.", 0), 0u) << nope;
  EXPECT_NE(nope.find("conv1d.cudnn, conv1d.direct, "), std::string::npos) << nope;
  EXPECT_EQ(spec_error(spec_with("variants", {"conv1d.*"})),
            "spec.variants: none is of the family conv2d (spec.problems has conv2d/h=64,r=1,w=64); add e.g. \"conv2d.*\"");
}

TEST(SpecMessages, ParamsAreAnObjectOfKnownVariantsEachAnObject) {
  EXPECT_EQ(spec_error(spec_with("params", json::array())), "spec.params: must be an object {variant: {param: values}}");
  const std::string unknown = spec_error(spec_with("params", {{"conv2d.nope", json::object()}}));
  EXPECT_EQ(unknown.rfind("spec.params.conv2d.nope: unknown variant; allowed: conv1d.", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("conv1d.cudnn, conv1d.direct, "), std::string::npos) << unknown;  // plug-ins may come first
  EXPECT_EQ(spec_error(spec_with("params", {{"conv2d.naive", 32}})),
            "spec.params.conv2d.naive: must be an object {param: values}");
  EXPECT_EQ(spec_error(spec_with("params", {{"conv2d.naive", {{"block_x", {"a"}}}}})),
            "spec.params.conv2d.naive.block_x: \"a\" is not an integer; allowed: 16, 32, 64, 128");
}

TEST(SpecMessages, AStrategyIsOneOfTheFiveNamed) {
  const std::string allowed = "allowed: exhaustive, random, halving, anneal, warm";
  EXPECT_EQ(spec_error(spec_with("strategy", 3)), "spec.strategy: 3 is not a strategy; " + allowed);
  EXPECT_EQ(spec_error(spec_with("strategy", "greedy")), "spec.strategy: 'greedy' is not a strategy; " + allowed);
  for (const char* name : {"exhaustive", "random", "halving", "anneal", "warm"})
    EXPECT_EQ(SweepSpec::parse(spec_with("strategy", name)).strategy, name);
}

TEST(SpecMessages, BudgetFieldsAreCheckedAtTheirLimits) {
  EXPECT_EQ(spec_error(spec_with("budget", 5)), "spec.budget: must be an object");
  auto budget = [](const std::string& k, const json& v) { return spec_with("budget", {{k, v}}); };
  const std::string evals = " is not allowed; allowed: an integer in 0..1000000000 (0 = no limit)";
  EXPECT_EQ(spec_error(budget("max_evaluations_per_problem", -1)), "spec.budget.max_evaluations_per_problem: -1" + evals);
  EXPECT_EQ(spec_error(budget("max_evaluations_per_problem", 1000000001)),
            "spec.budget.max_evaluations_per_problem: 1000000001" + evals);
  EXPECT_EQ(spec_error(budget("max_evaluations_per_problem", 2.5)), "spec.budget.max_evaluations_per_problem: 2.5" + evals);
  EXPECT_EQ(SweepSpec::parse(budget("max_evaluations_per_problem", 0)).budget.max_evaluations_per_problem, 0);
  EXPECT_EQ(SweepSpec::parse(budget("max_evaluations_per_problem", 1000000000)).budget.max_evaluations_per_problem,
            1000000000);
  const std::string timeout = " is not allowed; allowed: a positive number of seconds";
  EXPECT_EQ(spec_error(budget("candidate_timeout_s", 0)), "spec.budget.candidate_timeout_s: 0" + timeout);
  EXPECT_EQ(spec_error(budget("candidate_timeout_s", "9")), "spec.budget.candidate_timeout_s: \"9\"" + timeout);
  EXPECT_DOUBLE_EQ(SweepSpec::parse(budget("candidate_timeout_s", 0.25)).budget.candidate_timeout_s, 0.25);
  const std::string seconds = " is not allowed; allowed: a non-negative number of seconds (0 = no limit)";
  EXPECT_EQ(spec_error(budget("seconds_per_problem", -0.5)), "spec.budget.seconds_per_problem: -0.5" + seconds);
  EXPECT_EQ(spec_error(budget("seconds_per_problem", "1")), "spec.budget.seconds_per_problem: \"1\"" + seconds);
  EXPECT_EQ(spec_error(budget("seconds_total", true)), "spec.budget.seconds_total: true" + seconds);
  const SweepSpec per = SweepSpec::parse(spec_with("budget", {{"seconds_per_problem", 0}, {"seconds_total", 7.5}}));
  EXPECT_DOUBLE_EQ(per.budget.seconds_per_problem, 0);
  EXPECT_DOUBLE_EQ(per.budget.seconds_total, 7.5);
  EXPECT_DOUBLE_EQ(SweepSpec::parse(budget("seconds_per_problem", 2.5)).budget.seconds_per_problem, 2.5);
  EXPECT_EQ(spec_error(budget("evaluations", 3)),
            "spec.budget.evaluations: unknown field; allowed: max_evaluations_per_problem, seconds_per_problem, "
            "seconds_total, candidate_timeout_s");
}

TEST(SpecMessages, PluginsAreAListOfFolderPaths) {
  EXPECT_EQ(spec_error(spec_with("plugins", "plug")), "spec.plugins: \"plug\" is not allowed; allowed: a list of plug-in folders");
  EXPECT_EQ(spec_error(spec_with("plugins", {3})), "spec.plugins[0]: 3 is not allowed; allowed: a folder path");
}

TEST(SpecMessages, ASpecFileThatCannotBeReadSaysWhy) {
  const fs::path dir = test::fresh_temp_dir("spec-messages-load");
  const std::string folder = dir.string();
  EXPECT_EQ(test::input_error([&] { SweepSpec::load(folder); }),
            "spec: '" + folder + "' is a directory, not a spec file; give a JSON file such as sweeps/default.json");
  EXPECT_EQ(test::input_error([&] { SweepSpec::load(folder + "/none.json"); }), "spec: cannot read '" + folder + "/none.json'");
  std::ofstream(dir / "bad.json") << "{\"name\": ";
  const std::string bad = test::input_error([&] { SweepSpec::load((dir / "bad.json").string()); });
  EXPECT_EQ(bad.rfind("spec: " + (dir / "bad.json").string() + " is not valid JSON: ", 0), 0u) << bad;
  fs::remove_all(dir);
}

// ---- measure.cpp -------------------------------------------------------------------------------------------

std::string measure_error(const json& j) {
  try {
    MeasureOptions::from_json(j, "spec.measure");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(MeasureMessages, EachOptionIsCheckedAtItsLimits) {
  EXPECT_EQ(measure_error(json::array()), "spec.measure: must be an object");
  EXPECT_EQ(measure_error({{"cold", 1}}), "spec.measure.cold: must be true or false");
  EXPECT_EQ(measure_error({{"warmup", -1}}), "spec.measure.warmup: -1 is not allowed; allowed: an integer in 0..100000");
  EXPECT_EQ(measure_error({{"warmup", 100001}}),
            "spec.measure.warmup: 100001 is not allowed; allowed: an integer in 0..100000");
  EXPECT_EQ(measure_error({{"min_samples", 0}}),
            "spec.measure.min_samples: 0 is not allowed; allowed: an integer in 1..100000");
  EXPECT_EQ(measure_error({{"max_samples", 100001}}),
            "spec.measure.max_samples: 100001 is not allowed; allowed: an integer in 1..100000");
  EXPECT_EQ(measure_error({{"max_samples", 2.5}}),
            "spec.measure.max_samples: 2.5 is not allowed; allowed: an integer in 1..100000");
  EXPECT_EQ(measure_error({{"max_rel_stderr", 0}}),
            "spec.measure.max_rel_stderr: 0 is not allowed; allowed: a number in (0, 1] (a fraction of the mean)");
  EXPECT_EQ(measure_error({{"max_rel_stderr", 5}}),  // 500%: no bound at all
            "spec.measure.max_rel_stderr: 5 is not allowed; allowed: a number in (0, 1] (a fraction of the mean)");
  EXPECT_EQ(measure_error({{"time_cap_s", 3600.5}}),
            "spec.measure.time_cap_s: 3600.5 is not allowed; allowed: a number in (0, 3600]");
  EXPECT_EQ(measure_error({{"time_cap_s", "1"}}),
            "spec.measure.time_cap_s: \"1\" is not allowed; allowed: a number in (0, 3600]");
  EXPECT_EQ(measure_error({{"samples", 3}}),
            "spec.measure.samples: unknown option; allowed: cold, warmup, min_samples, max_samples, max_rel_stderr, "
            "time_cap_s");
  EXPECT_EQ(measure_error({{"min_samples", 5}, {"max_samples", 4}}), "spec.measure.max_samples: must be at least min_samples");
  // At the limits: accepted, and each value lands in its own field.
  const MeasureOptions low = MeasureOptions::from_json(
      {{"cold", false}, {"warmup", 0}, {"min_samples", 1}, {"max_samples", 1}, {"max_rel_stderr", 1}, {"time_cap_s", 0.5}},
      "m");
  EXPECT_EQ(low.to_json(), (json{{"cold", false}, {"warmup", 0}, {"min_samples", 1}, {"max_samples", 1},
                                 {"max_rel_stderr", 1.0}, {"time_cap_s", 0.5}}));
  const MeasureOptions high = MeasureOptions::from_json(
      {{"warmup", 100000}, {"min_samples", 7}, {"max_samples", 100000}, {"max_rel_stderr", 0.01}, {"time_cap_s", 3600}},
      "m");
  EXPECT_EQ(high.warmup, 100000);
  EXPECT_EQ(high.min_samples, 7);
  EXPECT_EQ(high.max_samples, 100000);
  EXPECT_DOUBLE_EQ(high.max_rel_stderr, 0.01);
  EXPECT_DOUBLE_EQ(high.time_cap_s, 3600);
  EXPECT_TRUE(high.cold);
}

// ---- problem.cpp -------------------------------------------------------------------------------------------

std::string problem_error(const json& j) {
  try {
    Problem::from_json(j, "p");
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not an InputError: ") + e.what();
  }
  return "accepted";
}

TEST(ProblemMessages, DimensionsAreNamedWithTheirRangeAndMeaning) {
  EXPECT_EQ(problem_error(3), "p: must be an object with a 'family' and its dimensions");
  EXPECT_EQ(problem_error({{"h", 8}}), "p.family: missing; allowed: " + kFamilies);
  EXPECT_EQ(problem_error({{"family", 3}, {"h", 8}}), "p.family: missing; allowed: " + kFamilies);
  EXPECT_EQ(problem_error({{"family", {"conv2d"}}}), "p.family: missing; allowed: " + kFamilies);
  EXPECT_EQ(problem_error({{"family", "conv2d"}, {"h", 8}, {"w", "8"}, {"r", 1}}), "p.w: must be an integer, got \"8\"");
  EXPECT_EQ(problem_error({{"family", "conv2d"}, {"h", 8}, {"w", 8}, {"r", 1}, {"d", 1}}),
            "p.d: unknown dimension for family conv2d; allowed: h, w, r, b");
  EXPECT_EQ(problem_error({{"family", "conv2d"}, {"h", 8}, {"r", 1}}), "p.w: missing; allowed 1..65536 (image width)");
  EXPECT_EQ(problem_error({{"family", "conv2d"}, {"h", 65537}, {"w", 8}, {"r", 1}}),
            "p.h: 65537 is out of range; allowed 1..65536 (image height)");
  EXPECT_EQ(problem_error({{"family", "conv2d"}, {"h", 0}, {"w", 8}, {"r", 1}}),
            "p.h: 0 is out of range; allowed 1..65536 (image height)");
  EXPECT_EQ(problem_error({{"family", "conv2d"}, {"h", 8}, {"w", 8}, {"r", 33}}),
            "p.r: 33 is out of range; allowed 0..32 (filter radius)");
  EXPECT_EQ(problem_error({{"family", "conv2d"}, {"h", 65536}, {"w", 1}, {"r", 32}}), "accepted");
  EXPECT_EQ(problem_error({{"family", "conv2d"}, {"h", 1}, {"w", 65536}, {"r", 0}}), "accepted");
  // A dimension left out takes its default where the family gives one (conv2d's batch: 1).
  EXPECT_EQ(Problem::from_json({{"family", "conv2d"}, {"h", 8}, {"w", 8}, {"r", 1}}, "p").dims.at("b"), 1);
}

TEST(ProblemMessages, AFamilysOwnCheckNamesTheDimensionAndWhatIsAllowed) {
  EXPECT_EQ(problem_error({{"family", "conv1d"}, {"n", 5}, {"m", 6}, {"mode", 0}}),
            "p.m: 6 > n = 5 in valid mode (mode 0); allowed: m <= n, or mode 1 (full)");
  EXPECT_EQ(problem_error({{"family", "conv1d"}, {"n", 5}, {"m", 5}, {"mode", 0}}), "accepted");
  EXPECT_EQ(problem_error({{"family", "conv1d"}, {"n", 5}, {"m", 6}}), "accepted");  // mode 1 by default
  EXPECT_EQ(problem_error({{"family", "conv1d_parts"}, {"n", 5}, {"m", 3}, {"start", 0}, {"end", 8}}),
            "p.end: 8 is past the full convolution; allowed: end <= n + m - 1 = 7");
  EXPECT_EQ(problem_error({{"family", "conv1d_parts"}, {"n", 5}, {"m", 3}, {"start", 0}, {"end", 7}}), "accepted");
  EXPECT_EQ(problem_error({{"family", "conv1d_parts"}, {"n", 5}, {"m", 3}, {"start", 4}, {"end", 4}}),
            "p.start: 4 must be < end = 4 (the slice [start, end) may not be empty)");
  EXPECT_EQ(problem_error({{"family", "conv1d_parts"}, {"n", 5}, {"m", 3}, {"start", 3}, {"end", 4}}), "accepted");
}

// ---- params.cpp --------------------------------------------------------------------------------------------

TEST(ParamsMessages, RestrictionsAndConfigsNameTheParameterAndItsValues) {
  ParamSpace s;
  s.add("tile", "tile width", {8, 16}).add("dir", "axis", {"x", "y"});
  auto restricted = [&](const json& r) { return test::input_error([&] { s.restricted(r, "p"); }); };
  EXPECT_EQ(restricted(json::array()), "p: must be an object {parameter: value or [values]}");
  EXPECT_EQ(restricted({{"tiles", 8}}), "p.tiles: unknown parameter; allowed: tile, dir");
  EXPECT_EQ(restricted({{"tile", json::array()}}), "p.tile: needs at least one value");
  EXPECT_EQ(restricted({{"dir", 1}}), "p.dir: 1 is not a name; allowed: x, y");
  EXPECT_EQ(restricted({{"tile", -8}}), "p.tile: -8 is negative; allowed: positive integers (the space lists 8, 16)");
  EXPECT_EQ(restricted({{"tile", {8, 0}}}), "p.tile: 0 is zero; allowed: positive integers (the space lists 8, 16)");
  ParamSpace none;
  EXPECT_EQ(test::input_error([&] { none.restricted({{"tile", 8}}, "p"); }),
            "p.tile: unknown parameter; allowed: (none: this variant has no parameters)");
  ParamSpace from_zero;
  from_zero.add("pad", "", {0, 1});
  EXPECT_EQ(from_zero.restricted({{"pad", 0}}, "p").params().front().values, std::vector<json>{0});
  EXPECT_EQ(test::input_error([&] { from_zero.restricted({{"pad", -1}}, "p"); }),
            "p.pad: -1 is negative; allowed: integers >= 0 (the space lists 0, 1)");

  auto complete = [&](const json& c) { return test::input_error([&] { s.complete_config(c, "--config"); }); };
  EXPECT_EQ(complete(json::array()), "--config: must be an object");
  EXPECT_EQ(complete({{"tile", 8}, {"dir", "x"}, {"q", 1}}), "--config.q: unknown parameter; allowed: tile, dir");
  EXPECT_EQ(complete({{"tile", 8}}), "--config.dir: missing (axis; values: x, y)");
  EXPECT_EQ(complete({{"tile", "8"}, {"dir", "x"}}), "--config.tile: \"8\" is not an integer; values: 8, 16");
  EXPECT_EQ(complete({{"tile", 8}, {"dir", 2}}), "--config.dir: 2 is not a name; values: x, y");
  EXPECT_EQ(complete({{"tile", 8}, {"dir", "z"}}), "--config.dir: unknown value \"z\"; allowed: x, y");
  EXPECT_EQ(complete({{"tile", 0}, {"dir", "x"}}), "--config.tile: 0 is zero; allowed: positive integers (the space lists 8, 16)");
  EXPECT_EQ(test::input_error([&] { parse_config("tile=8,=3", "--config"); }),
            "--config: '=3' is not name=value (expected e.g. tile_x=32,tile_y=8)");
  EXPECT_EQ(test::input_error([&] { parse_config("tile=8,dir", "--config"); }),
            "--config: 'dir' is not name=value (expected e.g. tile_x=32,tile_y=8)");
  EXPECT_EQ(test::input_error([&] { parse_config("tile=8,dir=x,tile=16", "--config"); }),
            "--config: tile given twice; allowed: each name once");
}

TEST(ParamsMessages, ASpaceEnumeratesEveryPointLastParameterFastest) {
  ParamSpace s;
  s.add("a", "", {1, 2}).add("b", "", {"x", "y", "z"});
  EXPECT_EQ(s.size(), 6u);
  const std::vector<Config> all = s.enumerate();
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0], (json{{"a", 1}, {"b", "x"}}));
  EXPECT_EQ(all[1], (json{{"a", 1}, {"b", "y"}}));
  EXPECT_EQ(all[3], (json{{"a", 2}, {"b", "x"}}));
  EXPECT_EQ(all[5], (json{{"a", 2}, {"b", "z"}}));
  EXPECT_EQ(s.to_json(), (json::array({{{"name", "a"}, {"meaning", ""}, {"values", {1, 2}}},
                                       {{"name", "b"}, {"meaning", ""}, {"values", {"x", "y", "z"}}}})));
  EXPECT_EQ(ParamSpace().size(), 1u);  // no parameters: one config, the empty one
  EXPECT_EQ(ParamSpace().enumerate(), std::vector<Config>{json::object()});
  EXPECT_EQ(config_string({{"a", 1}, {"b", "x"}}), "a=1,b=x");
  const Config parsed = parse_config("a=12,b=x1,c=-3,,d=4x", "c");
  EXPECT_EQ(parsed, (json{{"a", 12}, {"b", "x1"}, {"c", -3}, {"d", "4x"}}));
}

// ---- records.cpp -------------------------------------------------------------------------------------------

// Reads `lines` as a records file: the InputError's message ("" if none) with the path written as "FILE", and
// the lines it set aside as not records.
std::string records_error(const std::string& tag, const std::vector<std::string>& lines,
                          std::vector<std::string>* problems = nullptr) {
  const fs::path dir = test::fresh_temp_dir("msg-" + tag);
  const fs::path path = dir / "records.jsonl";
  {
    std::ofstream out(path);
    for (const auto& l : lines) out << l << "\n";
  }
  auto filed = [&](std::string text) {
    for (size_t at; (at = text.find(path.string())) != std::string::npos;) text.replace(at, path.string().size(), "FILE");
    return text;
  };
  std::string error;
  try {
    const ReadResult r = read_records(path);
    if (problems)
      for (const auto& p : r.problems) problems->push_back(filed(p));
  } catch (const InputError& e) {
    error = filed(e.what());
  }
  fs::remove_all(dir);
  return error;
}

const std::string kRecord = R"("problem_key": "p", "candidate": "c", "status": "ok")";

TEST(RecordsMessages, AFieldOfTheWrongKindIsNamedWithWhatItMustBe) {
  EXPECT_EQ(records_error("variant", {"{" + kRecord + R"(, "variant": 3, "time": {"median_ms": 1}})"}),
            "FILE:1: variant is 3; allowed: a string");
  EXPECT_EQ(records_error("family", {"{" + kRecord + R"(, "family": ["conv2d"], "time": {"median_ms": 1}})"}),
            "FILE:1: family is [\"conv2d\"]; allowed: a string");
  EXPECT_EQ(records_error("nulls", {"{" + kRecord + R"(, "variant": null, "family": null, "time": {"median_ms": 1}})"}), "");
  EXPECT_EQ(records_error("time", {"{" + kRecord + R"(, "time": 1.5})"}),
            "FILE:1: time is 1.5; allowed: an object {\"median_ms\": milliseconds, ...}");
  EXPECT_EQ(records_error("config", {"{" + kRecord + R"(, "config": "block_x=32", "time": {"median_ms": 1}})"}),
            "FILE:1: config is \"block_x=32\"; allowed: an object");
  EXPECT_EQ(records_error("profile", {"{" + kRecord + R"(, "time_ms": 2})"}), "");  // a profile line: no time block
}

// A line of JSON that is no record (hand-edited, or not convtune's) is refused naming its line: a reader that
// set it aside would export a table without it. Each of the three keys missing in turn, and a line that is no object.
TEST(RecordsMessages, LinesThatAreNotRecordsAreRefusedWithTheirNumbers) {
  const std::string good = "{" + kRecord + R"(, "time": {"median_ms": 1}})";
  for (const std::string line : {R"({"candidate": "c", "status": "ok"})", "[1, 2]", R"({"problem_key": "p", "candidate": "c"})",
                                 R"({"problem_key": "p", "status": "ok"})"})
    EXPECT_EQ(records_error("aside", {good, "", line}),
              "FILE:3: not a record; allowed: an object with problem_key, candidate and status")
        << line;
}

TEST(RecordsMessages, AMissingOrPackedRecordsFileIsNamed) {
  const fs::path dir = test::fresh_temp_dir("msg-records-files");
  const fs::path path = dir / "records.jsonl";
  EXPECT_EQ(test::input_error([&] { read_records(path); }),
            path.string() + ": not found, nor records.jsonl.gz (not a run folder?)");
  std::ofstream(dir / "records.jsonl.gz") << "";
  EXPECT_EQ(test::input_error([&] { RecordWriter w(path); }),
            "cannot append to " + path.string() + ": the run is packed (" + path.string() +
                ".gz); convtune unpack it first");
  EXPECT_FALSE(fs::exists(path));
  fs::remove_all(dir);
}

// ---- merge.cpp ---------------------------------------------------------------------------------------------


std::string merge_error(const std::vector<fs::path>& runs, const fs::path& out) {
  std::ostringstream log;
  return test::input_error([&] { merge_runs(runs, out, {}, log); });
}

TEST(MergeMessages, ShardsThatDoNotMergeAreNamedWithTheFieldAndWhatMerges) {
  const fs::path root = test::fresh_temp_dir("msg-merge");
  const auto shards = test::two_shard_folders(root);
  const std::string s0 = shards[0].string(), s1 = shards[1].string();
  EXPECT_EQ(merge_error({}, root / "out"), "merge: give the run folders of the shards");
  EXPECT_EQ(merge_error({shards[0], root / "none"}, root / "out"),
            "merge: " + (root / "none").string() +
                " is not a run folder (needs summary.json and records.jsonl or records.jsonl.gz)");
  EXPECT_EQ(merge_error({shards[0], shards[0]}, root / "out"),
            "merge: " + s0 + " and " + s0 + " are both shard 0/2; give each shard once");
  EXPECT_EQ(merge_error({shards[0]}, shards[1]), "merge: -o " + s1 + " already holds a run");
  std::ofstream(root / "merged.txt") << "kept";
  EXPECT_EQ(merge_error(shards, root / "merged.txt"),
            "merge: -o " + (root / "merged.txt").string() + " is a file; allowed: a folder (new, or empty)");
  EXPECT_EQ(test::read_text(root / "merged.txt"), "kept");
  json other = read_json(shards[1] / "summary.json");
  other["device"]["name"] = "NVIDIA H200";
  write_json_atomically(shards[1] / "summary.json", other);
  EXPECT_EQ(merge_error(shards, root / "out"),
            "merge: " + s1 + " differs from " + s0 +
                " in device.name (\"NVIDIA H200\" vs \"NVIDIA H100 80GB HBM3\"); only shards of one spec, GPU model, "
                "driver and shard count merge");
  other["spec"]["name"] = "another";
  write_json_atomically(shards[1] / "summary.json", other);
  EXPECT_EQ(merge_error(shards, root / "out"),
            "merge: " + s1 + " differs from " + s0 + " in spec; only shards of one spec, GPU model, driver and shard count merge");
  other = read_json(shards[0] / "summary.json");
  other["shard"] = Shard{1, 3}.to_json();
  write_json_atomically(shards[1] / "summary.json", other);
  EXPECT_EQ(merge_error(shards, root / "out"),
            "merge: " + s1 + " differs from " + s0 +
                " in shard.count (3 vs 2); only shards of one spec, GPU model, driver and shard count merge");
  other.erase("spec");
  for (int i = 0; i < 2; ++i) {
    other["shard"] = Shard{i, 2}.to_json();
    write_json_atomically(shards[size_t(i)] / "summary.json", other);
  }
  EXPECT_EQ(merge_error(shards, root / "out"),
            "merge: the shards' summary.json has no spec or device block (made by an older convtune?)");
  EXPECT_FALSE(fs::exists(root / "out"));
  fs::remove_all(root);
}

// ---- fleet.cpp ---------------------------------------------------------------------------------------------

json model_table(const std::string& model, const std::string& run) {
  json t = {{"device", {{"name", model}}}};
  if (!run.empty()) t["source"] = {{"run", run}};
  return t;
}

TEST(FleetMessages, AFleetTakesOneRunPerModelAndSaysItsRules) {
  EXPECT_EQ(test::input_error([] { make_fleet({}); }), "export: no tables for a fleet");
  EXPECT_EQ(test::input_error([] {
              make_fleet({model_table("NVIDIA H100 80GB HBM3", "runs/a"), model_table("NVIDIA A100", "runs/b"),
                          model_table("NVIDIA H100 80GB HBM3", "")});
            }),
            "export: two runs of NVIDIA H100 80GB HBM3 (runs/a and ?) in device.name; a fleet table takes one run per "
            "GPU model");
  const json fleet = make_fleet({model_table("NVIDIA H100 80GB HBM3", "runs/a"), model_table("NVIDIA A100", "runs/b")});
  EXPECT_EQ(fleet.at("schema"), 1);
  EXPECT_EQ(fleet.at("fleet"), true);
  EXPECT_EQ(fleet.at("rules"), (json{"the exact model (device.name) whose table has the family", "a model of the same architecture (device.compute_capability) whose table has the family",
                                     "the family's safe default of the first table"}));
  EXPECT_EQ(fleet.at("tables"), (json{model_table("NVIDIA H100 80GB HBM3", "runs/a"), model_table("NVIDIA A100", "runs/b")}));
  EXPECT_EQ(fleet.size(), 4u);
  EXPECT_TRUE(is_fleet(fleet));
  EXPECT_FALSE(is_fleet({{"fleet", false}}));
  EXPECT_FALSE(is_fleet(json::object()));
  EXPECT_FALSE(is_fleet(json::array({true})));
}

// ---- run_folder.cpp, runner.cpp, replay.cpp ----------------------------------------------------------------

TEST(RunMessages, AResumeOnAnotherGpuModelNamesBoth) {
  const fs::path dir = test::fresh_temp_dir("msg-resume");
  write_json_atomically(dir / "summary.json", {{"device", {{"name", "NVIDIA A100"}}}});
  DeviceInfo dev = DeviceInfo::offline_sm90();
  dev.name = "NVIDIA H100 80GB HBM3";
  SweepOptions options;
  options.ceilings = false;
  std::ostringstream log;
  const SweepSpec spec = SweepSpec::parse(spec_with("name", "t"));
  EXPECT_EQ(test::input_error([&] { open_run_folder(spec, dir, dev, options, {}, log); }),
            "--resume: " + dir.string() + " was recorded on 'NVIDIA A100', this GPU is 'NVIDIA H100 80GB HBM3'");
  EXPECT_EQ(read_json(dir / "summary.json"), (json{{"device", {{"name", "NVIDIA A100"}}}}));  // left as it was
  // A summary without a device block (hand-made, or cut short) is of no known model: "?".
  for (const json& summary : {json{{"schema", 1}}, json{{"device", json::object()}}}) {
    write_json_atomically(dir / "summary.json", summary);
    EXPECT_EQ(test::input_error([&] { open_run_folder(spec, dir, dev, options, {}, log); }),
              "--resume: " + dir.string() + " was recorded on '?', this GPU is 'NVIDIA H100 80GB HBM3'");
  }
  fs::remove_all(dir);
}

// A problem must fit in 80% of the device memory with its float64 reference: conv2d 1024 x 1024, radius 0,
// needs 4 * (2 * 2^20 + 1) bytes of operands and 8 * 2^20 of reference, 16777220 in all; 80% of 20971525
// bytes is exactly that.
TEST(RunMessages, AProblemMustFitInFourFifthsOfTheDeviceMemory) {
  const Problem p = test::conv2d(1024, 1024, 0);
  DeviceInfo dev;
  dev.name = "Small GPU";
  dev.global_mem_bytes = 20971526;
  EXPECT_NO_THROW(check_fits(p, dev, "run"));
  dev.global_mem_bytes = 20971524;
  EXPECT_EQ(test::input_error([&] { check_fits(p, dev, "run"); }),
            "run conv2d/h=1024,r=0,w=1024: needs 0.02 GiB of device memory (operands + float64 reference); Small GPU "
            "has 0.02 GiB; use a smaller shape");
  dev.global_mem_bytes = 0;  // unknown (offline): not checked
  EXPECT_NO_THROW(check_fits(p, dev, "run"));
}

TEST(RunMessages, ReplayNeedsATrialAndKnownStrategies) {
  EXPECT_EQ(test::input_error([] { replay_strategies({}, {"random"}, 0, 0.25); }),
            "replay: trials per problem must be at least 1");
  EXPECT_EQ(test::input_error([] { replay_strategies({}, {"random", "greedy"}, 1, 0.25); }),
            "spec.strategy: 'greedy' is not a strategy; allowed: exhaustive, random, halving, anneal, warm");
  EXPECT_NO_THROW(replay_strategies({}, {"random"}, 1, 0.25));
}

// ---- strategies/common.cpp ---------------------------------------------------------------------------------

std::vector<SearchCandidate> candidates(size_t n) {
  const Variant& v = Registry::instance().get("conv2d.naive");
  std::vector<SearchCandidate> out;
  for (size_t i = 0; i < n; ++i) out.push_back({&v, {{"block_x", 16 << (i % 4)}, {"block_y", 1 << (i / 4)}}});
  return out;
}

TEST(StrategyMessages, StrategiesAreNamedAndTheirOptionsCheckedAtTheLimits) {
  const std::string allowed = "allowed: exhaustive, random, halving, anneal, warm";
  EXPECT_EQ(test::input_error([] { strategy_traits("greedy"); }), "spec.strategy: 'greedy' is not a strategy; " + allowed);
  EXPECT_EQ(test::input_error([] { make_strategy("greedy", candidates(4), {}); }),
            "spec.strategy: 'greedy' is not a strategy; " + allowed);
  // Exhaustive measures each candidate on its own; warm needs a prior; the others neither.
  for (const std::string name : {"exhaustive", "random", "halving", "anneal", "warm"}) {
    EXPECT_EQ(strategy_traits(name).measures_every_candidate, name == "exhaustive") << name;
    EXPECT_EQ(strategy_traits(name).needs_prior, name == "warm") << name;
  }
  StrategyOptions o;
  o.keep_fraction = 0;
  EXPECT_EQ(test::input_error([&] { make_strategy("halving", candidates(4), o); }),
            "strategy keep_fraction: 0.000000 is not in (0, 1]");
  o.keep_fraction = 1.25;
  EXPECT_EQ(test::input_error([&] { make_strategy("random", candidates(4), o); }),
            "strategy keep_fraction: 1.250000 is not in (0, 1]");
  o.keep_fraction = 1;
  EXPECT_NO_THROW(make_strategy("halving", candidates(4), o));
  o.prior_order = {3, 4};
  try {
    make_strategy("warm", candidates(4), o);
    ADD_FAILURE() << "a prior index past the candidates was accepted";
  } catch (const std::out_of_range& e) {
    EXPECT_EQ(std::string(e.what()), "prior_order: index 4 is past the 4 candidates");
  }
  o.prior_order = {3, 0};
  EXPECT_NO_THROW(make_strategy("warm", candidates(4), o));
}

// random's default budget is a quarter of the space, rounded up, at least one; a given budget is capped at the
// space; exhaustive takes all, or the budget where one is given.
TEST(StrategyMessages, BudgetsAreAQuarterRoundedUpOrTheGivenCountCappedAtTheSpace) {
  auto budget = [](const std::string& name, size_t n, size_t max) {
    StrategyOptions o;
    o.max_evaluations = max;
    return make_strategy(name, candidates(n), o)->budget();
  };
  EXPECT_EQ(budget("random", 1, 0), 1u);
  EXPECT_EQ(budget("random", 4, 0), 1u);
  EXPECT_EQ(budget("random", 5, 0), 2u);
  EXPECT_EQ(budget("random", 20, 0), 5u);
  EXPECT_EQ(budget("random", 20, 7), 7u);
  EXPECT_EQ(budget("random", 20, 20), 20u);
  EXPECT_EQ(budget("random", 20, 21), 20u);
  EXPECT_EQ(budget("exhaustive", 20, 0), 20u);
  EXPECT_EQ(budget("exhaustive", 20, 3), 3u);
  EXPECT_EQ(budget("exhaustive", 20, 21), 20u);
  EXPECT_EQ(budget("exhaustive", 0, 0), 0u);
  // halving screens the most candidates m whose round plus its ceil(m / 4) survivors fit the budget: all 20
  // and 5 without one; 8 and 2 in 10 (9 and 3 would not fit); with a budget of one, one full measurement.
  EXPECT_EQ(budget("halving", 20, 0), 25u);
  EXPECT_EQ(budget("halving", 20, 10), 10u);
  EXPECT_EQ(budget("halving", 20, 11), 10u);
  EXPECT_EQ(budget("halving", 20, 12), 12u);
  EXPECT_EQ(budget("halving", 20, 2), 2u);
  EXPECT_EQ(budget("halving", 20, 1), 1u);
  EXPECT_EQ(budget("halving", 20, 100), 25u);
  EXPECT_EQ(budget("halving", 0, 0), 0u);
}

// halving screens all four briefly, then measures the best quarter (one) fully; a failed screening never
// survives; a proposal must be told before the next, and the tell must match it.
TEST(StrategyMessages, HalvingScreensBrieflyThenMeasuresTheBestQuarterFully) {
  auto s = make_strategy("halving", candidates(4), {});
  std::vector<size_t> screened;
  const std::vector<double> brief = {3.0, 1.0, NAN, 2.0};
  for (int i = 0; i < 4; ++i) {
    const auto p = s->next();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->fidelity, Fidelity::brief);
    if (i == 0) {
      try {
        s->next();
        ADD_FAILURE() << "a second proposal before the first was told";
      } catch (const std::logic_error& e) {
        EXPECT_EQ(std::string(e.what()), "halving: next() called before tell() of the previous proposal");
      }
      try {
        s->tell(Proposal{p->index, Fidelity::full}, 1.0);
        ADD_FAILURE() << "a tell of another fidelity was taken";
      } catch (const std::logic_error& e) {
        EXPECT_EQ(std::string(e.what()), "halving: tell() does not match the pending proposal");
      }
    }
    screened.push_back(p->index);
    s->tell(*p, brief[p->index]);
  }
  std::sort(screened.begin(), screened.end());
  EXPECT_EQ(screened, (std::vector<size_t>{0, 1, 2, 3}));
  const auto full = s->next();
  ASSERT_TRUE(full);
  EXPECT_EQ(full->index, 1u);
  EXPECT_EQ(full->fidelity, Fidelity::full);
  s->tell(*full, 1.0);
  EXPECT_FALSE(s->next());
  // Every screening failed: nothing to measure fully.
  auto failed = make_strategy("halving", candidates(4), {});
  while (const auto p = failed->next()) {
    ASSERT_EQ(p->fidelity, Fidelity::brief);
    failed->tell(*p, NAN);
  }
}

// ---- dispatch_table.cpp: a table read by the runtime's rules --------------------------------------------------

// The InputError of reading `t` as a dispatch table, or "" when it is read.
std::string table_error(const json& t) {
  try {
    DispatchTable table(t);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

json one_entry_table(const json& entry) {
  return {{"device", {{"name", "GPU X"}}}, {"entries", json::array({entry})}};
}

const json kEntry = {{"family", "conv2d"}, {"problem_key", "conv2d/h=8,r=1,w=8"}, {"problem", {{"h", 8}, {"w", 8}, {"r", 1}}},
                     {"variant", "conv2d.naive"}, {"config", {{"block_x", 32}, {"block_y", 4}}}};

TEST(DispatchTableMessages, ATableAndItsEntriesAreCheckedNamingTheTableAndTheEntry) {
  EXPECT_EQ(table_error(json::array()), "dispatch table: not a JSON object");
  EXPECT_EQ(table_error({{"fleet", true}}), "dispatch table: a fleet table needs a non-empty \"tables\" array");
  EXPECT_EQ(table_error({{"fleet", true}, {"tables", json::array()}}),
            "dispatch table: a fleet table needs a non-empty \"tables\" array");
  EXPECT_EQ(table_error({{"fleet", true}, {"tables", {{{"entries", 3}}}}}), "dispatch table: no \"entries\" array");
  EXPECT_EQ(table_error({{"device", {{"name", "GPU X"}}}}), "dispatch table of GPU X: no \"entries\" array");
  EXPECT_EQ(table_error(one_entry_table(kEntry)), "");
  json e = kEntry;
  e["problem"].erase("w");
  EXPECT_EQ(table_error(one_entry_table(e)), "dispatch table of GPU X: entry conv2d/h=8,r=1,w=8: problem lacks dim 'w'");
  e = kEntry;
  e["problem"]["b"] = "two";  // b has a default: a value that is not an integer is read as the default
  EXPECT_EQ(table_error(one_entry_table(e)), "");
  e = kEntry;
  e.erase("problem_key");
  e.erase("variant");
  EXPECT_EQ(table_error(one_entry_table(e)), "dispatch table of GPU X: entry ?: no \"variant\" name");
  e = kEntry;
  e["config"] = json::object();
  for (int i = 0; i < 12; ++i) e["config"]["t" + std::to_string(i)] = i;
  EXPECT_EQ(table_error(one_entry_table(e)), "");  // 12 tunables: the rules' limit
  e["config"]["t12"] = 12;
  EXPECT_EQ(table_error(one_entry_table(e)), "dispatch table of GPU X: entry conv2d/h=8,r=1,w=8: config must be an object of "
                                             "at most 12 tunables");
  e["config"] = "block_x=32";
  EXPECT_EQ(table_error(one_entry_table(e)), "dispatch table of GPU X: entry conv2d/h=8,r=1,w=8: config must be an object of "
                                             "at most 12 tunables");
  e["config"] = {{"block_x", 32.5}};
  EXPECT_EQ(table_error(one_entry_table(e)),
            "dispatch table of GPU X: entry conv2d/h=8,r=1,w=8: tunable block_x is neither an integer nor a string");
  e["config"] = {{"block_x", true}, {"order", "input_rows"}};  // a flag reads as 0 or 1
  EXPECT_EQ(table_error(one_entry_table(e)), "");
  json with_default = one_entry_table(kEntry);
  with_default["fallback"] = {{"defaults", {{"conv2d", {{"config", json::object()}}}}}};
  EXPECT_EQ(table_error(with_default), "dispatch table of GPU X: default of conv2d: no \"variant\" name");
}

// The shipped fleet's H100 table, whose conv2d model is harmed one way at a time: each refusal names the table,
// the family's model and what is wrong, whole.
TEST(DispatchTableMessages, ACorruptModelIsRefusedWhole) {
  const json good = read_json(fs::path(CONVTUNE_SOURCE_DIR) / "results/fleet-h100-h200/dispatch.json")["tables"][0];
  const int features = good["model"]["families"]["conv2d"]["feature_count"].get<int>();
  auto refusal = [&](const std::function<void(json&)>& harm) {
    json t = good;
    harm(t["model"]["families"]["conv2d"]);
    return table_error(t);
  };
  const std::string where = "dispatch table of NVIDIA H100 80GB HBM3: model of conv2d: ";
  EXPECT_EQ(refusal([](json&) {}), "");
  EXPECT_EQ(refusal([](json& m) { m["feature_count"] = 3; }),
            where + "made for 3 features, the family's dims and its tunables give " + std::to_string(features) +
                " (a model of another convtune or another family?)");
  EXPECT_EQ(refusal([](json& m) { m["trees"][0]["yes"][0] = 0; }), where + "a tree whose links meet or loop");
  EXPECT_EQ(refusal([](json& m) { m["trees"][0]["no"][0] = 100000; }), where + "a tree link out of the tree");
  EXPECT_EQ(refusal([](json& m) { m["trees"][0]["yes"][0] = -1; }), where + "a tree link out of the tree");
  EXPECT_EQ(refusal([](json& m) { m["trees"][0]["value"].erase(0); }), where + "tree arrays differ in length");
  EXPECT_EQ(refusal([](json& m) {  // crashed the reader (a walk from the root of nothing) until it was refused first
              for (const char* key : {"feature", "threshold", "yes", "no", "value"}) m["trees"][0][key] = json::array();
            }),
            where + "an empty tree");
  EXPECT_EQ(refusal([&](json& m) { m["trees"][0]["feature"][0] = features; }),
            where + "a split on feature " + std::to_string(features) + " of " + std::to_string(features));
  EXPECT_EQ(refusal([&](json& m) { m["trees"][0]["feature"][0] = features - 1; }), "");
  EXPECT_EQ(refusal([](json& m) { m["numeric"] = 5; }), where + "no \"numeric\" array");
  EXPECT_EQ(refusal([](json& m) { m["variants"][0] = 5; }), where + "\"variants\" must hold names");
  auto first_leaf = [](const json& tree) {
    size_t i = 0;
    while (tree["feature"][i].get<int>() >= 0) ++i;
    return i;
  };
  EXPECT_EQ(refusal([&](json& m) { m["trees"][0]["yes"][first_leaf(m["trees"][0])] = 0; }),
            where + "a leaf with links (a leaf's yes and no are -1)");
  const std::string malformed = refusal([](json& m) { m.erase("base"); });
  EXPECT_EQ(malformed.rfind(where + "malformed (", 0), 0u) << malformed;
  EXPECT_EQ(refusal([](json& m) {
              while (m["candidates"].size() < 256) m["candidates"].push_back(m["candidates"][0]);
            }),
            "");
  EXPECT_EQ(refusal([](json& m) {
              while (m["candidates"].size() < 257) m["candidates"].push_back(m["candidates"][0]);
            }),
            where + "257 candidates; allowed: at most 256");
}

// ---- dispatch.cpp: export and lookup -------------------------------------------------------------------------

TEST(DispatchMessages, AnExportWithoutOkRecordsCountsWhatItHad) {
  const json summary = {{"device", {{"name", "GPU X"}}}};
  auto record = [](const char* candidate, const char* status) {
    return json{{"problem_key", "conv2d/h=8,r=1,w=8"}, {"candidate", candidate}, {"status", status}};
  };
  EXPECT_EQ(test::input_error([&] {
              make_dispatch(summary, {record("a", "wrong_result"), record("b", "skipped"), record("c", "wrong_result")});
            }),
            "no ok records to export (skipped 1, wrong_result 2): every candidate failed or was skipped");
  EXPECT_EQ(test::input_error([&] { make_dispatch(summary, {}); }),
            "no ok records to export (no records): every candidate failed or was skipped");
}

TEST(DispatchMessages, ALookupWithoutACandidateSaysWhatTheTableCovers) {
  const Problem p = Problem::from_json({{"family", "conv1d"}, {"n", 10}, {"m", 3}}, "p");
  const DispatchTable conv2d_only(one_entry_table(kEntry));
  EXPECT_EQ(test::input_error([&] { lookup(conv2d_only.pick("GPU X", "9.0", ""), p); }),
            "the dispatch table has no candidate for conv1d/m=3,mode=1,n=10 (it covers: conv2d)");
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  EXPECT_EQ(test::input_error([&] { lookup(conv2d_only.pick("GPU X", "9.0", ""), p, &dev); }),
            "the dispatch table has no candidate for conv1d/m=3,mode=1,n=10 that can run on offline sm_90 (H100 limits) "
            "(it covers: conv2d)");
  const DispatchTable empty(json{{"entries", json::array()}});
  EXPECT_EQ(test::input_error([&] { lookup(empty.pick("GPU X", "9.0", ""), p); }),
            "the dispatch table has no candidate for conv1d/m=3,mode=1,n=10 (it covers: nothing)");
}

TEST(DispatchMessages, RepeatsAndTrainingRunsMustBeOtherRunsOfTheSameModel) {
  const fs::path root = test::fresh_temp_dir("msg-repeats");
  EXPECT_EQ(test::input_error([&] { read_run(root / "none"); }), (root / "none").string() + ": not a run folder (no such directory)");
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  const RunTable run{root / "a", {{"device", {{"name", "GPU X"}}}}, {}, {}};
  const RunTable same_model{root / "b", {{"device", {{"name", "GPU X"}}}}, {}, {}};
  const RunTable other_model{root / "b", {{"device", {{"name", "GPU Y"}}}}, {}, {}};
  const RunTable unnamed{root / "a", {{"device", json::object()}}, {}, {}};
  const std::string a = (root / "a").string(), b = (root / "b").string();
  EXPECT_EQ(test::input_error([&] { dispatch_over_repeats(unnamed, {same_model}); }),
            "export --repeat: " + a + "/summary.json has no device.name, so its repeats cannot be checked to be of its GPU model");
  EXPECT_EQ(test::input_error([&] { dispatch_over_repeats(run, {run}); }),
            "export --repeat " + a + ": the run itself; allowed: other runs of its GPU model");
  EXPECT_EQ(test::input_error([&] { dispatch_over_repeats(run, {same_model, same_model}); }),
            "export --repeat " + b + ": given twice; allowed: each repeat once");
  EXPECT_EQ(test::input_error([&] { dispatch_over_repeats(run, {other_model}); }),
            "export --repeat " + b + ": device.name is 'GPU Y'; allowed: 'GPU X', the GPU model of " + a);
  // --train: a run of another model than every exported run's is named with the models it could join.
  write_json_atomically(root / "b" / "summary.json", {{"device", {{"name", "GPU Y"}}}});
  std::ofstream(root / "b" / "records.jsonl") << "";
  std::vector<RunTable> runs = {run, RunTable{root / "a", {{"device", {{"name", "GPU Z"}}}}, {}, {}}};
  EXPECT_EQ(test::input_error([&] { attach_training(runs, {root / "b"}); }),
            "export --train " + b + ": device.name is 'GPU Y'; allowed: the GPU models of the runs exported, 'GPU X', 'GPU Z'");
  fs::remove_all(root);
}

// ---- conv1d_parts/schedule.cpp: the schedule's arguments --------------------------------------------------

template <class F>
std::string invalid_argument(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(ScheduleMessages, EachRefusalNamesTheArgumentsItRefuses) {
  auto schedule = [](int64_t n_a, int64_t n_b, int64_t l_a, int64_t l_b, int64_t start, int64_t end) {
    return invalid_argument([&] { parts::make_parts_schedule(n_a, n_b, l_a, l_b, start, end); });
  };
  EXPECT_EQ(schedule(0, 100, 4, 4, 0, 99), "make_parts_schedule: lengths must be >= 1, got n_a=0 n_b=100");
  EXPECT_EQ(schedule(100, -1, 4, 4, 0, 99), "make_parts_schedule: lengths must be >= 1, got n_a=100 n_b=-1");
  EXPECT_EQ(schedule(100, 100, 0, 4, 0, 199), "make_parts_schedule: block lengths must be >= 1, got l_a=0 l_b=4");
  EXPECT_EQ(schedule(100, 100, 4, -4, 0, 199), "make_parts_schedule: block lengths must be >= 1, got l_a=4 l_b=-4");
  EXPECT_EQ(schedule(100, 100, 4, 6, 0, 199), "make_parts_schedule: one block length must divide the other, got l_a=4 l_b=6");
  EXPECT_EQ(schedule(100, 100, int64_t(1) << 31, 1, 0, 199),
            "make_parts_schedule: too many divisions for l_a=2147483648 l_b=1");
  EXPECT_EQ(schedule(100, 100, 1, 2147483647, 0, 199),
            "make_parts_schedule: too many divisions for l_a=1 l_b=2147483647");
  EXPECT_EQ(schedule(100, 100, 4, 4, 5, 5), "make_parts_schedule: slice [5, 5) must be non-empty and inside [0, 199)");
  EXPECT_EQ(schedule(100, 100, 4, 4, -1, 5), "make_parts_schedule: slice [-1, 5) must be non-empty and inside [0, 199)");
  EXPECT_EQ(schedule(100, 100, 4, 4, 0, 200), "make_parts_schedule: slice [0, 200) must be non-empty and inside [0, 199)");
  EXPECT_EQ(schedule(100, 100, 4, 4, 198, 199), "accepted");
  EXPECT_EQ(schedule(100, 100, 8, 4, 0, 199), "accepted");
  EXPECT_EQ(schedule(int64_t(1) << 40, 8, 1, 1, 0, 8),
            "make_parts_schedule: block indices must fit int32 (n_a=1099511627776 l_a=1 n_b=8 l_b=1)");
  EXPECT_EQ(invalid_argument([] { parts::admissible_block_lengths({4, 0}); }),
            "admissible_block_lengths: block length 0 < 1");
}

}  // namespace
}  // namespace convtune
