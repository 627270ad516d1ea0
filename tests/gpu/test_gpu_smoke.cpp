#include <gtest/gtest.h>

#include "harness/device.h"

using namespace convtune;

TEST(Gpu, DeviceIsQueryable) {
  if (DeviceInfo::count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo d = DeviceInfo::query(0);
  EXPECT_GT(d.sms, 0);
  EXPECT_GT(d.l2_bytes, 0);
}
