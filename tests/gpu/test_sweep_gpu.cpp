// End-to-end sweeps through the CLI: a quick sweep, candidates that fault or hang on purpose, a resume
// after the whole sweep was killed, Ctrl-C, and sweeps over several GPUs of the machine (--devices).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <iterator>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "harness/device.h"
#include "harness/json_file.h"
#include "harness/records.h"

using namespace convtune;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("convtune-gpu-test-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

fs::path only_run_folder(const fs::path& results) {
  for (const auto& dev : fs::directory_iterator(results))
    for (const auto& run : fs::directory_iterator(dev.path())) return run.path();
  return {};
}

// Starts a sweep in its own session (one signal to -pid reaches the supervisor and its worker, as a
// terminal's Ctrl-C does) and waits until it has recorded `records`; returns its pid and run folder.
std::pair<int, fs::path> start_sweep_in_background(const fs::path& dir, size_t records, const std::string& flags = "") {
  const std::string results = (dir / "results").string();
  std::system(("setsid " + std::string(CONVTUNE_BINARY) + " sweep " + (dir / "spec.json").string() +
               " --quiet --results " + results + " " + flags + " >/dev/null 2>&1 & echo $! > " + (dir / "pid").string())
                  .c_str());
  fs::path run;
  size_t lines = 0;
  for (int i = 0; i < 600 && lines < records; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (run.empty() && fs::exists(results)) run = only_run_folder(results);
    if (!run.empty() && fs::exists(run / "records.jsonl")) lines = read_records(run / "records.jsonl").records.size();
  }
  int pid = 0;
  std::ifstream(dir / "pid") >> pid;
  return {lines >= records ? pid : 0, run};
}

void write_resume_spec(const fs::path& dir, const std::string& name) {
  std::ofstream(dir / "spec.json") << R"({
    "name": ")" << name << R"(",
    "problems": [{"family": "conv2d", "h": 1024, "w": 1024, "r": {"range": [1, 4]}}],
    "variants": ["conv2d.constant", "conv2d.naive"],
    "measure": {"time_cap_s": 0.05, "min_samples": 5}
  })";
}

int run_cli(const std::string& args, bool prefix_binary = true) {
  const int rc = std::system(((prefix_binary ? std::string(CONVTUNE_BINARY) + " " : std::string()) + args).c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A finished run keeps no inflight file of any GPU and no claims.
void expect_no_leftovers(const fs::path& run) {
  for (const auto& entry : fs::directory_iterator(run))
    EXPECT_NE(entry.path().filename().string().rfind("inflight", 0), 0u) << entry.path();
  EXPECT_FALSE(fs::exists(run / "claims"));
}

// What the plan holds, as `--dry-run --json` prints it: problem + candidate keys (with `env` before the CLI).
std::set<std::string> planned_keys(const fs::path& dir, const std::string& env = "",
                                  const std::string& binary = CONVTUNE_BINARY) {
  const fs::path out = dir / "plan.json";
  EXPECT_EQ(run_cli(env + " " + binary + " sweep " + (dir / "spec.json").string() + " --dry-run --json > " +
                        out.string(), false),
            0);
  std::set<std::string> keys;
  const json plan = read_json(out);  // named: a range-for over read_json(out)["candidates"] would dangle
  for (const auto& c : plan["candidates"])
    keys.insert(c["problem"].get<std::string>() + " " + c["candidate"].get<std::string>());
  return keys;
}

size_t cubins_in(const fs::path& cache) {
  size_t n = 0;
  if (fs::exists(cache))
    for (const auto& entry : fs::directory_iterator(cache)) n += entry.path().extension() == ".cubin";
  return n;
}

// Every record names a GPU of the run by index and UUID; returns the records per GPU index.
std::map<int, int> records_per_gpu(const std::vector<json>& records, const std::vector<int>& gpus) {
  std::map<int, int> per_gpu;
  for (const auto& r : records) {
    EXPECT_TRUE(r.contains("gpu")) << r["candidate"];
    if (!r.contains("gpu")) continue;
    const int index = r["gpu"]["index"];
    EXPECT_NE(std::find(gpus.begin(), gpus.end(), index), gpus.end()) << "gpu " << index;
    EXPECT_EQ(r["gpu"]["uuid"], DeviceInfo::properties(index).uuid) << r["candidate"];
    per_gpu[index]++;
  }
  return per_gpu;
}

}  // namespace

TEST(GpuSweep, SurvivesFaultsHangsAndAborts) {
  if (DeviceInfo::count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const fs::path dir = fresh_dir("faults");
  std::ofstream(dir / "spec.json") << R"({
    "name": "faults",
    "problems": [{"family": "conv2d", "h": 300, "w": 301, "r": 2}],
    "variants": ["conv2d.test_fault", "conv2d.constant"],
    "params": {"conv2d.constant": {"block_x": [32], "block_y": [4, 8]}},
    "budget": {"candidate_timeout_s": 3},
    "measure": {"time_cap_s": 0.05, "min_samples": 3}
  })";
  // Only the CLI built with the faulty variant registers it; this process never does.
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = run_cli(std::string(CONVTUNE_WITH_FAULTS_BINARY) + " sweep " +
                    (dir / "spec.json").string() + " --quiet --results " + (dir / "results").string() + " 2>" +
                    (dir / "log").string() + " >/dev/null", false);
  std::printf("fault sweep took %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::ifstream log_in(dir / "log");
  const std::string log((std::istreambuf_iterator<char>(log_in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << "the sweep's log:\n" << log;
  const fs::path run = only_run_folder(dir / "results");
  const auto records = read_records(run / "records.jsonl").records;
  std::map<std::string, std::string> status_of;
  for (const auto& r : records) status_of[record_key(r)] = r["status"];
  EXPECT_EQ(records.size(), status_of.size()) << "a candidate was recorded twice";
  int ok = 0, runtime = 0, timeout = 0;
  for (const auto& [k, st] : status_of) {
    if (k.find("fault=illegal_address") != std::string::npos || k.find("fault=abort") != std::string::npos)
      EXPECT_EQ(st, status::runtime_error) << k;
    if (k.find("fault=hang") != std::string::npos) EXPECT_EQ(st, status::timeout) << k;
    ok += st == status::ok;
    runtime += st == status::runtime_error;
    timeout += st == status::timeout;
  }
  EXPECT_EQ(ok, 2) << log;
  EXPECT_EQ(runtime, 2) << log;
  EXPECT_EQ(timeout, 1) << log;
  expect_no_leftovers(run);
}

TEST(GpuSweep, ResumesAfterTheWholeSweepWasKilled) {
  if (DeviceInfo::count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const fs::path dir = fresh_dir("resume");
  write_resume_spec(dir, "resume");
  const auto [pid, run] = start_sweep_in_background(dir, 5);
  ASSERT_GT(pid, 0) << "the sweep did not start";
  kill(-pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const size_t before = read_records(run / "records.jsonl").records.size();
  ASSERT_LT(before, 160u) << "the sweep finished before it was killed; make it longer";
  ASSERT_EQ(run_cli("sweep " + (dir / "spec.json").string() + " --quiet --resume " + run.string() + " >/dev/null 2>&1"), 0);
  const auto records = read_records(run / "records.jsonl").records;
  const auto keys = recorded_keys(records);
  EXPECT_EQ(keys.size(), records.size()) << "a candidate was recorded twice";
  EXPECT_EQ(records.size(), 160u);  // 4 radii x (20 naive + 20 constant configs)
}

// A killed sweep's folder is refused by pack (its claims/ say a sweep may still append); packed anyway (claims
// gone, as after a finished sweep), --resume unpacks it, says so and finishes it in records.jsonl.
TEST(GpuSweep, ResumesIntoAPackedRun) {
  if (DeviceInfo::count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
#ifndef CONVTUNE_HAVE_ZLIB
  GTEST_SKIP() << "built without zlib";
#endif
  const fs::path dir = fresh_dir("packed");
  write_resume_spec(dir, "packed");
  const auto [pid, run] = start_sweep_in_background(dir, 5);
  ASSERT_GT(pid, 0) << "the sweep did not start";
  kill(-pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const size_t before = read_records(run / "records.jsonl").records.size();
  ASSERT_LT(before, 160u) << "the sweep finished before it was killed; make it longer";
  EXPECT_EQ(run_cli("pack " + run.string() + " >/dev/null 2>&1"), 2);
  fs::remove_all(run / "claims");
  ASSERT_EQ(run_cli("pack " + run.string() + " >/dev/null 2>&1"), 0);
  ASSERT_FALSE(fs::exists(run / "records.jsonl"));
  EXPECT_EQ(read_records(run / "records.jsonl").records.size(), before);
  const fs::path log = dir / "resume.log";
  ASSERT_EQ(run_cli("sweep " + (dir / "spec.json").string() + " --quiet --resume " + run.string() + " >/dev/null 2>" +
                    log.string()), 0);
  EXPECT_NE(read_text(log).find("was packed: unpacked records.jsonl"), std::string::npos) << read_text(log);
  EXPECT_FALSE(fs::exists(run / "records.jsonl.gz"));
  const auto records = read_records(run / "records.jsonl").records;
  EXPECT_EQ(recorded_keys(records).size(), records.size()) << "a candidate was recorded twice";
  EXPECT_EQ(records.size(), 160u);
}

// Ctrl-C reaches the supervisor and the worker at once (and the supervisor forwards it): the sweep stops
// after the current candidate, says so in summary.json, starts no new worker, and --resume finishes it.
TEST(GpuSweep, StopsOnCtrlCAndResumes) {
  if (DeviceInfo::count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const fs::path dir = fresh_dir("interrupt");
  write_resume_spec(dir, "interrupt");
  const auto [pid, run] = start_sweep_in_background(dir, 5);
  ASSERT_GT(pid, 0) << "the sweep did not start";
  kill(-pid, SIGINT);
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gone = kill(pid, 0) != 0;
  }
  ASSERT_TRUE(gone) << "the sweep went on after Ctrl-C";
  const size_t before = read_records(run / "records.jsonl").records.size();
  ASSERT_LT(before, 160u) << "the sweep finished before the signal; make it longer";
  EXPECT_TRUE(read_json(run / "summary.json").value("interrupted", false));
  for (const auto& r : read_records(run / "records.jsonl").records)
    EXPECT_NE(r["status"], status::runtime_error) << "the stop was blamed on " << r["candidate"];
  ASSERT_EQ(run_cli("sweep " + (dir / "spec.json").string() + " --quiet --resume " + run.string() + " >/dev/null 2>&1"), 0);
  const auto records = read_records(run / "records.jsonl").records;
  EXPECT_EQ(recorded_keys(records).size(), records.size()) << "a candidate was recorded twice";
  EXPECT_EQ(records.size(), 160u);
  EXPECT_FALSE(read_json(run / "summary.json").value("interrupted", true));
}

// --devices 0 is today's sweep plus the GPU tag: every planned candidate recorded once, each record naming
// GPU 0 and its UUID, kernels compiled once. Bad device lists are refused in one line before anything
// is written.
TEST(GpuSweep, OneDeviceListSweepsAsBeforeAndTagsRecords) {
  if (DeviceInfo::count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const fs::path dir = fresh_dir("devices0");
  std::ofstream(dir / "spec.json") << R"({
    "name": "devices0",
    "problems": [{"family": "conv2d", "h": 257, "w": 263, "r": [1, 4, 16]}],
    "variants": ["conv2d.naive", "conv2d.constant", "conv2d.tiled_in", "conv2d.register_tiled"],
    "params": {"conv2d.naive": {"block_x": [32], "block_y": [4, 8]}, "conv2d.constant": {"block_x": [32], "block_y": [4]},
               "conv2d.tiled_in": {"out_x": [8], "out_y": [8]},
               "conv2d.register_tiled": {"block_x": [32], "block_y": [4], "px": [1, 4], "py": [4], "order": ["input_rows"]}},
    "measure": {"cold": false, "warmup": 0, "min_samples": 1, "max_samples": 2, "time_cap_s": 0.01}
  })";
  const std::set<std::string> planned = planned_keys(dir);
  ASSERT_FALSE(planned.empty()) << "the dry run planned nothing: " << read_text(dir / "plan.json").substr(0, 600);
  const std::string cache = "CONVTUNE_CACHE_DIR=" + (dir / "jit").string();
  const std::string base = " sweep " + (dir / "spec.json").string() + " --quiet --results " + (dir / "results").string();

  EXPECT_EQ(run_cli(base + " --devices " + std::to_string(DeviceInfo::count()) + " 2>" + (dir / "bad").string()), 2);
  const std::string bad = read_text(dir / "bad");
  EXPECT_NE(bad.find("--devices"), std::string::npos) << bad;
  EXPECT_NE(bad.find("allowed: all"), std::string::npos) << bad;
  EXPECT_EQ(std::count(bad.begin(), bad.end(), '\n'), 1) << bad;
  EXPECT_FALSE(fs::exists(dir / "results")) << "a refused run left a folder";

  ASSERT_EQ(run_cli("env " + cache + " " + CONVTUNE_BINARY + base + " --devices 0 >/dev/null 2>" + (dir / "log").string(),
                    false),
            0)
      << read_text(dir / "log");
  const fs::path run = only_run_folder(dir / "results");
  const auto records = read_records(run / "records.jsonl").records;
  EXPECT_EQ(recorded_keys(records), planned);
  EXPECT_EQ(records.size(), planned.size()) << "a candidate was recorded twice";
  EXPECT_EQ(records_per_gpu(records, {0})[0], int(records.size()));
  const json summary = read_json(run / "summary.json");
  ASSERT_EQ(summary["devices"].size(), 1u);
  EXPECT_EQ(summary["devices"][0]["uuid"], DeviceInfo::properties(0).uuid);
  EXPECT_EQ(summary["jit"]["compiles"].get<size_t>(), cubins_in(dir / "jit")) << "a kernel was compiled twice";
  expect_no_leftovers(run);

  // A bad list on --resume is refused before the folder changes.
  const std::string before = read_text(run / "records.jsonl");
  EXPECT_EQ(run_cli(base + " --resume " + run.string() + " --devices 0,0 2>/dev/null"), 2);
  EXPECT_EQ(read_text(run / "records.jsonl"), before);
}

namespace {

std::vector<int> all_gpus() {
  std::vector<int> gpus;
  for (int i = 0; i < DeviceInfo::count(); ++i) gpus.push_back(i);
  return gpus;
}

}  // namespace

// One sweep over every visible GPU: one folder, work from every GPU, each candidate recorded exactly once,
// the faulting and hanging candidates costing only their own records, kernels compiled once for all.
TEST(GpuSweep, SpreadsOverEveryGpuInOneFolderAndSurvivesFaults) {
  const int gpus = DeviceInfo::count();
  if (gpus < 2) GTEST_SKIP() << "multi-GPU sweep needs 2 or more GPUs; " << gpus << " visible here";
  const fs::path dir = fresh_dir("multi");
  std::ofstream(dir / "spec.json") << R"({
    "name": "multi",
    "problems": [{"family": "conv2d", "h": 300, "w": 301, "r": 2}, {"family": "conv2d", "h": 1024, "w": 1024, "r": 3}],
    "variants": ["conv2d.test_fault", "conv2d.constant", "conv2d.naive"],
    "budget": {"candidate_timeout_s": 3},
    "measure": {"time_cap_s": 0.05, "min_samples": 5}
  })";
  const std::string env = "env CONVTUNE_CACHE_DIR=" + (dir / "jit").string();
  const std::set<std::string> planned = planned_keys(dir, env, CONVTUNE_WITH_FAULTS_BINARY);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = run_cli(env + " " + CONVTUNE_WITH_FAULTS_BINARY + " sweep " + (dir / "spec.json").string() + " --devices all --results " +
                             (dir / "results").string() + " >/dev/null 2>" + (dir / "log").string(),
                         false);
  std::printf("multi-GPU sweep on %d GPUs took %.1f s\n", gpus,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  const std::string log = read_text(dir / "log");
  ASSERT_EQ(rc, 0) << log;
  ASSERT_EQ(std::distance(fs::directory_iterator(dir / "results"), fs::directory_iterator()), 1) << "one model, one folder";
  const fs::path run = only_run_folder(dir / "results");
  const auto records = read_records(run / "records.jsonl").records;
  EXPECT_EQ(records.size(), planned.size()) << "a candidate was recorded twice, or not at all";
  EXPECT_EQ(recorded_keys(records), planned);
  const auto per_gpu = records_per_gpu(records, all_gpus());
  for (int i = 0; i < gpus; ++i) EXPECT_GT(per_gpu.count(i) ? per_gpu.at(i) : 0, 0) << "gpu" << i << " did no work\n" << log;
  for (int i = 0; i < gpus; ++i) EXPECT_NE(log.find("[gpu" + std::to_string(i) + " "), std::string::npos) << "progress of gpu" << i;
  for (const auto& r : records) {
    const std::string key = record_key(r), st = r["status"];
    if (key.find("fault=illegal_address") != std::string::npos || key.find("fault=abort") != std::string::npos)
      EXPECT_EQ(st, status::runtime_error) << key;
    else if (key.find("fault=hang") != std::string::npos)
      EXPECT_EQ(st, status::timeout) << key;
    else
      EXPECT_TRUE(st == status::ok || st == status::skipped) << key << ": " << st << " " << r.value("reason", "");
  }
  const json summary = read_json(run / "summary.json");
  EXPECT_EQ(summary["devices"].size(), size_t(gpus));
  EXPECT_GT(summary["jit"]["compiles"].get<int>(), 0);
  EXPECT_EQ(summary["jit"]["compiles"].get<size_t>(), cubins_in(dir / "jit")) << "a kernel was compiled twice";
  EXPECT_EQ(summary["records_per_gpu"].size(), size_t(gpus));
  expect_no_leftovers(run);
}

// A multi-GPU sweep killed as a whole (every process at once) resumes on every GPU and finishes with each
// candidate recorded once.
TEST(GpuSweep, MultiGpuSweepResumesAfterTheWholeSweepWasKilled) {
  const int gpus = DeviceInfo::count();
  if (gpus < 2) GTEST_SKIP() << "multi-GPU sweep needs 2 or more GPUs; " << gpus << " visible here";
  const fs::path dir = fresh_dir("multi-resume");
  write_resume_spec(dir, "multi-resume");
  const auto [pid, run] = start_sweep_in_background(dir, 10, "--devices all");
  ASSERT_GT(pid, 0) << "the sweep did not start";
  kill(-pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const size_t before = read_records(run / "records.jsonl").records.size();
  ASSERT_LT(before, 160u) << "the sweep finished before it was killed; make it longer";
  ASSERT_EQ(run_cli("sweep " + (dir / "spec.json").string() + " --quiet --devices all --resume " + run.string() +
                    " >/dev/null 2>&1"),
            0);
  const auto records = read_records(run / "records.jsonl").records;
  EXPECT_EQ(recorded_keys(records).size(), records.size()) << "a candidate was recorded twice";
  EXPECT_EQ(records.size(), 160u);
  records_per_gpu(records, all_gpus());
  expect_no_leftovers(run);
}
