// End-to-end sweeps through the CLI: a quick sweep, candidates that fault or hang on purpose, a resume
// after the whole sweep was killed, and Ctrl-C.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <iterator>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "harness/device.h"
#include "harness/records.h"
#include "harness/sweep.h"

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
std::pair<int, fs::path> start_sweep_in_background(const fs::path& dir, size_t records) {
  const std::string results = (dir / "results").string();
  std::system(("setsid " + std::string(CONVTUNE_BINARY) + " sweep " + (dir / "spec.json").string() +
               " --quiet --results " + results + " >/dev/null 2>&1 & echo $! > " + (dir / "pid").string())
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
  // Only the CLI child registers the faulty variant (at its start-up); this process never does.
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = run_cli("env CONVTUNE_TEST_FAULTS=1 " + std::string(CONVTUNE_BINARY) + " sweep " +
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
  EXPECT_FALSE(fs::exists(run / "inflight.json"));
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
