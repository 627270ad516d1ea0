// Multi-GPU sweeps without a GPU: --devices parsing, the refusal to mix GPU models in one folder, the
// work units and their hand-out to concurrent claimers (processes and threads), and records appended by
// several processes at once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "harness/gpu_set.h"
#include "harness/json_file.h"
#include "harness/records.h"
#include "harness/run_folder.h"
#include "harness/spec.h"
#include "harness/sweep_plan.h"
#include "harness/sweep_worker.h"
#include "harness/work_claims.h"
#include "test_support.h"

using namespace convtune;
using convtune::test::contains;
using convtune::test::input_error;
namespace fs = std::filesystem;

namespace {


// Runs `body` in `n` forked children at once (child i gets i) and waits for them; each must exit 0.
template <class Body>
void in_processes(int n, Body body) {
  std::vector<pid_t> children;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 1;
      try {
        body(i);
        rc = 0;
      } catch (...) {
      }
      _exit(rc);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "a child failed";
  }
}

std::vector<size_t> read_numbers(const fs::path& path) {
  std::vector<size_t> out;
  std::ifstream in(path);
  for (size_t v; in >> v;) out.push_back(v);
  return out;
}

DeviceInfo gpu(int index, const std::string& name) {
  DeviceInfo d = DeviceInfo::offline_sm90();
  d.ordinal = index;
  d.name = name;
  d.uuid = "GPU-0000000" + std::to_string(index);
  d.sm_clock_khz = 1980000;
  d.mem_clock_khz = 2619000;
  d.driver_version = 13000;
  return d;
}

}  // namespace

TEST(Devices, ParsesAllAndLists) {
  EXPECT_EQ(parse_device_list("all", 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_device_list("all", 1), (std::vector<int>{0}));
  EXPECT_EQ(parse_device_list("0,2,3", 4), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(parse_device_list("3,1", 4), (std::vector<int>{3, 1}));
  EXPECT_EQ(parse_device_list("0", 1), (std::vector<int>{0}));
}

TEST(Devices, RefusesUnknownDuplicateAndMalformedIndicesNamingTheAllowedOnes) {
  for (const char* bad : {"4", "0,4", "a", "", "0,", ",1", "-1", "1.5", "0 ,1", "all,0", "99999999"}) {
    const std::string e = input_error([&] { parse_device_list(bad, 4); });
    EXPECT_TRUE(contains(e, "--devices")) << bad << ": " << e;
    EXPECT_TRUE(contains(e, "all, or a comma list of 0..3 (4 GPUs visible here)")) << bad << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
  }
  EXPECT_TRUE(contains(input_error([] { parse_device_list("1,1", 4); }), "GPU 1 is listed twice"));
  EXPECT_TRUE(contains(input_error([] { parse_device_list("5", 4); }), "there is no GPU 5"));
  // A list for a bigger machine on one with a single GPU.
  const std::string one = input_error([] { parse_device_list("0,1", 1); });
  EXPECT_TRUE(contains(one, "there is no GPU 1")) << one;
  EXPECT_TRUE(contains(one, "allowed: all, or 0 (1 GPU visible here)")) << one;
  EXPECT_TRUE(contains(input_error([] { parse_device_list("all", 0); }), "no GPU visible"));
}

TEST(Devices, OneModelSharesAFolderAndAnyDifferenceIsNamedInOneLine) {
  const std::vector<DeviceInfo> same = {gpu(0, "NVIDIA H100 80GB HBM3"), gpu(1, "NVIDIA H100 80GB HBM3")};
  EXPECT_EQ(device_mix_difference(same), "");
  EXPECT_EQ(device_mix_difference({}), "");
  auto differing = [&](auto change) {
    std::vector<DeviceInfo> ds = same;
    ds.push_back(gpu(2, "NVIDIA H100 80GB HBM3"));
    change(ds[2]);
    return device_mix_difference(ds);
  };
  const std::string model = differing([](DeviceInfo& d) { d.name = "NVIDIA A100-SXM4-80GB"; });
  EXPECT_TRUE(contains(model, "GPU 2 differs from GPU 0 in model ('NVIDIA A100-SXM4-80GB' vs 'NVIDIA H100 80GB HBM3')"))
      << model;
  EXPECT_TRUE(contains(model, "--split-by-model")) << model;
  EXPECT_TRUE(contains(model, "--devices")) << model;
  EXPECT_EQ(model.find('\n'), std::string::npos);
  EXPECT_TRUE(contains(differing([](DeviceInfo& d) { d.cc_minor = 1; }), "in compute capability ('9.1' vs '9.0')"));
  EXPECT_TRUE(contains(differing([](DeviceInfo& d) { d.sm_clock_khz = 1755000; }), "in maximum SM clock"));
  EXPECT_TRUE(contains(differing([](DeviceInfo& d) { d.mem_clock_khz = 1593000; }), "in maximum memory clock"));
  EXPECT_TRUE(contains(differing([](DeviceInfo& d) { d.driver_version = 12080; }), "in driver ('12080' vs '13000')"));
  EXPECT_TRUE(contains(differing([](DeviceInfo& d) { d.sms = 114; }), "in SM count"));
  // Only the UUID differs between two GPUs of one model: they share the folder.
  EXPECT_EQ(differing([](DeviceInfo&) {}), "");
}

TEST(Devices, SplitByModelGroupsInOrderOfFirstAppearance) {
  const auto groups = group_by_model({gpu(0, "H100"), gpu(1, "A100"), gpu(2, "H100"), gpu(3, "A100"), gpu(4, "L4")});
  ASSERT_EQ(groups.size(), 3u);
  auto indices = [](const std::vector<DeviceInfo>& g) {
    std::vector<int> out;
    for (const auto& d : g) out.push_back(d.ordinal);
    return out;
  };
  EXPECT_EQ(indices(groups[0]), (std::vector<int>{0, 2}));
  EXPECT_EQ(indices(groups[1]), (std::vector<int>{1, 3}));
  EXPECT_EQ(indices(groups[2]), (std::vector<int>{4}));
  for (const auto& g : groups) EXPECT_EQ(device_mix_difference(g), "");
}

// A worker sees one GPU: index i of the supervisor's numbering, which is the i-th entry of an inherited
// CUDA_VISIBLE_DEVICES (indices or UUIDs).
TEST(Devices, PinsAWorkerToOneGpuOfTheSupervisorsNumbering) {
  EXPECT_EQ(visible_devices_pin(2, nullptr), "2");
  EXPECT_EQ(visible_devices_pin(1, "3,5,6"), "5");
  EXPECT_EQ(visible_devices_pin(0, "GPU-abc, GPU-def"), "GPU-abc");
  EXPECT_EQ(visible_devices_pin(1, "GPU-abc, GPU-def"), "GPU-def");
  EXPECT_THROW(visible_devices_pin(2, "3,5"), std::logic_error);
  EXPECT_EQ(gpu_tag(3, "GPU-x"), (json{{"index", 3}, {"uuid", "GPU-x"}}));
}

namespace {

SweepSpec units_spec(const std::string& strategy, int max_evaluations = 0) {
  json spec = {{"name", "units-test"},
               {"strategy", strategy},
               {"problems", {{{"family", "conv2d"}, {"h", 512}, {"w", 512}, {"r", {1, 5, 16}}}}},
               {"variants", {"conv2d.register_tiled", "conv2d.tiled_in"}}};
  if (max_evaluations) spec["budget"] = {{"max_evaluations_per_problem", max_evaluations}};
  return SweepSpec::parse(spec);
}

}  // namespace

TEST(WorkUnits, SearchStrategiesTakeWholeProblemsExhaustiveTakesCandidates) {
  const SweepPlan plan = make_plan(units_spec("anneal"), DeviceInfo::offline_sm90());
  const auto whole = make_work_units(plan, "anneal", 0);
  ASSERT_EQ(whole.size(), 3u);
  size_t covered = 0;
  for (size_t u = 0; u < whole.size(); ++u) {
    EXPECT_TRUE(whole[u].whole_problem);
    EXPECT_EQ(whole[u].problem_index, u + 1);
    for (const auto* c : whole[u].candidates) EXPECT_TRUE(c->problem == whole[u].candidates.front()->problem);
    covered += whole[u].candidates.size();
  }
  EXPECT_EQ(covered, plan.candidates.size());
  for (const char* strategy : {"random", "halving", "warm"}) EXPECT_EQ(make_work_units(plan, strategy, 0).size(), 3u);

  const auto single = make_work_units(plan, "exhaustive", 0);
  ASSERT_EQ(single.size(), plan.candidates.size());
  std::map<size_t, int> last_eval;  // per problem: eval_index counts its runnable candidates in order
  size_t skipped = 0;
  for (size_t u = 0; u < single.size(); ++u) {
    ASSERT_EQ(single[u].candidates.size(), 1u);
    EXPECT_EQ(single[u].candidates.front(), &plan.candidates[u]);
    EXPECT_FALSE(single[u].whole_problem);
    if (!plan.candidates[u].status.ok) {
      EXPECT_EQ(single[u].eval_index, 0);
      ++skipped;
      continue;
    }
    EXPECT_EQ(single[u].eval_index, ++last_eval[single[u].problem_index]);
  }
  EXPECT_GT(skipped, 0u) << "the test wants a plan with refused configs (r = 16)";
}

// Exhaustive search with a budget measures each problem's first n runnable candidates: only those get
// units; every skipped one still does, to be recorded.
TEST(WorkUnits, ExhaustiveBudgetKeepsTheFirstCandidatesAndEverySkippedOne) {
  const SweepPlan plan = make_plan(units_spec("exhaustive", 3), DeviceInfo::offline_sm90());
  std::map<size_t, int> runnable;
  size_t skipped_units = 0, skipped_planned = 0;
  for (const auto& u : make_work_units(plan, "exhaustive", 3)) {
    if (u.eval_index > 0) ++runnable[u.problem_index];
    else ++skipped_units;
    EXPECT_LE(u.eval_index, 3);
  }
  for (const auto& c : plan.candidates) skipped_planned += !c.status.ok;
  EXPECT_EQ(skipped_units, skipped_planned);
  for (size_t p = 1; p <= 3; ++p) EXPECT_EQ(runnable[p], 3) << "problem " << p;
}

// Four processes claim 500 units from one folder at once: each unit is claimed exactly once.
TEST(WorkClaims, ConcurrentClaimersTakeEveryUnitExactlyOnce) {
  const fs::path folder = test::fresh_temp_dir("devices-test-claims");
  const size_t units = 500;
  in_processes(4, [&](int gpu) {
    WorkClaims claims(folder, gpu, units);
    std::ofstream out(folder / ("claimed-" + std::to_string(gpu)));
    while (auto u = claims.claim_next()) out << *u << "\n";
  });
  std::multiset<size_t> all;
  size_t busiest = 0;
  for (int gpu = 0; gpu < 4; ++gpu) {
    const auto mine = read_numbers(folder / ("claimed-" + std::to_string(gpu)));
    EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end())) << "each claimer walks the units in order";
    EXPECT_EQ(WorkClaims(folder, gpu, units).held(), mine) << "the claims name their GPU";
    busiest = std::max(busiest, mine.size());
    all.insert(mine.begin(), mine.end());
  }
  ASSERT_EQ(all.size(), units);
  for (size_t u = 0; u < units; ++u) EXPECT_EQ(all.count(u), 1u) << "unit " << u;
  std::printf("busiest of 4 claimers took %zu of %zu units\n", busiest, units);
  WorkClaims::clear(folder);
  EXPECT_FALSE(fs::exists(WorkClaims::dir(folder)));
}

TEST(WorkClaims, ThreadsOfOneProcessClaimDisjointly) {
  const fs::path folder = test::fresh_temp_dir("devices-test-claims-threads");
  std::vector<std::vector<size_t>> got(3);
  std::vector<std::thread> threads;
  for (int gpu = 0; gpu < 3; ++gpu)
    threads.emplace_back([&, gpu] {
      WorkClaims claims(folder, gpu, 300);
      while (auto u = claims.claim_next()) got[size_t(gpu)].push_back(*u);
    });
  for (auto& t : threads) t.join();
  std::set<size_t> all;
  size_t total = 0;
  for (const auto& g : got) {
    all.insert(g.begin(), g.end());
    total += g.size();
  }
  EXPECT_EQ(total, 300u);
  EXPECT_EQ(all.size(), 300u);
}

// A worker killed mid-unit (no destructor runs): its GPU's next worker holds the unit and finishes it;
// a GPU given up hands its units back, and a claimer still walking takes them on its second pass.
TEST(WorkClaims, ADeadClaimersUnitIsReissued) {
  const fs::path folder = test::fresh_temp_dir("devices-test-claims-dead");
  in_processes(1, [&](int) {
    WorkClaims claims(folder, 1, 10);
    claims.claim_next();
    claims.claim_next();
    _exit(0);  // killed: no cleanup
  });
  EXPECT_EQ(WorkClaims(folder, 1, 10).held(), (std::vector<size_t>{0, 1}));

  WorkClaims survivor(folder, 0, 10);
  EXPECT_EQ(survivor.claim_next(), std::optional<size_t>(2));
  EXPECT_EQ(WorkClaims::release(folder, 1), 2u);
  EXPECT_TRUE(WorkClaims(folder, 1, 10).held().empty());
  std::vector<size_t> rest;
  while (auto u = survivor.claim_next()) rest.push_back(*u);
  EXPECT_EQ(rest, (std::vector<size_t>{3, 4, 5, 6, 7, 8, 9, 0, 1}));
  EXPECT_EQ(survivor.held().size(), 10u);
}

// Four processes append 250 records each, some larger than a page and a pipe buffer: every line is whole.
TEST(RecordAppends, SeveralProcessesNeverInterleave) {
  const fs::path folder = test::fresh_temp_dir("devices-test-appends");
  const fs::path path = folder / "records.jsonl";
  in_processes(4, [&](int writer) {
    RecordWriter records(path);
    for (int i = 0; i < 250; ++i)
      records.append({{"problem_key", "p" + std::to_string(writer)}, {"candidate", "c" + std::to_string(i)},
                      {"status", "ok"}, {"padding", std::string(size_t(100 + (i % 7) * 3000), char('a' + writer))}});
  });
  const ReadResult read = read_records(path);
  EXPECT_TRUE(read.problems.empty()) << read.problems.front();
  ASSERT_EQ(read.records.size(), 1000u);
  std::map<std::string, int> next;  // each writer's records in its own order
  for (const auto& r : read.records) {
    const std::string writer = r["problem_key"];
    EXPECT_EQ(r["candidate"], "c" + std::to_string(next[writer]++));
    const std::string padding = r["padding"];
    EXPECT_EQ(padding.find_first_not_of(char('a' + (writer[1] - '0'))), std::string::npos);
  }
  EXPECT_EQ(recorded_keys(read.records).size(), 1000u);
}

// The follower returns only whole lines; a writer after a torn line starts a new one, so its record is
// not lost with the torn one.
TEST(RecordAppends, FollowerReadsWholeLinesAndATornLineCostsOnlyItself) {
  const fs::path folder = test::fresh_temp_dir("devices-test-follow");
  const fs::path path = folder / "records.jsonl";
  RecordFollower follower(path);
  EXPECT_TRUE(follower.read_new().records.empty());  // no file yet
  const json a = {{"problem_key", "p"}, {"candidate", "a"}, {"status", "ok"}};
  const json b = {{"problem_key", "p"}, {"candidate", "b"}, {"status", "ok"}};
  RecordWriter(path).append(a);
  std::ofstream(path, std::ios::app) << R"({"problem_key": "p", "cand)";  // a writer killed mid-line
  auto read = follower.read_new();
  ASSERT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.records[0], a);
  EXPECT_TRUE(follower.read_new().records.empty());
  RecordWriter(path).append(b);
  read = follower.read_new();
  ASSERT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.records[0], b);
  ASSERT_EQ(read.problems.size(), 1u);  // the torn line, reported once
  const auto all = read_records(path);
  EXPECT_EQ(all.records.size(), 2u);
  EXPECT_EQ(all.problems.size(), 1u);
}

TEST(Inflight, EachGpuHasItsOwnFile) {
  EXPECT_EQ(inflight_path("/r", 3), fs::path("/r/inflight-gpu3.json"));
  EXPECT_EQ(inflight_path("/r", -1), fs::path("/r/inflight.json"));
  const fs::path folder = test::fresh_temp_dir("devices-test-inflight");
  json skeleton = {{"problem_key", "p"}, {"candidate", "c"}, {"status", "ok"}, {"gpu", gpu_tag(1, "GPU-1")}};
  write_json_atomically(inflight_path(folder, 1), {{"record", skeleton}, {"started_unix", 0}});
  EXPECT_FALSE(record_inflight(folder, status::runtime_error, "died", 0));  // gpu0 had nothing in flight
  EXPECT_TRUE(record_inflight(folder, status::runtime_error, "died", 1));
  const auto records = read_records(folder / "records.jsonl").records;
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["gpu"]["index"], 1);
  EXPECT_EQ(records[0]["status"], status::runtime_error);
}

// The summary counts every record and, for tagged ones, how many each GPU wrote (keyed by UUID).
TEST(Summary, CountsRecordsPerGpu) {
  const fs::path dir = test::fresh_temp_dir("devices-test-summary");
  write_json_atomically(dir / "summary.json", {{"schema", 1}});
  RecordWriter writer(dir / "records.jsonl");
  auto rec = [](const std::string& status, const json& gpu) {
    json r = {{"problem_key", "conv2d/h=8,r=1,w=8"}, {"candidate", "conv2d.naive[block_x=32]"}, {"status", status}};
    if (!gpu.is_null()) r["gpu"] = gpu;
    return r;
  };
  const json a = {{"index", 0}, {"uuid", "GPU-a"}}, b = {{"index", 1}, {"uuid", "GPU-b"}};
  writer.append(rec("ok", a));
  writer.append(rec("ok", b));
  writer.append(rec("timeout", a));
  writer.append(rec("ok", nullptr));  // an old record without a tag: counted, not per GPU
  const json s = finalize_summary(dir, false, {"convtune", "sweep"});
  EXPECT_EQ(s["counts"]["ok"], 3);
  EXPECT_EQ(s["counts"]["timeout"], 1);
  EXPECT_EQ(s["records_per_gpu"]["GPU-a"]["records"], 2);
  EXPECT_EQ(s["records_per_gpu"]["GPU-a"]["index"], 0);
  EXPECT_EQ(s["records_per_gpu"]["GPU-b"]["records"], 1);
  fs::remove_all(dir);
}
