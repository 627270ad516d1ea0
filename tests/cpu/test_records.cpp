#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness/json_file.h"
#include "harness/records.h"
#include "harness/run_folder.h"
#include "harness/select.h"
#include "test_support.h"

using namespace convtune;
namespace fs = std::filesystem;

namespace {

json record(const std::string& problem, const std::string& variant, int cfg, const std::string& st, double ms,
            double rel = 0.002, int complexity = 3) {
  json r = {{"schema", 1},
            {"problem_key", problem},
            {"variant", variant},
            {"config", {{"k", cfg}}},
            {"candidate", candidate_name(variant, {{"k", cfg}})},
            {"status", st},
            {"complexity", complexity}};
  if (st == "ok") r["time"] = {{"median_ms", ms}, {"rel_stderr", rel}};
  return r;
}


}  // namespace

TEST(Records, RoundTripAndATornLastLine) {
  const fs::path d = test::fresh_temp_dir("test-records");
  {
    RecordWriter w(d / "records.jsonl");
    w.append(record("p", "conv2d.a", 1, "ok", 1.0));
    w.append(record("p", "conv2d.a", 2, "wrong_result", 0));
  }
  std::ofstream(d / "records.jsonl", std::ios::app) << R"({"problem_key": "p", "candid)";  // a crash mid-write
  const auto read = read_records(d / "records.jsonl");
  ASSERT_EQ(read.records.size(), 2u);
  EXPECT_EQ(read.records[0]["candidate"], "conv2d.a[k=1]");
  EXPECT_EQ(read.records[1]["status"], "wrong_result");
  ASSERT_EQ(read.problems.size(), 1u);
  EXPECT_NE(read.problems[0].find(":3:"), std::string::npos);
  const auto keys = recorded_keys(read.records);
  EXPECT_TRUE(keys.count("p conv2d.a[k=1]"));
  EXPECT_THROW(read_records(d / "missing.jsonl"), std::exception);
}

// A torn line in the middle (a crash, then a resumed sweep appending after it) is skipped with a warning; a
// line convtune did not write (hand-edited) is refused naming its file and line, since a reader that skipped it
// would export a table without that record.
TEST(Records, ATornLineIsSkippedAndAnEditedLineIsRefused) {
  const fs::path d = test::fresh_temp_dir("test-records-middle");
  {
    RecordWriter w(d / "records.jsonl");
    w.append(record("p", "conv2d.a", 1, "ok", 1.0));
  }
  std::ofstream(d / "records.jsonl", std::ios::app) << R"({"problem_key": "p", "time": {"median_ms": tr)";
  RecordWriter(d / "records.jsonl").append(record("p", "conv2d.a", 2, "ok", 2.0));  // starts a new line
  const auto read = read_records(d / "records.jsonl");
  EXPECT_EQ(read.records.size(), 2u);
  ASSERT_EQ(read.problems.size(), 1u);
  EXPECT_NE(read.problems[0].find("records.jsonl:2:"), std::string::npos) << read.problems[0];
  const std::string whole = record("p", "conv2d.a", 3, "ok", 1.0).dump();
  for (const std::string& edited : std::vector<std::string>{R"({"problem_key": "p",, "candidate": "x", "status": "ok"})", "garbage",
                                   R"({"problem_key": "p", "status": "ok"})", "[1, 2]",
                                   whole + "}",  // bad at its last byte: not cut short
                                   R"({"problem_key": "p", "candidate": "c", "status": "ok", "time": {"median_ms": 1e400}})"}) {
    std::ofstream(d / "edited.jsonl") << record("p", "conv2d.a", 1, "ok", 1.0).dump() << "\n" << edited << "\n"
                                      << record("p", "conv2d.a", 2, "ok", 2.0).dump() << "\n";
    const std::string error = test::input_error([&] { read_records(d / "edited.jsonl"); });
    EXPECT_NE(error.find("edited.jsonl:2: not "), std::string::npos) << edited << ": " << error;
  }
  fs::remove_all(d);
}

TEST(Records, AnInflightCandidateIsRecordedOnceAfterACrash) {
  const fs::path d = test::fresh_temp_dir("test-inflight");
  json skeleton = record("p", "conv2d.a", 7, "ok", 0);
  skeleton.erase("time");
  write_json_atomically(d / "inflight.json", {{"record", skeleton}, {"started_unix", 0}});
  EXPECT_TRUE(record_inflight(d, "runtime_error", "the worker died of signal Segmentation fault"));
  EXPECT_FALSE(fs::exists(d / "inflight.json"));
  EXPECT_FALSE(record_inflight(d, "runtime_error", "again"));  // nothing in flight any more
  // A candidate that already has a record is not recorded twice.
  write_json_atomically(d / "inflight.json", {{"record", skeleton}, {"started_unix", 0}});
  EXPECT_FALSE(record_inflight(d, "timeout", "late"));
  const auto recs = read_records(d / "records.jsonl").records;
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]["status"], "runtime_error");
  EXPECT_EQ(recs[0]["reason"], "the worker died of signal Segmentation fault");
}

TEST(Select, BestIsFastestOkAndNeverAWrongResult) {
  std::vector<json> recs = {record("p", "conv2d.a", 1, "ok", 2.0), record("p", "conv2d.b", 1, "ok", 1.5),
                            record("p", "conv2d.c", 1, "wrong_result", 0.1), record("p", "conv2d.d", 1, "skipped", 0),
                            record("q", "conv2d.a", 1, "ok", 3.0)};
  recs[2]["time"] = {{"median_ms", 0.1}, {"rel_stderr", 0.0}};  // fast, but wrong
  const auto choices = select_best(recs);
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0].problem_key, "p");
  EXPECT_EQ(choices[0].best["variant"], "conv2d.b");
  EXPECT_EQ(choices[0].runner_up["variant"], "conv2d.a");
  EXPECT_NEAR(choices[0].margin, 2.0 / 1.5 - 1.0, 1e-12);
  EXPECT_TRUE(choices[1].runner_up.is_null());
}

TEST(Select, TiesWithinNoiseGoToTheSimplerCandidate) {
  // b is 0.5% faster than a, within the 1% noise floor: a is simpler and wins; c is 5% slower: no tie.
  const std::vector<json> recs = {record("p", "conv2d.a", 1, "ok", 1.000, 0.001, 1),
                                  record("p", "conv2d.b", 1, "ok", 0.995, 0.001, 4),
                                  record("p", "conv2d.c", 1, "ok", 1.050, 0.001, 0)};
  const auto c = select_best(recs).at(0);
  EXPECT_EQ(c.best["variant"], "conv2d.a");
  ASSERT_EQ(c.ties.size(), 1u);
  EXPECT_EQ(c.ties[0]["variant"], "conv2d.b");
  // Noisy measurements widen the tie band.
  EXPECT_NEAR(noise_threshold(recs[0], recs[1]), 0.01, 1e-12);
  EXPECT_GT(noise_threshold(record("p", "x", 1, "ok", 1, 0.02), record("p", "y", 1, "ok", 1, 0.02)), 0.08);
}
