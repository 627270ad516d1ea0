// `convtune profile` without a GPU: which candidates it picks, how kernels of a real capture are matched to
// their candidate, the profile records it writes and reads back, and its errors without ncu.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/error.h"
#include "harness/ncu_profile.h"
#include "harness/pack.h"
#include "harness/profile.h"
#include "harness/records.h"
#include "test_support.h"

using namespace convtune;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) {
  std::stringstream ss;
  ss << std::ifstream(std::string(CONVTUNE_SOURCE_DIR) + "/tests/fixtures/ncu/" + name).rdbuf();
  return ss.str();
}

}  // namespace

// A capture of `convtune profile` itself on an H100: the best candidate and the best cuDNN algorithm of
// conv2d 2048^2 r=1, one kernel each, in their own candidate ranges.
TEST(Profile, RealCaptureKernelsMatchTheirCandidates) {
  const auto kernels = parse_ncu_raw_csv(fixture("convtune_conv2d_2048_r1.csv"));
  ASSERT_EQ(kernels.size(), 2u);
  for (const auto& k : kernels) {
    ASSERT_EQ(k.nvtx.size(), 2u);
    EXPECT_EQ(k.nvtx[0].first, "convtune");
    EXPECT_NE(k.nvtx[0].second.find(" @ conv2d"), std::string::npos) << k.nvtx[0].second;
    EXPECT_EQ(k.nvtx[1].second, "timed");
  }
  const json m = aggregate_kernels({kernels[0]});
  ASSERT_TRUE(m.contains("dram_bytes")) << m.dump();
  EXPECT_DOUBLE_EQ(m["dram_bytes"].get<double>(), 16792320.0 + 1723392.0);
  EXPECT_NEAR(m["duration_ms"].get<double>(), 0.013728, 1e-9);
}

namespace {

json timing(const std::string& problem, const std::string& variant, const std::string& cfg, double ms, bool library) {
  return {{"problem_key", problem}, {"variant", variant}, {"candidate", variant + "[" + cfg + "]"},
          {"family", "conv2d"},     {"library", library},  {"status", "ok"},
          {"complexity", 1},        {"time", {{"median_ms", ms}, {"rel_stderr", 0.001}, {"samples", 20}}}};
}

std::vector<json> two_problems() {
  return {timing("conv2d:h=64,r=1", "conv2d.tiled", "a=1", 1.0, false),
          timing("conv2d:h=64,r=1", "conv2d.tiled", "a=2", 1.5, false),
          timing("conv2d:h=64,r=1", "conv2d.cudnn", "algo=gemm", 3.0, true),
          timing("conv2d:h=64,r=1", "conv2d.cudnn", "algo=fft", 2.0, true),
          timing("conv2d:h=64,r=2", "conv2d.cudnn", "algo=fft", 0.5, true),
          timing("conv2d:h=64,r=2", "conv2d.tiled", "a=1", 0.9, false)};
}

}  // namespace

TEST(Profile, ChoosesEachProblemsBestAndItsFastestLibrary) {
  const auto t = choose_profile_targets(two_problems(), ProfileSelection{});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].record["candidate"], "conv2d.tiled[a=1]");
  EXPECT_EQ(t[0].why, "best");
  EXPECT_EQ(t[1].record["candidate"], "conv2d.cudnn[algo=fft]");  // the faster of the two algorithms
  EXPECT_EQ(t[1].why, "best_library");
  // Where a library wins, it is profiled once, as the best.
  EXPECT_EQ(t[2].record["candidate"], "conv2d.cudnn[algo=fft]");
  EXPECT_EQ(t[2].why, "best");
}

TEST(Profile, TopAndFiltersNarrowOrWidenTheChoice) {
  ProfileSelection top2;
  top2.top = 2;
  top2.libraries = false;
  top2.problem = "r=1";
  const auto t = choose_profile_targets(two_problems(), top2);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1].record["candidate"], "conv2d.tiled[a=2]");
  EXPECT_EQ(t[1].why, "top 2");
  ProfileSelection asked;
  asked.candidate = "algo=gemm";
  const auto a = choose_profile_targets(two_problems(), asked);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].why, "asked");
}

TEST(Profile, RecordsReadBackKeyedByCandidateLaterLinesWin) {
  const fs::path dir = test::fresh_temp_dir("profile-test");
  json p = {{"problem_key", "conv2d:h=64,r=1"}, {"candidate", "conv2d.tiled[a=1]"}, {"status", "failed"}};
  {
    RecordWriter w(dir / "profiles.jsonl");
    w.append(p);
    p["status"] = "ok";
    p["derived"] = {{"limiter", "memory-bound at 90% of DRAM peak"}};
    w.append(p);
  }
  const auto read = read_profiles(dir);
  ASSERT_EQ(read.size(), 1u);
  const json& back = read.at(profile_key(p));
  EXPECT_EQ(back["status"], "ok");
  EXPECT_EQ(back["derived"]["limiter"], "memory-bound at 90% of DRAM peak");
  EXPECT_TRUE(read_profiles(dir / "missing").empty());
  fs::remove_all(dir);
}

TEST(Profile, WithoutNcuTheErrorSaysWhereItLooked) {
  EXPECT_THROW(require_ncu("/nonexistent/ncu"), InputError);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", "/nonexistent", 1);
  unsetenv("CUDA_HOME");
  unsetenv("CUDA_PATH");
  const std::string found = find_ncu();
  if (found.empty()) {
    try {
      require_ncu("");
      ADD_FAILURE() << "no ncu anywhere, yet require_ncu did not throw";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("ncu"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("PATH"), std::string::npos);
    }
  } else {
    EXPECT_EQ(require_ncu(""), found);  // a toolkit or /opt install was found without PATH
  }
  setenv("PATH", path.c_str(), 1);
}

namespace {

// A run folder with one ok record, and a stand-in for ncu: a shell script that answers --version and
// then behaves as `body` says.
struct FakeProfiler {
  fs::path dir;
  std::vector<ProfileTarget> targets;
  ProfileOptions options;
  explicit FakeProfiler(const std::string& tag, const std::string& body) {
    dir = test::fresh_temp_dir("fake-ncu-" + tag);
    fs::create_directories(dir / "run");
    std::ofstream(dir / "run/summary.json") << R"({"device": {"name": "a test GPU"}})";
    std::ofstream(dir / "ncu") << "#!/bin/sh\ncase \"$1\" in --version) echo 'Version 2025.3.1.0 (fake)'; exit 0;; esac\n"
                               << body << "\n";
    fs::permissions(dir / "ncu", fs::perms::owner_all);
    json r = timing("conv2d/h=64,r=1,w=64", "conv2d.register_tiled", "a=1", 1.0, false);
    r["problem"] = {{"family", "conv2d"}, {"h", 64}, {"w", 64}, {"r", 1}};
    r["config"] = json::object();
    targets = {{r, "best"}};
    options.folder = dir / "run";
    options.ncu = (dir / "ncu").string();
    options.quiet = true;
  }
  ~FakeProfiler() { fs::remove_all(dir); }
};

}  // namespace

TEST(Profile, CountersNotPermittedIsAClearErrorAndNoRecord) {
  FakeProfiler f("perm", "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                         "Performance Counters'; exit 1");
  std::ostringstream log;
  try {
    profile_targets(f.targets, f.options, log);
    FAIL() << "no error without counter permission";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("performance counters"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(read_records(f.dir / "run/profiles.jsonl").records.empty());
}

TEST(Profile, AHungProfilerIsKilledAndItsCandidatesRecordedAsFailed) {
  FakeProfiler f("hang", "echo '==PROF== Connected to process'; sleep 30");
  f.options.timeout_s = 1;
  std::ostringstream log;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(profile_targets(f.targets, f.options, log), 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  const auto profiles = read_records(f.dir / "run/profiles.jsonl").records;
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0]["status"], "failed");
  EXPECT_NE(profiles[0]["reason"].get<std::string>().find("ran past 1 s"), std::string::npos) << profiles[0].dump();
  EXPECT_EQ(profiles[0]["ncu"]["version"], "2025.3.1.0");
}

// Profiles are appended to the plain profiles.jsonl: a packed run is unpacked first, its earlier
// profiles kept, and the log says so.
TEST(Profile, APackedRunIsUnpackedBeforeItsProfilesGrow) {
#ifndef CONVTUNE_HAVE_ZLIB
  GTEST_SKIP() << "built without zlib";
#endif
  FakeProfiler f("packed", "echo '==PROF== Connected to process'; sleep 30");
  f.options.timeout_s = 1;
  f.options.quiet = false;
  std::ofstream(f.dir / "run/records.jsonl") << f.targets[0].record.dump() << "\n";
  json earlier = {{"problem_key", "conv2d/h=64,r=1,w=64"}, {"candidate", "conv2d.naive"}, {"status", "ok"}};
  std::ofstream(f.dir / "run/profiles.jsonl") << earlier.dump() << "\n";
  ASSERT_EQ(pack_run(f.dir / "run").size(), 2u);
  std::ostringstream log;
  EXPECT_EQ(profile_targets(f.targets, f.options, log), 0);
  EXPECT_NE(log.str().find("was packed: unpacked records.jsonl"), std::string::npos) << log.str();
  EXPECT_FALSE(fs::exists(f.dir / "run/profiles.jsonl.gz"));
  EXPECT_FALSE(fs::exists(f.dir / "run/records.jsonl.gz"));
  const auto profiles = read_records(f.dir / "run/profiles.jsonl").records;
  ASSERT_EQ(profiles.size(), 2u);
  EXPECT_EQ(profiles[0]["candidate"], "conv2d.naive");
  EXPECT_EQ(profiles[1]["status"], "failed");
}
