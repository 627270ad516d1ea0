// Edges of the harness's rule files that a mutation run (scripts/mutate.py) found untested: each test here
// fails with one surviving one-line mutant and passes without it. Expected values are worked out from the
// code by hand (the comments say how), not copied from the program's output.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/dispatch_rules.h"
#include "harness/dispatch_table.h"
#include "harness/family.h"
#include "harness/json_file.h"
#include "harness/measure.h"
#include "harness/perf_model.h"
#include "harness/records.h"
#include "harness/run_folder.h"
#include "harness/runner.h"
#include "harness/shard.h"
#include "harness/spec.h"
#include "harness/strategy.h"
#include "harness/sweep_plan.h"
#include "test_support.h"

namespace convtune {
namespace {

namespace fs = std::filesystem;

json edge_minimal_spec() {
  return {{"name", "t"}, {"problems", {{{"family", "conv2d"}, {"h", 64}, {"w", 64}, {"r", 1}}}}};
}

const Variant* edge_variant(size_t i) {
  const auto vs = test::builtin_variants("conv2d");
  if (vs.size() <= i) throw std::logic_error("edge_variant: too few conv2d variants");
  return vs[i];
}

// A one-leaf tree, as the table stores trees (feature -1: a leaf).
json edge_leaf_tree() {
  return {{"feature", {-1}}, {"threshold", {0.0}}, {"yes", {-1}}, {"no", {-1}}, {"value", {0.0}}};
}

// A conv2d model without variants, tunables or strings (features: the family's dims + 1, rules::feature_count)
// holding `n` candidates.
json edge_table_with_candidates(size_t n) {
  const int features = int(find_family("conv2d").dims().size()) + 1;
  json cands = json::array();
  for (size_t i = 0; i < n; ++i) cands.push_back({{"variant", "conv2d.naive"}, {"candidate", "c" + std::to_string(i)}});
  const json model = {{"variants", json::array()}, {"numeric", json::array()}, {"strings", json::array()},
                      {"feature_count", features},  {"base", 0.0},          {"trees", {edge_leaf_tree()}},
                      {"candidates", cands}};
  return {{"entries", json::array()}, {"model", {{"families", {{"conv2d", model}}}}}};
}

}  // namespace

// --- dispatch_table.cpp -------------------------------------------------------------------------------

// Survivors 1 and 2: a fleet table whose "tables" is not an array (but not empty either) is refused, with
// the whole message.
TEST(RuleEdges, FleetTableNeedsTablesArray) {
  const std::string want = "dispatch table: a fleet table needs a non-empty \"tables\" array";
  for (const json& tables : {json(5), json{{"x", 1}}, json("abc"), json::array()}) {
    const json t = {{"fleet", true}, {"tables", tables}};
    EXPECT_EQ(test::input_error([&] { DispatchTable d(t); }), want) << tables.dump();
  }
  EXPECT_EQ(test::input_error([&] { DispatchTable d(json{{"fleet", true}}); }), want);
}

// Survivor 3: a model with more than kMaxCandidates candidates names the count and the limit; one at the
// limit compiles.
TEST(RuleEdges, ModelCandidateLimitMessage) {
  const size_t limit = size_t(rules::kMaxCandidates);
  EXPECT_NO_THROW(DispatchTable d(edge_table_with_candidates(limit)));
  EXPECT_EQ(test::input_error([&] { DispatchTable d(edge_table_with_candidates(limit + 1)); }),
            "dispatch table: model of conv2d: " + std::to_string(limit + 1) + " candidates; allowed: at most " +
                std::to_string(limit));
}

// --- shard.cpp ----------------------------------------------------------------------------------------

// Survivor 4: a shard without "index" is shard 0 (of its count); a non-object is 0/1.
TEST(RuleEdges, ShardFromJsonDefaults) {
  const Shard s = Shard::from_json(json{{"count", 4}}, "shard");
  EXPECT_EQ(s.index, 0);
  EXPECT_EQ(s.count, 4);
  const Shard none = Shard::from_json(json(nullptr), "shard");
  EXPECT_EQ(none.index, 0);
  EXPECT_EQ(none.count, 1);
  EXPECT_EQ(Shard::from_json(json::object(), "shard").text(), "0/1");
}

// Survivor 5 (the mutants are equivalent: "/4" fails std::stoi of "" and "3" fails used_i != slash, both
// throwing the same message): the whole message of each.
TEST(RuleEdges, ShardParseRefusesMissingParts) {
  for (const std::string bad : {"/4", "3", "3/"})
    EXPECT_EQ(test::input_error([&] { Shard::parse(bad, "--shard"); }),
              "--shard: '" + bad + "' must be i/n with 0 <= i < n <= 100000, e.g. 0/4");
}

// --- spec.cpp -----------------------------------------------------------------------------------------

// Survivor 9: run names hold letters, digits, '-' and '_' only: characters above '_' ('`', '{', '~') are
// refused, '_' and '-' allowed.
TEST(RuleEdges, SpecNameCharacters) {
  json ok = edge_minimal_spec();
  ok["name"] = "a_b-C9";
  EXPECT_EQ(SweepSpec::parse(ok).name, "a_b-C9");
  for (const std::string bad : {"a~b", "a{b", "a`b", "a|b", "a b", "a.b"}) {
    json j = edge_minimal_spec();
    j["name"] = bad;
    EXPECT_EQ(test::input_error([&] { SweepSpec::parse(j); }),
              "spec.name: '" + bad + "' may hold only letters, digits, '-' and '_'");
  }
}

// Survivor 10: budget.seconds_total is read (into seconds_total, not seconds_per_problem) and validated.
TEST(RuleEdges, SpecBudgetSecondsTotal) {
  json j = edge_minimal_spec();
  j["budget"] = {{"seconds_total", 90}};
  const SweepSpec s = SweepSpec::parse(j);
  EXPECT_DOUBLE_EQ(s.budget.seconds_total, 90.0);
  EXPECT_DOUBLE_EQ(s.budget.seconds_per_problem, 0.0);
  j["budget"] = {{"seconds_per_problem", 7.5}, {"seconds_total", 0.5}};
  const SweepSpec both = SweepSpec::parse(j);
  EXPECT_DOUBLE_EQ(both.budget.seconds_per_problem, 7.5);
  EXPECT_DOUBLE_EQ(both.budget.seconds_total, 0.5);
  j["budget"] = {{"seconds_total", -1}};
  EXPECT_EQ(test::input_error([&] { SweepSpec::parse(j); }),
            "spec.budget.seconds_total: -1 is not allowed; allowed: a non-negative number of seconds (0 = no limit)");
}

// --- perf_model.cpp -----------------------------------------------------------------------------------

// Survivor 11: a family's model takes the table's entries of that family as candidates, and none of another
// family (neither one sorting before it, conv1d, nor after it, conv2d_separable).
TEST(RuleEdges, ModelCandidatesKeepTheirFamily) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const std::string v0 = edge_variant(0)->name(), v1 = edge_variant(1)->name();
  std::vector<json> records;
  for (int64_t r : {1, 3, 5}) {  // three problems: kMinModelProblems
    const Problem p = test::conv2d(64, 64, r);
    for (const std::string& v : {v0, v1})
      records.push_back({{"status", "ok"},
                         {"family", "conv2d"},
                         {"problem_key", p.key()},
                         {"problem", p.to_json()},
                         {"variant", v},
                         {"config", json::object()},
                         {"candidate", v},
                         {"time", {{"median_ms", v == v0 ? 1.0 + double(r) : 2.0 + double(r)}}}});
  }
  const json table = {{"entries",
                       {{{"family", "conv1d"}, {"variant", "conv1d.x"}, {"candidate", "edge-conv1d-entry"}},
                        {{"family", "conv2d"}, {"variant", v0}, {"candidate", "edge-conv2d-entry"}},
                        {{"family", "conv2d_separable"}, {"variant", "conv2d_separable.x"},
                         {"candidate", "edge-separable-entry"}}}}};
  const json models = fit_models(table, records);
  ASSERT_TRUE(models["families"].contains("conv2d")) << models.dump();
  std::set<std::string> names;
  for (const json& c : models["families"]["conv2d"]["candidates"]) names.insert(c.at("candidate").get<std::string>());
  // The two measured candidates and the conv2d entry: three, under the cap of 32.
  EXPECT_EQ(names, (std::set<std::string>{v0, v1, "edge-conv2d-entry"}));
}

// --- strategies/halving.cpp ---------------------------------------------------------------------------

// Survivor 13: tell() of anything but the pending proposal (another index, or the same index at another
// fidelity) is a logic error, and leaves the proposal pending.
TEST(RuleEdges, HalvingTellMustMatchPending) {
  std::vector<SearchCandidate> cands;
  for (int i = 0; i < 4; ++i) cands.push_back({edge_variant(0), json{{"i", i}}});
  auto s = make_strategy("halving", cands, {});
  const auto p = s->next();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->fidelity, Fidelity::brief);  // 4 candidates, no budget: a screening round of all 4 first
  EXPECT_THROW(s->tell(Proposal{(p->index + 1) % 4, p->fidelity}, 1.0), std::logic_error);
  EXPECT_THROW(s->tell(Proposal{p->index, Fidelity::full}, 1.0), std::logic_error);
  EXPECT_NO_THROW(s->tell(*p, 1.0));  // still pending after the refused ones
  EXPECT_THROW(s->tell(*p, 1.0), std::logic_error);  // nothing pending now
}

// --- sweep_plan.cpp -----------------------------------------------------------------------------------

// Survivor 8: the dry-run plan counts each problem's runnable candidates from 0 and its skipped ones per
// variant and reason.
TEST(RuleEdges, PlanCountsPerProblem) {
  const Variant* a = edge_variant(0);
  const Variant* b = edge_variant(1);
  const Problem p1 = test::conv2d(64, 64, 1), p2 = test::conv2d(64, 64, 3);
  SweepPlan plan;
  plan.candidates.push_back({a, p1, json{{"k", 1}}, Status::yes()});
  plan.candidates.push_back({a, p1, json{{"k", 2}}, Status::yes()});
  plan.candidates.push_back({b, p1, json{{"k", 3}}, Status::no("too big")});
  plan.candidates.push_back({b, p1, json{{"k", 4}}, Status::no("too big")});
  plan.candidates.push_back({a, p2, json{{"k", 1}}, Status::yes()});
  plan.candidates.push_back({b, p2, json{{"k", 1}}, Status::no("odd")});
  EXPECT_EQ(plan.runnable(), 3u);
  // Keys sorted: p1's key "conv2d/h=64,r=1,w=64" before p2's "...r=3...".
  const json want = json::array({
      {{"problem", p1.key()}, {"candidates", 2}, {"skipped", {{b->name(), {{"too big", 2}}}}}},
      {{"problem", p2.key()}, {"candidates", 1}, {"skipped", {{b->name(), {{"odd", 1}}}}}},
  });
  EXPECT_EQ(plan.to_json(), want);
  // A problem with only skipped candidates counts 0 runnable ones.
  SweepPlan skipped_only;
  skipped_only.candidates.push_back({b, p1, json::object(), Status::no("odd")});
  EXPECT_EQ(skipped_only.to_json()[0]["candidates"], 0);
}

// --- measure.cpp --------------------------------------------------------------------------------------

// Survivor 14: the options' JSON holds every option, max_samples included, and reads back the same.
TEST(RuleEdges, MeasureOptionsJsonHoldsMaxSamples) {
  MeasureOptions o;
  o.cold = false;
  o.warmup = 3;
  o.min_samples = 5;
  o.max_samples = 77;
  o.max_rel_stderr = 0.25;
  o.time_cap_s = 1.5;
  const json j = o.to_json();
  EXPECT_EQ(j, (json{{"cold", false}, {"warmup", 3}, {"min_samples", 5}, {"max_samples", 77},
                     {"max_rel_stderr", 0.25}, {"time_cap_s", 1.5}}));
  const MeasureOptions back = MeasureOptions::from_json(j, "measure");
  EXPECT_EQ(back.max_samples, 77);
  EXPECT_EQ(back.to_json(), j);
}

// Survivor 15: two samples {3, 1}: mean 2, squared deviations 1 + 1 = 2, sample variance 2 / (2 - 1) = 2,
// stdev sqrt(2); rel_stderr = sqrt(2) / sqrt(2) / 2 = 0.5. One sample: stdev 0, rel_stderr 1.
TEST(RuleEdges, TimingStdevOfTwoSamples) {
  const Timing t = Timing::from_samples({3.0, 1.0});
  EXPECT_EQ(t.samples, 2);
  EXPECT_DOUBLE_EQ(t.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(t.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(t.mean_ms, 2.0);
  EXPECT_DOUBLE_EQ(t.stdev_ms, std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(t.rel_stderr, 0.5);
  const Timing one = Timing::from_samples({4.0});
  EXPECT_DOUBLE_EQ(one.stdev_ms, 0.0);
  EXPECT_DOUBLE_EQ(one.rel_stderr, 1.0);
}

// --- runner.cpp (add_rates) ---------------------------------------------------------------------------

// Survivor 16: a median of 0 gives rates and roofline fractions of 0 (no division), and no math fraction;
// a median of 2 ms gives each floor / 2.
TEST(RuleEdges, AddRatesAtZeroMedian) {
  const json base = {{"bytes_min", 4e9}, {"flops", 8e9}, {"floor_ms", 1.0}, {"floor_own_ms", 0.5}, {"floor_math_ms", 0.25}};
  json r = base;
  add_rates(r, 0.0);
  EXPECT_EQ(r["gbps_effective"].get<double>(), 0.0);
  EXPECT_EQ(r["gflops"].get<double>(), 0.0);
  EXPECT_EQ(r["roofline_fraction"].get<double>(), 0.0);
  EXPECT_EQ(r["roofline_fraction_own"].get<double>(), 0.0);
  EXPECT_FALSE(r.contains("roofline_fraction_math"));
  json t = base;
  add_rates(t, 2.0);  // 2 ms = 0.002 s: 4e9 B / 0.002 s = 2000 GB/s, 8e9 / 0.002 = 4000 GFLOP/s
  EXPECT_DOUBLE_EQ(t["gbps_effective"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ(t["gflops"].get<double>(), 4000.0);
  EXPECT_DOUBLE_EQ(t["roofline_fraction"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(t["roofline_fraction_own"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(t["roofline_fraction_math"].get<double>(), 0.125);
}

// --- run_folder.cpp -----------------------------------------------------------------------------------

// Survivor 7: finalizing a run folder that has a summary but no records yet (interrupted before the first
// record) gives empty counts, not an error about the missing records.jsonl.
TEST(RuleEdges, FinalizeSummaryWithoutRecords) {
  const fs::path dir = test::fresh_temp_dir("edge-finalize");
  write_json_atomically(dir / "summary.json", {{"schema", 1}});
  const json s = finalize_summary(dir, true, {"convtune", "sweep"});
  EXPECT_EQ(s["counts"], json::object());
  EXPECT_FALSE(s.contains("records_per_gpu"));
  EXPECT_EQ(s["interrupted"], true);
  EXPECT_TRUE(s["finished"].is_null());
  EXPECT_FALSE(fs::exists(dir / "records.jsonl"));
  fs::remove_all(dir);
}

// --- records.cpp --------------------------------------------------------------------------------------

// Survivor 6: with stdin closed, open() returns descriptor 0 for the records file: a valid descriptor, so the
// writer appends (a `fd_ <= 0` check would call it a failure).
TEST(RuleEdges, RecordWriterWithStdinClosed) {
  const fs::path dir = test::fresh_temp_dir("edge-stdin");
  const int saved = dup(0);
  ASSERT_GE(saved, 0);
  close(0);
  std::string error;
  try {
    RecordWriter w(dir / "records.jsonl");
    w.append({{"problem_key", "p"}, {"candidate", "c"}, {"status", "ok"}});
  } catch (const std::exception& e) {
    error = e.what();
  }
  ASSERT_EQ(dup2(saved, 0), 0);  // stdin back before any check can fail
  close(saved);
  EXPECT_EQ(error, "");
  std::ifstream in(dir / "records.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(json::parse(line)["candidate"], "c");
  fs::remove_all(dir);
}

}  // namespace convtune
