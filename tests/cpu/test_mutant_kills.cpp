// Tests written against mutants that survived the CPU suite in a mutation run (scripts/mutate.py,
// docs/MUTATION.md). Each one was seen failing with its one-line mutant planted by hand and passing
// without it; the comment above each test names the mutant. Expected values are worked out by hand from
// the rule, not copied from the program's output.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/error.h"
#include "harness/json_file.h"
#include "harness/merge.h"
#include "harness/records.h"
#include "harness/replay.h"
#include "harness/shard.h"
#include "test_support.h"

namespace convtune {
namespace {

namespace fs = std::filesystem;

// Runs `body` in a forked child and returns its exit status, or -1 when it ran past `seconds` (the child is
// then killed): a mutant that loops forever fails the test instead of hanging the suite.
template <class F>
int mk_exit_status_within(F body, int seconds) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  if (pid < 0) return -2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -3;
}

// The message of the InputError that reading `lines` as a records file throws ("" if none), with the file's
// path written as "FILE"; `count` gets the number of records read when none is thrown.
std::string mk_read_error(const std::string& tag, const std::vector<std::string>& lines, size_t* count = nullptr) {
  const fs::path dir = test::fresh_temp_dir("mk-" + tag);
  const fs::path path = dir / "records.jsonl";
  {
    std::ofstream out(path);
    for (const auto& l : lines) out << l << "\n";
  }
  std::string error;
  try {
    const size_t n = read_records(path).records.size();
    if (count) *count = n;
  } catch (const InputError& e) {
    error = e.what();
    if (error.rfind(path.string(), 0) == 0) error = "FILE" + error.substr(path.string().size());
  }
  fs::remove_all(dir);
  return error;
}

const std::string kMkGood =
    R"({"problem_key": "conv2d:h=8,r=1,w=8", "candidate": "conv2d.naive", "status": "ok", "time": {"median_ms": 1.5}})";

// The shipped run cut to one problem (its 72 records; a merge of the whole run takes seconds), split into two
// shard folders as two `--shard i/2` jobs would have written them.
std::vector<fs::path> mk_two_shards(const fs::path& root) {
  json summary = read_json(test::kShipped / "summary.json");
  summary["spec"]["problems"] = {{{"family", "conv2d"}, {"h", 2048}, {"w", 2048}, {"r", 1}}};
  const auto records = read_records(test::kShipped / "records.jsonl").records;
  std::vector<fs::path> out;
  for (int i = 0; i < 2; ++i) {
    const fs::path f = root / ("shard" + std::to_string(i));
    fs::create_directories(f);
    summary["shard"] = Shard{i, 2}.to_json();
    write_json_atomically(f / "summary.json", summary);
    RecordWriter w(f / "records.jsonl");
    for (const auto& r : records)
      if (r["problem_key"] == "conv2d/h=2048,r=1,w=2048" && owns({i, 2}, shard_key(r["problem_key"], r["candidate"], false)))
        w.append(r);
    out.push_back(f);
  }
  return out;
}

json mk_profile(const std::string& candidate, double dram_bytes) {
  return {{"problem_key", "conv2d:h=8192,r=1,w=8192"}, {"candidate", candidate}, {"status", "ok"},
          {"dram_bytes", dram_bytes}};
}

}  // namespace

// --- records.cpp: RecordWriter::append ---------------------------------------------------------------

// records.cpp:85, `if (n < 0 && errno == EINTR) continue;` -> `if (n < 0 && (1==1)) continue;`: every failed
// write() was retried forever. /dev/full fails every write with ENOSPC: append must throw, naming the file and
// the reason, and promptly.
TEST(MutantKills, AFailedWriteThrowsInsteadOfRetryingForever) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full here";
  const int rc = mk_exit_status_within(
      [] {
        try {
          RecordWriter w("/dev/full");
          w.append({{"problem_key", "p"}, {"candidate", "c"}, {"status", "ok"}});
        } catch (const std::runtime_error& e) {
          return std::string(e.what()) == "cannot write to /dev/full: No space left on device" ? 0 : 2;
        }
        return 1;
      },
      20);
  EXPECT_NE(rc, -1) << "append kept retrying a write that fails with ENOSPC";
  EXPECT_NE(rc, 1) << "append to /dev/full threw nothing";
  EXPECT_NE(rc, 2) << "append to /dev/full threw another message";
  EXPECT_EQ(rc, 0);
}

// --- records.cpp: check_record_fields -----------------------------------------------------------------

// records.cpp:102, the check that problem_key, candidate and status are strings commented out: a record whose
// key fields are numbers, null or arrays was accepted. Each is refused, naming file:line, field and value.
TEST(MutantKills, ARecordsKeyFieldsMustBeStrings) {
  EXPECT_EQ(mk_read_error("pk", {kMkGood, R"({"problem_key": 3, "candidate": "c", "status": "ok", "time": {"median_ms": 1}})"}),
            "FILE:2: problem_key is 3; allowed: a string");
  EXPECT_EQ(mk_read_error("cand", {R"({"problem_key": "p", "candidate": null, "status": "ok", "time": {"median_ms": 1}})"}),
            "FILE:1: candidate is null; allowed: a string");
  EXPECT_EQ(mk_read_error("status", {kMkGood, kMkGood,
                                     R"({"problem_key": "p", "candidate": "c", "status": ["ok"], "time": {"median_ms": 1}})"}),
            "FILE:3: status is [\"ok\"]; allowed: a string");
}

// records.cpp:111 (the same sample), `status == ok && (...)` -> `||`: the median is required only of an ok
// record. A failed record without a median (or with a negative one) is read; an ok one is refused.
TEST(MutantKills, OnlyAnOkRecordNeedsANonNegativeMedian) {
  size_t n = 0;
  EXPECT_EQ(mk_read_error("failed", {kMkGood, R"({"problem_key": "p", "candidate": "c", "status": "wrong_result", "time": {}})",
                                     R"({"problem_key": "p", "candidate": "d", "status": "timeout", "time": {"median_ms": -1}})"},
                          &n),
            "");
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(mk_read_error("okneg", {R"({"problem_key": "p", "candidate": "c", "status": "ok", "time": {"median_ms": -0.5}})"}),
            "FILE:1: time.median_ms is -0.5; allowed: a non-negative number of milliseconds");
  EXPECT_EQ(mk_read_error("okmissing", {kMkGood, R"({"problem_key": "p", "candidate": "c", "status": "ok", "time": {}})"}),
            "FILE:2: time.median_ms is null; allowed: a non-negative number of milliseconds");
  // 0 ms is allowed (a `<= 0` would refuse it).
  n = 0;
  EXPECT_EQ(mk_read_error("okzero", {R"({"problem_key": "p", "candidate": "c", "status": "ok", "time": {"median_ms": 0}})"}, &n),
            "");
  EXPECT_EQ(n, 1u);
}

// --- merge.cpp: merge_profiles ------------------------------------------------------------------------

// merge.cpp:91, `records_file_exists(s.folder / "profiles.jsonl")` -> `records_file_exists(s.folder / "")` (the
// folder itself, which always exists): a merge of shards without profiles wrote an empty profiles.jsonl. No
// shard profiled: no profiles.jsonl and no profiles/ in the merged run. Then the other side of the rule: the
// profile lines of every shard that has them, in shard order (readers take a candidate's last line), and each
// shard's Nsight Compute reports under the same relative paths.
TEST(MutantKills, MergeCarriesProfilesOnlyWhereAShardHasThem) {
  const fs::path root = test::fresh_temp_dir("mk-merge-prof");
  const auto shards = mk_two_shards(root);
  std::ostringstream log;
  const json none = merge_runs(shards, root / "none", {"convtune", "merge"}, log);
  EXPECT_EQ(none["merge"]["gaps"], 0) << log.str();
  EXPECT_EQ(read_records(root / "none/records.jsonl").records.size(), 72u);
  EXPECT_FALSE(fs::exists(root / "none/profiles.jsonl"));
  EXPECT_FALSE(fs::exists(root / "none/profiles"));

  {
    RecordWriter p1(shards[1] / "profiles.jsonl");
    p1.append(mk_profile("conv2d.naive[a]", 1.0));
    p1.append(mk_profile("conv2d.naive[b]", 2.0));
  }
  fs::create_directories(shards[1] / "profiles/p1");
  std::ofstream(shards[1] / "profiles/p1/a.ncu-rep") << "report a";
  merge_runs(shards, root / "one", {"convtune", "merge"}, log);  // only shard 1 profiled
  auto got = read_records(root / "one/profiles.jsonl").records;
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], mk_profile("conv2d.naive[a]", 1.0));
  EXPECT_EQ(got[1], mk_profile("conv2d.naive[b]", 2.0));
  EXPECT_EQ(test::read_text(root / "one/profiles/p1/a.ncu-rep"), "report a");

  {
    RecordWriter p0(shards[0] / "profiles.jsonl");
    p0.append(mk_profile("conv2d.naive[a]", 3.0));
  }
  merge_runs(shards, root / "both", {"convtune", "merge"}, log);
  got = read_records(root / "both/profiles.jsonl").records;
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0]["dram_bytes"], 3.0);  // shard 0 first
  EXPECT_EQ(got[1]["dram_bytes"], 1.0);
  EXPECT_EQ(got[2]["dram_bytes"], 2.0);
  EXPECT_EQ(test::read_text(root / "both/profiles/p1/a.ncu-rep"), "report a");
  fs::remove_all(root);
}

// --- replay.cpp -----------------------------------------------------------------------------------------

// replay.cpp:21, `{"family", family},` commented out of ReplayResult::to_json: `convtune replay --json` lost the
// family of each row (one row per strategy and family). Every field pinned; a non-finite mean is null.
TEST(MutantKills, ReplayResultJsonHoldsEveryField) {
  ReplayResult r;
  r.strategy = "halving";
  r.family = "conv1d";
  r.mean_evals_to_5pct = 12.5;
  r.median_evals_to_5pct = INFINITY;  // no trial came within 5%
  r.mean_fraction_of_space = 0.25;
  r.success_rate = 0.75;
  r.mean_best_ratio = NAN;
  r.problems = 3;
  r.trials = 60;
  const json want = {{"strategy", "halving"},         {"family", "conv1d"},      {"mean_evals_to_5pct", 12.5},
                     {"median_evals_to_5pct", nullptr}, {"mean_fraction_of_space", 0.25}, {"success_rate", 0.75},
                     {"mean_best_ratio", nullptr},      {"problems", 3},           {"trials", 60}};
  EXPECT_EQ(r.to_json(), want);
}

}  // namespace convtune
