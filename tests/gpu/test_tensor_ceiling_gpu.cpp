// The TF32 tensor-core ceiling on the device: every method's rate between the FMA rate and the data sheet's
// peak, and a 3xTF32 layer GEMM's record judged against a third of it (below 100%, where the FMA floor
// put such kernels at 130-150%).
#include <gtest/gtest.h>

#include <iostream>

#include "harness/device.h"
#include "harness/runner.h"
#include "harness/variant.h"

using namespace convtune;

namespace {

const Ceilings& measured_ceilings(const DeviceInfo& dev) {
  static const Ceilings c = measure_ceilings(dev);  // once for the suite: about a second
  return c;
}

}  // namespace

TEST(GpuTensorCeiling, Tf32RateBetweenTheFmaRateAndTheNominalPeak) {
  if (DeviceInfo::count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  const Ceilings& c = measured_ceilings(dev);
  const double peak = nominal_tf32_gflops(dev);
  std::cout << dev.name << " (" << dev.arch() << ", " << dev.sms << " SMs, " << dev.sm_clock_khz / 1000
            << " MHz): FP32 FMA " << c.fp32_gflops << " GFLOP/s, TF32 " << c.tf32_gflops << " GFLOP/s ("
            << c.tf32_method << "), nominal TF32 peak " << peak << " GFLOP/s\n";
  for (const auto& [name, gflops] : c.tf32_trials.items()) std::cout << "  " << gflops << " GFLOP/s: " << name << "\n";
  if (const std::string why = no_tf32_reason(dev); !why.empty()) {
    EXPECT_EQ(c.tf32_unavailable, why);
    GTEST_SKIP() << why;
  }
  EXPECT_TRUE(c.tf32_failures.is_null()) << c.tf32_failures.dump(2);
  EXPECT_EQ(c.tf32_trials.size(), tf32_method_names(dev).size());
  EXPECT_GT(c.tf32_gflops, c.fp32_gflops);
  for (const auto& [name, gflops] : c.tf32_trials.items()) {
    EXPECT_GT(gflops.get<double>(), 0) << name;
    if (peak > 0) EXPECT_LE(gflops.get<double>(), peak) << name << ": above the nominal peak (a wrong flop count?)";
  }
}

TEST(GpuTensorCeiling, SplitTf32GemmRecordIsJudgedAgainstAThirdOfTheTf32Rate) {
  if (DeviceInfo::count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  if (const Status s = wgmma_supported(dev); !s) GTEST_SKIP() << s.reason;
  const Ceilings& c = measured_ceilings(dev);
  ASSERT_GT(c.tf32_gflops, 0) << c.tf32_unavailable;
  // The default spec's ResNet 3x3 forward layer, strict fp32.
  const Problem p = Problem::from_json({{"family", "layer_fwd"}, {"n", 32}, {"c", 64}, {"h", 56}, {"w", 56}, {"k", 64},
                                        {"r", 3}, {"s", 3}, {"pad_h", 1}, {"pad_w", 1}});
  const Variant& v = Registry::instance().get("layer_fwd.implicit_gemm_wgmma_ws");
  JitCache jit(JitCache::default_dir(), dev.arch());
  MeasureOptions quick;
  quick.cold = false;
  quick.warmup = 1;
  quick.min_samples = quick.max_samples = 3;
  Runner runner(dev, c, quick, jit, 2028);
  int measured = 0;
  for (const Config& cfg : v.space(p, dev).enumerate()) {
    if (measured == 2) break;  // each config is an NVRTC compile of seconds
    if (!v.can_implement(p, cfg, dev) || v.math_of(cfg) != Math::tf32x3) continue;
    const json r = runner.run(v, p, cfg);
    ASSERT_EQ(r["status"], "ok") << r.dump(2);
    ++measured;
    const double fraction = r["roofline_fraction_math"].get<double>();
    std::cout << r["candidate"].get<std::string>() << ": " << r["gflops"].get<double>() << " GFLOP/s, "
              << 100 * r["roofline_fraction"].get<double>() << "% of the FMA floor, " << 100 * fraction
              << "% of the 3xTF32 floor\n";
    EXPECT_EQ(r["math"], "3xtf32");
    EXPECT_GT(fraction, 0);
    EXPECT_LE(fraction, 1.0) << "faster than a third of the TF32 ceiling allows";
    // Compute-bound: the fraction of the 3xTF32 floor is the FMA one scaled by the two rates.
    EXPECT_NEAR(fraction, r["roofline_fraction_own"].get<double>() * c.fp32_gflops / (c.tf32_gflops / 3), 1e-9 * fraction);
  }
  EXPECT_GT(measured, 0) << "no 3xTF32 config of " << v.name() << " can run " << p.key();
}
