// `convtune profile` without a GPU: which candidates it picks, how kernels of a real capture are matched to
// their candidate, the profile records it writes and reads back, and its errors without ncu.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/error.h"
#include "harness/ncu_profile.h"
#include "harness/profile.h"
#include "harness/records.h"

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
