// Bad input through the real `convtune` binary, as a new user types it: each case must end with its
// documented exit code and one line on stderr that names the file, field or flag, and must leave every
// file of the run folder it was pointed at as it was (checksums before and after).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <tuple>
#include <sstream>

#include "harness/device.h"
#include "harness/gzip_file.h"
#include "harness/json_file.h"
#include "test_support.h"

extern char** environ;

using namespace convtune;
using convtune::test::contains;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = CONVTUNE_SOURCE_DIR;
const fs::path kShippedRun = kSource / "results/nvidia-h100-80gb-hbm3/conv2d-spectral-20261123-183951";

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

using test::CliResult;
using test::read_text;
using test::run_captured;

using test::convtune_cli;

// Every file under `dir` (relative path -> contents hash): what a failing command must not change.
std::map<std::string, size_t> checksums(const fs::path& dir) {
  std::map<std::string, size_t> sums;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) sums[fs::relative(e.path(), dir).string()] = std::hash<std::string>()(read_text(e.path()));
  return sums;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = test::fresh_temp_dir("bad-input");
  }
  void TearDown() override { fs::remove_all(scratch_); }

  // A copy of a small shipped run with its records unpacked (records.jsonl), so that a case can edit a line.
  fs::path run_copy(const std::string& name) {
    const fs::path run = scratch_ / name;
    fs::create_directories(run);
    for (const char* f : {"summary.json", "dispatch.json"}) fs::copy_file(kShippedRun / f, run / f);
    write_text(run / "records.jsonl", read_gzip_file(kShippedRun / "records.jsonl.gz"));
    return run;
  }

  fs::path spec_file(const std::string& name, const json& spec) {
    const fs::path p = scratch_ / (name + ".json");
    write_text(p, spec.dump(1));
    return p;
  }

  // Runs the case and checks its exit code, one line naming `named`, and that `watched` did not change.
  void expect_refused(const std::vector<std::string>& args, const std::vector<std::string>& named,
                      const fs::path& watched = {}, int exit_code = 2) {
    const fs::path dir = watched.empty() ? scratch_ : watched;
    const auto before = checksums(dir);
    const CliResult r = convtune_cli(args, scratch_);
    std::string typed;
    for (const auto& a : args) typed += " " + a;
    EXPECT_EQ(r.exit_code, exit_code) << typed << "\n" << r.err;
    const auto lines = lines_of(r.err);
    EXPECT_EQ(lines.size(), 1u) << typed << "\n" << r.err;
    for (const auto& n : named) EXPECT_TRUE(contains(r.err, n)) << typed << ": does not name " << n << ":\n" << r.err;
    EXPECT_FALSE(contains(r.err, "json.exception")) << typed << ": " << r.err;
    EXPECT_LT(r.err.size(), 400u) << typed << ": not a readable line: " << r.err;
    EXPECT_EQ(checksums(dir), before) << typed << ": a failing command changed files under " << dir;
  }

  json smoke_spec(const json& params) {
    return {{"name", "bad"},
            {"problems", json::array({{{"family", "conv2d"}, {"h", 257}, {"w", 263}, {"r", 1}}})},
            {"variants", {"conv2d.naive"}},
            {"params", {{"conv2d.naive", params}}}};
  }

  // Replaces `from` by `to` in line `line` (1-based) of `file`.
  static void edit_line(const fs::path& file, int line, const std::string& from, const std::string& to) {
    std::istringstream in(read_text(file));
    std::string out, text;
    for (int n = 1; std::getline(in, text); ++n) {
      if (n == line) {
        const auto at = text.find(from);
        ASSERT_NE(at, std::string::npos) << file << ":" << line << " has no " << from;
        text.replace(at, from.size(), to);
      }
      out += text + "\n";
    }
    write_text(file, out);
  }

  // The 1-based number of the first ok record of `file`.
  static int first_ok_line(const fs::path& file) {
    std::istringstream in(read_text(file));
    int n = 1;
    for (std::string text; std::getline(in, text); ++n)
      if (json::parse(text).value("status", "") == "ok") return n;
    return 0;
  }

  fs::path scratch_;
};

}  // namespace

TEST_F(BadInput, ANegativeOrZeroSpecParameterIsNamedAsSuch) {
  expect_refused({"sweep", spec_file("neg", smoke_spec({{"block_x", {-32}}})).string(), "--dry-run"},
                 {"spec.params.conv2d.naive.block_x", "-32", "negative", "positive integers"});
  expect_refused({"sweep", spec_file("zero", smoke_spec({{"block_y", 0}})).string(), "--dry-run"},
                 {"spec.params.conv2d.naive.block_y", "zero"});
}

TEST_F(BadInput, ANegativeConfigValueOfRunIsNamed) {
  expect_refused({"run", "--variant", "conv2d.naive", "--problem", "conv2d:h=64,w=64,r=1", "--config", "block_x=-32"},
                 {"--config.block_x", "negative"});
}

// run --no-ceilings is an option of run (CLI11 would name an unknown one): without a GPU it reaches the check
// for one and says so, exit 1, nothing on stdout.
TEST_F(BadInput, RunTakesNoCeilingsAndStillNeedsAGpu) {
  if (DeviceInfo::count() > 0) GTEST_SKIP() << "a GPU is here: the no-GPU message is not reachable";
  const test::CliResult r = test::convtune_cli(
      {"run", "--variant", "conv2d.naive", "--problem", "conv2d:h=64,w=64,r=1", "--no-ceilings"}, scratch_);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("'convtune run' needs a CUDA GPU"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(BadInput, DeviceListsAreRefusedBeforeAnyPlanOrFolder) {
  const fs::path spec = kSource / "sweeps/smoke.json";
  const fs::path results = scratch_ / "results";
  for (const std::string devices : {"5", "abc", "0,0", "-1", "0,", "99999999"})
    expect_refused({"sweep", spec.string(), "--dry-run", "--results", results.string(), "--devices", devices},
                   {"--devices", "allowed"});
  EXPECT_FALSE(fs::exists(results));
}

TEST_F(BadInput, ShardStatesItsLimit) {
  expect_refused({"sweep", (kSource / "sweeps/smoke.json").string(), "--dry-run", "--shard", "0/1000000"},
                 {"--shard", "0/1000000", "n <= 100000"});
  expect_refused({"sweep", (kSource / "sweeps/smoke.json").string(), "--dry-run", "--shard", "4/4"}, {"--shard", "i < n"});
}

TEST_F(BadInput, ReplayRefusesARunThatWasNotExhaustive) {
  const fs::path run = run_copy("anneal");
  json summary = read_json(run / "summary.json");
  summary["spec"]["strategy"] = "anneal";
  write_text(run / "summary.json", summary.dump(1));
  expect_refused({"replay", run.string()}, {"summary.json", "spec.strategy", "anneal", "exhaustive"}, run);
  summary["spec"]["strategy"] = "exhaustive";
  summary["spec"]["budget"] = {{"max_evaluations_per_problem", 5}};
  write_text(run / "summary.json", summary.dump(1));
  expect_refused({"replay", run.string()}, {"spec.budget.max_evaluations_per_problem"}, run);
  for (const json& budget : {json{{"seconds_total", 240}}, json{{"seconds_per_problem", 5}},
                             json{{"max_evaluations_per_problem", "5"}}}) {
    summary["spec"]["budget"] = budget;
    write_text(run / "summary.json", summary.dump(1));
    expect_refused({"replay", run.string()}, {"spec.budget." + budget.begin().key()}, run);
  }
  summary["spec"].erase("budget");
  summary["interrupted"] = true;
  write_text(run / "summary.json", summary.dump(1));
  expect_refused({"replay", run.string()}, {"interrupted is true", "--resume"}, run);
  summary["interrupted"] = false;
  summary["finished"] = nullptr;  // killed before it could write interrupted
  write_text(run / "summary.json", summary.dump(1));
  expect_refused({"replay", run.string()}, {"finished is null", "--resume"}, run);
  summary["finished"] = "2026-11-23T18:39:51Z";
  summary["shard"] = {{"index", 1}, {"count", 4}};
  write_text(run / "summary.json", summary.dump(1));
  expect_refused({"replay", run.string()}, {"shard", "merge"}, run);
}

TEST_F(BadInput, ReplayNamesTheStrategiesFlag) {
  const fs::path run = run_copy("replay");
  for (const std::string names : {"greedy", "anneal,greedy", "anneal,", ","}) {
    const CliResult r = convtune_cli({"replay", run.string(), "--strategies", names}, scratch_);
    EXPECT_EQ(r.exit_code, 2) << names << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "--strategies") && contains(r.err, "allowed: a comma list of")) << r.err;
    EXPECT_FALSE(contains(r.err, "spec.strategy")) << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  }
  for (const std::string budget : {"nan", "-0.5", "1.5", "0.5x"})  // NaN passes every comparison of a range check
    expect_refused({"replay", run.string(), "--budget", budget}, {"--budget", "allowed: a fraction in [0, 1]"}, run);
}

TEST_F(BadInput, ARecordOfTheWrongKindIsNamedByFileLineAndField) {
  const fs::path run = run_copy("fast");
  const int line = first_ok_line(run / "records.jsonl");
  ASSERT_GT(line, 0);
  edit_line(run / "records.jsonl", line, "\"time\":{", "\"time\":\"fast\",\"was\":{");
  const std::string where = "records.jsonl:" + std::to_string(line);
  for (const std::string command : {"best", "export", "replay", "compare"}) {
    std::vector<std::string> args = {command, run.string()};
    if (command == "compare") args.push_back(run.string());
    expect_refused(args, {where, "time", "\"fast\"", "allowed"}, run);
  }
}

TEST_F(BadInput, ASummaryOfTheWrongKindFailsExportWithoutWritingAnything) {
  const fs::path run = run_copy("summary");
  json summary = read_json(run / "summary.json");
  summary["spec"] = 42;
  summary["device"] = "x";
  write_text(run / "summary.json", summary.dump(1));
  expect_refused({"export", run.string()}, {"summary.json", "spec is 42", "allowed"}, run);
  summary.erase("spec");
  write_text(run / "summary.json", summary.dump(1));
  expect_refused({"export", run.string()}, {"summary.json", "device is \"x\""}, run);
  expect_refused({"check-dispatch", (run / "dispatch.json").string(), run.string()}, {"summary.json", "device"}, run);
  summary["device"] = {{"name", 7}};
  write_text(run / "summary.json", summary.dump(1));
  expect_refused({"export", run.string()}, {"summary.json", "device.name is 7"}, run);
  summary.erase("device");
  write_text(run / "summary.json", summary.dump(1));
  expect_refused({"export", run.string()}, {"summary.json", "device is missing"}, run);
  summary["device"] = {{"name", "NVIDIA H100"}, {"compute_capability", "abc"}};
  write_text(run / "summary.json", summary.dump(1));
  expect_refused({"export", run.string()}, {"summary.json", "device.compute_capability is \"abc\"", "major.minor"}, run);
  summary["device"]["compute_capability"] = "9.0";
  for (const auto& [field, value, allowed] : std::vector<std::tuple<std::string, json, std::string>>{
           {"schema", 99, "allowed: 1"}, {"strategy_seed", "x", "allowed: an integer"}}) {
    json edited = summary;
    edited[field] = value;
    write_text(run / "summary.json", edited.dump(1));
    expect_refused({"export", run.string()}, {"summary.json", field + " is ", allowed}, run);
  }
  EXPECT_FALSE(fs::exists(run / "convtune_dispatch.h"));
  EXPECT_FALSE(fs::exists(run / "t4.json"));
}

// A table with a field of the wrong kind (hand-edited, or not export's) is refused naming the table's file.
TEST_F(BadInput, CheckDispatchNamesATableOfTheWrongShape) {
  const fs::path run = run_copy("table-shape");
  const json good = read_json(run / "dispatch.json");
  for (const auto& edit : std::vector<std::function<void(json&)>>{[](json& t) { t["fallback"] = json::array(); },
                                                                  [](json& t) { t["device"]["name"] = 5; },
                                                                  [](json& t) { t.erase("entries"); }}) {
    json table = good;
    edit(table);
    const fs::path file = scratch_ / "table-shape.json";
    write_text(file, table.dump(1));
    expect_refused({"check-dispatch", file.string(), run.string()}, {file.string()}, run);
  }
}

TEST_F(BadInput, ExportRefusesTheRunItselfAsItsOwnTraining) {
  const fs::path run = run_copy("train-itself");
  expect_refused({"export", run.string(), "--train", run.string()}, {"--train", "the run itself"}, run);
  expect_refused({"sweep", (kSource / "sweeps/smoke.json").string(), "--dry-run", "--seed", "-1"}, {"--seed"});
}

// A run with no records is no answer: best (with --json too) and replay say so and fail, cross-validation
// refuses it as input.
TEST_F(BadInput, ARunWithoutRecordsIsNoAnswer) {
  const fs::path run = run_copy("empty");
  write_text(run / "records.jsonl", "");
  expect_refused({"best", run.string(), "--json"}, {"no ok records"}, run, 1);
  expect_refused({"best", run.string()}, {"no ok records"}, run, 1);
  expect_refused({"replay", run.string()}, {"no ok records"}, run, 1);
  expect_refused({"check-dispatch", "--cross-validate", run.string()}, {"--cross-validate", "0 problem(s)"}, run);
}

// Runs held out whole need two runs with problems of their own, and no fold count beside them.
TEST_F(BadInput, LeavingRunsOutNeedsTwoRunsOfTheirOwnProblems) {
  const fs::path run = run_copy("good");
  expect_refused({"check-dispatch", "--leave-runs-out"}, {"--leave-runs-out", "--cross-validate"});
  expect_refused({"check-dispatch", "--cross-validate", run.string(), "--leave-runs-out"}, {"1 fold(s)", "two or more runs"},
                 run);
  expect_refused({"check-dispatch", "--cross-validate", run.string(), "--cross-validate", run.string(), "--leave-runs-out"},
                 {"1 fold(s)"}, run);  // the second adds no problem of its own
  expect_refused({"check-dispatch", "--cross-validate", run.string(), "--leave-runs-out", "--folds", "3"},
                 {"--folds", "--leave-runs-out"}, run);
}

TEST_F(BadInput, ExportOfAGoodCopyStillWritesItsThreeFiles) {
  const fs::path run = run_copy("good");
  const CliResult r = convtune_cli({"export", run.string()}, scratch_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"dispatch.json", "convtune_dispatch.h", "t4.json"}) EXPECT_TRUE(fs::exists(run / f)) << f;
}

TEST_F(BadInput, ADirectoryGivenAsASpecIsSaidToBeOne) {
  expect_refused({"sweep", (kSource / "sweeps").string(), "--dry-run"}, {"is a directory, not a spec file"});
}

TEST_F(BadInput, SecondsFlagsStateTheirRangeInWords) {
  for (const std::string cap : {"-1", "0", "1e400", "abc"})
    expect_refused({"run", "--variant", "conv2d.naive", "--problem", "conv2d:h=64,w=64,r=1", "--time-cap=" + cap},
                   {"--time-cap", "allowed: a number of seconds in (0, 3600]"});
  expect_refused({"profile", scratch_.string(), "--timeout=-5"}, {"--timeout", "(0, 86400]"});
}

TEST_F(BadInput, SpecFieldsNameTheirValueAndTheAllowedRange) {
  json spec = smoke_spec({{"block_x", {32}}});
  spec["measure"] = {{"time_cap_s", -1}};
  expect_refused({"sweep", spec_file("cap", spec).string(), "--dry-run"}, {"spec.measure.time_cap_s", "-1", "(0, 3600]"});
  spec.erase("measure");
  spec["budget"] = {{"max_evaluations_per_problem", -3}};
  expect_refused({"sweep", spec_file("budget", spec).string(), "--dry-run"},
                 {"spec.budget.max_evaluations_per_problem", "-3", "allowed"});
  spec["budget"] = {{"candidate_timeout_s", 0}};
  expect_refused({"sweep", spec_file("timeout", spec).string(), "--dry-run"}, {"spec.budget.candidate_timeout_s", "0"});
}

TEST_F(BadInput, MergeReadsEveryShardBeforeWritingTheMergedRun) {
  const fs::path a = run_copy("shard0"), b = run_copy("shard1");
  for (const auto& [run, index] : {std::pair{a, 0}, std::pair{b, 1}}) {
    json summary = read_json(run / "summary.json");
    summary["shard"] = {{"index", index}, {"count", 2}};
    write_text(run / "summary.json", summary.dump(1));
  }
  edit_line(b / "records.jsonl", first_ok_line(b / "records.jsonl"), "\"time\":{", "\"time\":\"fast\",\"was\":{");
  const fs::path out = scratch_ / "merged";
  expect_refused({"merge", a.string(), b.string(), "-o", out.string()}, {"records.jsonl:", "time"}, b);
  EXPECT_FALSE(fs::exists(out / "records.jsonl"));
}

// A folder name with a quote reaches plot.py as one argument (no shell): it plots like any other.
TEST_F(BadInput, AQuoteInAFolderNameIsPlottedAsTyped) {
  if (run_captured({"python3", "-c", "import matplotlib"}, scratch_).exit_code != 0) GTEST_SKIP() << "no matplotlib here";
  const fs::path run = run_copy("q'x; touch pwned");
  const CliResult r = convtune_cli({"plot", run.string()}, scratch_);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(contains(r.err, "sh: ")) << r.err;
  EXPECT_TRUE(fs::exists(run / "plots" / "report.md")) << r.out << r.err;
  EXPECT_FALSE(fs::exists("pwned"));
}
