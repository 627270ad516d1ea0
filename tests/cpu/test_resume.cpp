// Resume without a GPU, on the shipped run's recorded candidates: a rerun of a run folder measures a
// planned candidate only when no record of it is there. The worker (harness/sweep.cpp, WorkerLoop::evaluate)
// decides this by the record key of the candidate's record skeleton (Runner::skeleton at the proposal's
// fidelity) against the keys of the records it follows in records.jsonl; these tests compose the same
// pieces, so a drift between what a sweep writes and what a rerun looks for (problem keys, candidate
// names, the brief marker, a torn line) shows here. The worker loop itself needs a CUDA device
// (run_sweep_worker refuses without one) and is covered by the GPU suite.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "harness/json_file.h"
#include "harness/records.h"
#include "harness/run_folder.h"
#include "harness/runner.h"
#include "harness/spec.h"
#include "harness/sweep_plan.h"
#include "harness/sweep_worker.h"
#include "test_support.h"

using namespace convtune;
namespace fs = std::filesystem;

namespace {

using test::kShipped;

// A run folder holding the shipped run's summary and the records `keep` lets through, in file order.
fs::path run_folder(const std::string& name, const std::function<bool(const json&, size_t)>& keep) {
  const fs::path d = test::fresh_temp_dir("resume-" + name);
  write_json_atomically(d / "summary.json", read_json(kShipped / "summary.json"));
  RecordWriter w(d / "records.jsonl");
  const auto records = read_records(kShipped / "records.jsonl").records;
  for (size_t i = 0; i < records.size(); ++i)
    if (keep(records[i], i)) w.append(records[i]);
  return d;
}

// The candidates a rerun of `folder` would measure: every runnable candidate of every work unit whose
// full-fidelity skeleton has no record among those a worker follows in records.jsonl.
std::vector<std::string> still_to_measure(const fs::path& folder) {
  const json summary = read_json(folder / "summary.json");
  const SweepSpec spec = SweepSpec::parse(summary["spec"]);
  const SweepPlan plan = make_plan(spec, DeviceInfo::from_json(summary["device"]));
  const Ceilings ceilings = Ceilings::from_json(summary["ceilings"]);
  RecordFollower follower(folder / "records.jsonl");
  const std::set<std::string> done = recorded_keys(follower.read_new().records);
  std::vector<std::string> out;
  for (const WorkUnit& unit : make_work_units(plan, spec.strategy, size_t(spec.budget.max_evaluations_per_problem)))
    for (const PlannedCandidate* c : unit.candidates) {
      if (!c->status.ok) continue;
      json skeleton = Runner::skeleton(*c->variant, c->problem, c->config, ceilings);
      skeleton["fidelity"] = "full";
      if (!done.count(record_key(skeleton))) out.push_back(record_key(skeleton));
    }
  return out;
}

}  // namespace

// The shipped exhaustive run is complete: 12 problems x 72 configs (2 block_x x 3 block_y x 2 orders x
// 2 px x 3 py), every one recorded, so a rerun measures nothing.
TEST(Resume, ACompleteRunHasNothingLeftToMeasure) {
  const fs::path run = run_folder("complete", [](const json&, size_t) { return true; });
  EXPECT_EQ(read_records(run / "records.jsonl").records.size(), 12u * 72);
  EXPECT_TRUE(still_to_measure(run).empty());
  fs::remove_all(run);
}

// A run stopped part-way: exactly the candidates without a record are measured again, the rest skipped.
TEST(Resume, OnlyTheCandidatesWithoutARecordAreMeasuredAgain) {
  std::set<std::string> dropped;
  const fs::path run = run_folder("partial", [&](const json& r, size_t i) {
    if (i % 100 != 7) return true;
    dropped.insert(record_key(r));
    return false;
  });
  ASSERT_EQ(dropped.size(), 9u);  // records 7, 107, ..., 807 of 864
  const auto pending = still_to_measure(run);
  EXPECT_EQ(std::set<std::string>(pending.begin(), pending.end()), dropped);
  EXPECT_EQ(pending.size(), dropped.size());  // each once
  fs::remove_all(run);
}

// A worker killed mid-write leaves a torn last line: that candidate has no record and runs again; the
// one the supervisor recorded as crashed (record_inflight) does not.
TEST(Resume, ATornLastLineIsMeasuredAgainAndARecordedCrashIsNot) {
  const auto records = read_records(kShipped / "records.jsonl").records;
  const fs::path run = run_folder("torn", [&](const json&, size_t i) { return i + 2 < records.size(); });
  const std::string torn = records[records.size() - 2].dump();
  std::ofstream(run / "records.jsonl", std::ios::app) << torn.substr(0, torn.size() / 2);
  json crashed = records.back();
  crashed.erase("time");
  write_json_atomically(inflight_path(run, 0), {{"record", crashed}, {"started_unix", 0}});
  ASSERT_TRUE(record_inflight(run, status::runtime_error, "the worker died of signal Segmentation fault", 0));
  const auto pending = still_to_measure(run);
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0], record_key(records[records.size() - 2]));
  fs::remove_all(run);
}

// A brief (screening) record does not stand for the full measurement a rerun still owes.
TEST(Resume, ABriefRecordDoesNotCountAsTheFullMeasurement) {
  const auto records = read_records(kShipped / "records.jsonl").records;
  const fs::path run = run_folder("brief", [](const json&, size_t i) { return i != 0; });
  json brief = records[0];
  brief["fidelity"] = "brief";
  RecordWriter(run / "records.jsonl").append(brief);
  const auto pending = still_to_measure(run);
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0], record_key(records[0]));
  fs::remove_all(run);
}
