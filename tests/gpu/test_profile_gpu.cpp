// `convtune profile` end to end: a tiny sweep, then its best candidate under Nsight Compute. Skips with a
// message where ncu is absent or may not read the counters.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/device.h"
#include "harness/profile.h"
#include "harness/records.h"

using namespace convtune;
namespace fs = std::filesystem;

namespace {

int run_cli(const std::string& args) {
  const int rc = std::system((std::string(CONVTUNE_BINARY) + " " + args).c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string read_text(const fs::path& p) {
  std::stringstream ss;
  ss << std::ifstream(p).rdbuf();
  return ss.str();
}

}  // namespace

TEST(GpuProfile, ProfilesTheBestCandidateOfARun) {
  if (DeviceInfo::count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  if (find_ncu().empty()) GTEST_SKIP() << "Nsight Compute (ncu) is not installed here: profiling test skipped";
  const fs::path dir = fs::temp_directory_path() / ("convtune-gpu-test-profile-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "spec.json") << R"({
    "name": "profile",
    "problems": [{"family": "conv2d", "h": 2048, "w": 2048, "r": 2}],
    "variants": ["conv2d.constant", "conv2d.naive"],
    "measure": {"time_cap_s": 0.05, "min_samples": 5}
  })";
  ASSERT_EQ(run_cli("sweep " + (dir / "spec.json").string() + " --quiet --results " + (dir / "results").string() +
                    " >/dev/null 2>&1"),
            0);
  fs::path run;
  for (const auto& dev : fs::directory_iterator(dir / "results"))
    for (const auto& r : fs::directory_iterator(dev.path())) run = r.path();
  const auto records_before = read_text(run / "records.jsonl");
  const int rc = run_cli("profile " + run.string() + " --quiet 2>" + (dir / "err.txt").string() + " >/dev/null");
  const std::string err = read_text(dir / "err.txt");
  if (rc == 2 && err.find("counters") != std::string::npos) GTEST_SKIP() << "ncu may not read counters here: " << err;
  ASSERT_EQ(rc, 0) << err;
  EXPECT_EQ(read_text(run / "records.jsonl"), records_before) << "records.jsonl must never be rewritten";
  const auto profiles = read_records(run / "profiles.jsonl").records;
  ASSERT_EQ(profiles.size(), 1u) << "the best of two ours, no library variant in the spec";
  const json& p = profiles.front();
  ASSERT_EQ(p["status"], "ok") << p.dump();
  EXPECT_EQ(p["why"], "best");
  ASSERT_FALSE(p["kernels"].empty());
  // ncu flushes the caches before each pass: the 2048^2 input (16 MiB) must come from DRAM once at least,
  // and no sane kernel moves more than a few times the compulsory bytes (writes may stay in L2).
  const double input_bytes = 2048.0 * 2048.0 * 4;
  EXPECT_GT(p["metrics"]["dram_read_bytes"].get<double>(), 0.95 * input_bytes);
  EXPECT_LT(p["derived"]["bytes_measured"].get<double>(), 4.0 * p["bytes_min"].get<double>());
  EXPECT_FALSE(p["derived"]["limiter"].get<std::string>().empty());
  EXPECT_TRUE(fs::exists(run / p["ncu"]["report"].get<std::string>()));
  fs::remove_all(dir);
}
