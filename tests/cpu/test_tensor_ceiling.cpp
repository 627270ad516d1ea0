// The TF32 tensor-core ceiling without a GPU: each math's rate and floor (numbers worked by hand), the
// fraction a record states against its own math's ceiling, summaries and records from before the ceiling,
// a device without tensor cores, the methods each architecture gets, the nominal peak, the ceiling's kernels
// under NVRTC, the variants' math declarations and `convtune best`.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "harness/device.h"
#include "harness/json_file.h"
#include "harness/runner.h"
#include "harness/select.h"
#include "harness/variant.h"
#include "test_support.h"

using namespace convtune;
using convtune::test::contains;

namespace {

// copy 3000 GB/s, FMA 60 TFLOP/s, TF32 480 TFLOP/s: 3xTF32 is 160 TFLOP/s.
Ceilings example_ceilings() {
  Ceilings c;
  c.copy_gbps = 3000;
  c.fp32_gflops = 60000;
  c.tf32_gflops = 480000;
  return c;
}

// A variant of fixed cost whose math is its config's "math": 1e12 direct flops, 1.2e12 of its own, 3 GB.
class FixedCostVariant : public Variant {
 public:
  std::string name() const override { return "conv2d.fixed_cost_test"; }
  std::string family() const override { return "conv2d"; }
  std::string summary() const override { return "test only"; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override { return {}; }
  Status can_implement(const Problem&, const Config&, const DeviceInfo&) const override { return Status::yes(); }
  Cost cost(const Problem&, const Config&) const override { return {1e12, 1.2e12, 3e9, 3e9}; }
  std::unique_ptr<Plan> prepare(const Problem&, const Config&, const DeviceInfo&, JitCache&) const override {
    return nullptr;
  }
  Math math_of(const Config& c) const override { return math_from_name(c.value("math", std::string(kMathFp32))); }
};

Problem conv2d_problem() { return {"conv2d", {{"h", 64}, {"w", 64}, {"r", 3}}}; }

// The skeleton of FixedCostVariant with `math` under `ceilings`, timed at `median_ms`.
json timed_record(const std::string& math, const Ceilings& ceilings, double median_ms) {
  json r = Runner::skeleton(FixedCostVariant(), conv2d_problem(), {{"math", math}}, ceilings);
  add_rates(r, median_ms);
  return r;
}

DeviceInfo device_of(int major, int minor, int sms, int clock_khz) {
  DeviceInfo d = DeviceInfo::offline_sm90();
  d.cc_major = major;
  d.cc_minor = minor;
  d.sms = sms;
  d.sm_clock_khz = clock_khz;
  return d;
}

size_t count_containing(const std::vector<std::string>& names, const std::string& part) {
  return std::count_if(names.begin(), names.end(), [&](const std::string& n) { return contains(n, part); });
}

}  // namespace

TEST(TensorCeiling, EachMathHasItsRate) {
  const Ceilings c = example_ceilings();
  EXPECT_DOUBLE_EQ(c.compute_gflops(Math::fp32_fma), 60000);
  EXPECT_DOUBLE_EQ(c.compute_gflops(Math::tf32), 480000);
  EXPECT_DOUBLE_EQ(c.compute_gflops(Math::tf32x3), 160000);  // three TF32 products a multiply-add
  Ceilings no_tensor = c;
  no_tensor.tf32_gflops = 0;
  EXPECT_EQ(no_tensor.compute_gflops(Math::tf32x3), 0);
}

TEST(TensorCeiling, FloorOfEachMath) {
  const Ceilings c = example_ceilings();
  // 3e9 bytes at 3000 GB/s: 1 ms. 1.2e12 flops: 20 ms at 60 TFLOP/s, 2.5 ms at 480, 7.5 ms at 160.
  EXPECT_DOUBLE_EQ(c.floor_ms(3e9, 1.2e12, Math::fp32_fma), 20);
  EXPECT_DOUBLE_EQ(c.floor_ms(3e9, 1.2e12, Math::tf32), 2.5);
  EXPECT_DOUBLE_EQ(c.floor_ms(3e9, 1.2e12, Math::tf32x3), 7.5);
  EXPECT_DOUBLE_EQ(c.floor_ms(3e9, 1.2e12), 20);  // the FMA floor, as before
  // 3e10 bytes take 10 ms: memory-bound under TF32.
  EXPECT_DOUBLE_EQ(c.floor_ms(3e10, 1.2e12, Math::tf32), 10);
  Ceilings no_tensor = c;
  no_tensor.tf32_gflops = 0;
  EXPECT_EQ(no_tensor.floor_ms(3e9, 1.2e12, Math::tf32), 0);
}

TEST(TensorCeiling, RecordStatesTheFractionOfItsMathsCeiling) {
  // At 25 ms: the own floor is 20 ms against FMA (0.8), 2.5 ms against TF32 (0.1), 7.5 ms against 3xTF32 (0.3);
  // the direct floor, 1e12 flops at 60 TFLOP/s, is 16.67 ms (2/3) whatever the math.
  const struct {
    const char* math;
    double floor_math_ms, fraction;
  } cases[] = {{"fp32", 20, 0.8}, {"tf32", 2.5, 0.1}, {"3xtf32", 7.5, 0.3}};
  for (const auto& k : cases) {
    const json r = timed_record(k.math, example_ceilings(), 25);
    EXPECT_EQ(r["math"], k.math);
    EXPECT_DOUBLE_EQ(r["floor_math_ms"].get<double>(), k.floor_math_ms) << k.math;
    EXPECT_DOUBLE_EQ(r["roofline_fraction_math"].get<double>(), k.fraction) << k.math;
    EXPECT_NEAR(r["roofline_fraction"].get<double>(), 2.0 / 3.0, 1e-12) << k.math;
    EXPECT_DOUBLE_EQ(r["roofline_fraction_own"].get<double>(), 0.8) << k.math;
    EXPECT_DOUBLE_EQ(r["gflops"].get<double>(), 40000) << k.math;  // 1e12 flops in 25 ms
    const MathFraction m = math_fraction(r);
    EXPECT_EQ(m.math, k.math);
    EXPECT_DOUBLE_EQ(m.fraction, k.fraction) << k.math;
  }
}

TEST(TensorCeiling, SummaryWithoutTheCeilingLoadsAndSaysNothingOfIt) {
  // A shipped run from before the TF32 ceiling: its ceilings block reads, and writes back unchanged.
  const json summary = read_json(std::filesystem::path(CONVTUNE_SOURCE_DIR) /
                                 "results/nvidia-h100-80gb-hbm3/default-20261126-052059/summary.json");
  const Ceilings old = Ceilings::from_json(summary["ceilings"]);
  EXPECT_GT(old.fp32_gflops, 0);
  EXPECT_EQ(old.tf32_gflops, 0);
  EXPECT_TRUE(old.tf32_unavailable.empty());
  EXPECT_EQ(old.to_json(), summary["ceilings"]);
  // Its records: fp32 ones keep their fraction (the FMA floor of their own work), tensor-core ones have none.
  const json fp32 = timed_record("fp32", old, 25), split = timed_record("3xtf32", old, 25);
  EXPECT_TRUE(fp32.contains("roofline_fraction_math"));
  EXPECT_FALSE(split.contains("floor_math_ms"));
  EXPECT_FALSE(split.contains("roofline_fraction_math"));
  EXPECT_EQ(split["math"], "3xtf32");
  EXPECT_TRUE(std::isnan(math_fraction(split).fraction));
}

TEST(TensorCeiling, OldRecordsStillStateTheirMath) {
  // Records written before "math": the math from details or config, the FMA fraction only for fp32.
  const json old_split = {{"config", {{"math", "3xtf32"}}}, {"roofline_fraction_own", 1.51}};
  EXPECT_EQ(math_fraction(old_split).math, "3xtf32");
  EXPECT_TRUE(std::isnan(math_fraction(old_split).fraction));
  const json old_cudnn = {{"config", {{"math", "fp32"}}}, {"details", {{"math", "tf32"}}}, {"roofline_fraction_own", 0.5}};
  EXPECT_EQ(math_fraction(old_cudnn).math, "tf32");
  const json old_direct = {{"config", {{"tile", 32}}}, {"roofline_fraction_own", 0.456}};
  EXPECT_EQ(math_fraction(old_direct).math, "fp32");
  EXPECT_DOUBLE_EQ(math_fraction(old_direct).fraction, 0.456);
}

TEST(TensorCeiling, DeviceWithoutTensorCoresRecordsWhy) {
  const DeviceInfo turing = device_of(7, 5, 40, 1590000);
  const std::string why = no_tf32_reason(turing);
  EXPECT_TRUE(contains(why, "7.5") && contains(why, "8.0")) << why;
  EXPECT_TRUE(tf32_method_names(turing).empty());
  Ceilings c = example_ceilings();
  c.tf32_gflops = 0;
  measure_tf32_ceiling(turing, c);  // no GPU here: it must not touch one
  EXPECT_EQ(c.tf32_gflops, 0);
  EXPECT_EQ(c.tf32_unavailable, why);
  const json j = c.to_json();
  EXPECT_EQ(j["tf32_unavailable"], why);
  EXPECT_FALSE(j.contains("tf32_gflops"));
  EXPECT_EQ(Ceilings::from_json(j).tf32_unavailable, why);
  EXPECT_EQ(timed_record("tf32", c, 25).count("roofline_fraction_math"), 0u);
}

TEST(TensorCeiling, MeasuredCeilingRoundTrips) {
  Ceilings c = example_ceilings();
  c.tf32_method = "wgmma";
  c.tf32_trials = {{"wgmma", 480000.0}, {"cuBLAS", 396000.0}};
  c.tf32_failures = {{"mma.sync", "no block fits"}};
  const Ceilings back = Ceilings::from_json(c.to_json());
  EXPECT_EQ(back.tf32_gflops, 480000);
  EXPECT_EQ(back.tf32_method, "wgmma");
  EXPECT_EQ(back.tf32_trials, c.tf32_trials);
  EXPECT_EQ(back.tf32_failures, c.tf32_failures);
  EXPECT_EQ(c.to_json()["copy_gbps"], 3000);  // the old keys as they were
  EXPECT_EQ(c.to_json()["fp32_gflops"], 60000);
}

TEST(TensorCeiling, MethodsFollowTheArchitecture) {
  const auto hopper = tf32_method_names(device_of(9, 0, 132, 1980000));
  EXPECT_EQ(count_containing(hopper, "wgmma"), 3u);
  EXPECT_EQ(count_containing(hopper, "mma.sync"), 0u);
  EXPECT_EQ(count_containing(hopper, "cuBLAS"), 1u);
  for (const auto& [major, minor] : {std::pair{8, 0}, {8, 6}, {8, 9}, {10, 0}, {12, 0}}) {
    const auto names = tf32_method_names(device_of(major, minor, 100, 1500000));
    EXPECT_EQ(count_containing(names, "wgmma"), 0u) << major << "." << minor;
    EXPECT_EQ(count_containing(names, "mma.sync"), 2u) << major << "." << minor;
    EXPECT_EQ(count_containing(names, "cuBLAS"), 1u) << major << "." << minor;
  }
  // cuBLAS's matrices take at most an eighth of the device's memory.
  DeviceInfo small = device_of(8, 6, 20, 1500000);
  small.global_mem_bytes = int64_t(2) << 30;
  EXPECT_EQ(count_containing(tf32_method_names(small), "4096^3"), 1u);
}

TEST(TensorCeiling, NominalPeakFromSmsClockAndPerSmRate) {
  // H100 SXM: 132 SMs x 1.98 GHz x 2048 = 535265.28 GFLOP/s; A100: 108 x 1.41 GHz x 1024 = 155934.72.
  EXPECT_NEAR(nominal_tf32_gflops(device_of(9, 0, 132, 1980000)), 535265.28, 1e-6);
  EXPECT_NEAR(nominal_tf32_gflops(device_of(8, 0, 108, 1410000)), 155934.72, 1e-6);
  EXPECT_EQ(nominal_tf32_gflops(device_of(8, 6, 82, 1695000)), 0);  // not known here
}

TEST(TensorCeiling, KernelsCompileForSm80AndSm90WithoutSerializedWgmma) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    std::string log;
    EXPECT_GT(nvrtc_compile({"tf32_ceiling.cuh", {}}, arch, &log).size(), 256u) << arch;
    // ptxas notes C751x: it serialized the wgmma's (a wait after each), which would halve the ceiling.
    EXPECT_FALSE(contains(log, "serialized") || contains(log, "C751")) << arch << ":\n" << log;
  }
}

TEST(TensorCeiling, MathNames) {
  for (Math m : {Math::fp32_fma, Math::tf32, Math::tf32x3}) EXPECT_EQ(math_from_name(math_name(m)), m);
  EXPECT_STREQ(math_name(Math::tf32x3), "3xtf32");
  EXPECT_TRUE(contains(test::input_error([] { math_from_name("fp16"); }), "allowed fp32, tf32, 3xtf32"));
}

TEST(TensorCeiling, VariantsDeclareTheirMath) {
  const auto declared = [](const char* variant, const Config& c) { return Registry::instance().get(variant).math_of(c); };
  EXPECT_EQ(declared("conv2d.naive", {{"block_x", 32}, {"block_y", 4}}), Math::fp32_fma);
  EXPECT_EQ(declared("layer_fwd.direct_tiled", {{"tile_w", 16}}), Math::fp32_fma);
  EXPECT_EQ(declared("layer_fwd.implicit_gemm", {{"math", "fp32"}}), Math::fp32_fma);
  EXPECT_EQ(declared("layer_fwd.implicit_gemm", {{"math", "3xtf32"}}), Math::tf32x3);
  EXPECT_EQ(declared("layer_bwd_filter.implicit_gemm_wgmma_ws", {{"math", "3xtf32"}}), Math::tf32x3);
  EXPECT_EQ(declared("layer_bwd_data.implicit_gemm_wgmma", {{"math", "tf32"}}), Math::tf32);
  EXPECT_EQ(declared("layer_fwd.cudnn", {{"algo", "implicit_gemm"}, {"math", "tf32"}}), Math::tf32);
  EXPECT_EQ(declared("layer_bwd_data.cudnn", {{"algo", "algo_0"}, {"math", "fp32"}}), Math::fp32_fma);
  EXPECT_EQ(declared("layer_fwd.im2col_gemm", {{"chunk", 1}, {"math", "tf32"}}), Math::tf32);
  EXPECT_EQ(declared("layer_bwd_filter.winograd", {}), Math::fp32_fma);
}

TEST(TensorCeiling, BestStatesEachRecordsMathAndFraction) {
  const auto dir = test::fresh_temp_dir("tensor-best");
  auto record = [](const std::string& problem, const std::string& variant, json extra) {
    json r = {{"schema", 1}, {"problem_key", problem}, {"family", "layer_fwd"}, {"variant", variant},
              {"candidate", variant + "[x]"}, {"library", false}, {"config", json::object()}, {"status", "ok"},
              {"complexity", 5}, {"time", {{"median_ms", 0.2}, {"rel_stderr", 0.001}}}, {"gbps_effective", 100.0},
              {"roofline_fraction", 1.3}, {"roofline_fraction_own", 1.3}};
    r.update(extra);
    return r;
  };
  std::ofstream out(dir / "records.jsonl");
  out << record("layer_fwd/new", "layer_fwd.implicit_gemm_wgmma_ws",
                {{"math", "3xtf32"}, {"roofline_fraction_math", 0.4334}}).dump() << "\n"
      << record("layer_fwd/old_split", "layer_fwd.implicit_gemm", {{"config", {{"math", "3xtf32"}}}}).dump() << "\n"
      << record("layer_fwd/old_direct", "layer_fwd.direct_tiled", {{"roofline_fraction_own", 0.456}}).dump() << "\n";
  out.close();
  const test::CliResult r = test::run_captured({CONVTUNE_BINARY, "best", dir.string()}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> line_of;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) line_of[line.substr(0, line.find(' '))] = line;
  EXPECT_TRUE(contains(line_of["problem"], "%math")) << r.out;
  EXPECT_TRUE(contains(line_of["layer_fwd/new"], "3xtf32   43.3")) << r.out;
  EXPECT_TRUE(contains(line_of["layer_fwd/old_split"], "3xtf32      -")) << r.out;
  EXPECT_TRUE(contains(line_of["layer_fwd/old_direct"], "fp32   45.6")) << r.out;
  std::filesystem::remove_all(dir);
}
