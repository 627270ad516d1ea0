// The conv1d and conv1d_parts families without a GPU: the convolution convention against hand-computed
// numpy.convolve values, problem validation with clear errors, the overlap methods' cost models against
// seed 000's table (computed by hand here, not with the code's formulas), can_implement refusals with
// reasons, the dispatch constraints, and the kernels' shared header reaching NVRTC.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "harness/device.h"
#include "harness/dispatch.h"
#include "harness/error.h"
#include "harness/family.h"
#include "harness/jit.h"
#include "harness/variant.h"
#include "variants/conv1d/kstep.h"

#include "tests/cpu/test_support.h"

using namespace convtune;
using namespace convtune::test;
namespace fs = std::filesystem;

namespace {

Problem c1d(int64_t n, int64_t m, int64_t mode) {
  return Problem::from_json({{"family", "conv1d"}, {"n", n}, {"m", m}, {"mode", mode}});
}
Problem parts(int64_t n, int64_t m, int64_t start, int64_t end) {
  return Problem::from_json({{"family", "conv1d_parts"}, {"n", n}, {"m", m}, {"start", start}, {"end", end}});
}
const Variant& conv1d_variant(const char* n) { return Registry::instance().get(n); }


void expect_refused(const Status& s, const std::string& why_part, const std::string& what) {
  EXPECT_FALSE(s.ok) << what;
  EXPECT_FALSE(s.reason.empty()) << what;
  EXPECT_TRUE(contains(s.reason, why_part)) << what << ": reason '" << s.reason << "' lacks '" << why_part << "'";
}

Config tiled(int threads, int per_thread, int group = 4) {
  return {{"threads", threads}, {"outputs_per_thread", per_thread}, {"tap_group", group}};
}
Config tiled_add(int threads, int per_thread, const char* schedule) {
  Config c = tiled(threads, per_thread);
  c["schedule"] = schedule;
  return c;
}

}  // namespace

// ---- 1. the convention ---------------------------------------------------------------------------------

TEST(Conv1dConvention, CpuReferenceIsNumpyConvolveFullAndValid) {
  // numpy.convolve([1,2,3], [1,10]) = [1, 12, 23, 30]; mode='valid' = [12, 23]. Cross-correlation
  // (numpy.correlate) would give [21, 32] in valid mode: the filter must be flipped.
  const std::vector<float> x = {1, 2, 3}, h = {1, 10};
  expect_values(cpu_reference(c1d(3, 2, 1), {x, h}), {1, 12, 23, 30}, "full [1,2,3]*[1,10]");
  expect_values(cpu_reference(c1d(3, 2, 0), {x, h}), {12, 23}, "valid [1,2,3]*[1,10]");

  // numpy.convolve([1,2,3,4,5], [2,-1,5]) = [2, 3, 9, 15, 21, 15, 25]; valid = [9, 15, 21]
  // (correlation, valid: [1*2-2+15, 4-3+20, 6-4+25] = [15, 21, 27]).
  const std::vector<float> x5 = {1, 2, 3, 4, 5}, h3 = {2, -1, 5};
  expect_values(cpu_reference(c1d(5, 3, 1), {x5, h3}), {2, 3, 9, 15, 21, 15, 25}, "full x5*h3");
  expect_values(cpu_reference(c1d(5, 3, 0), {x5, h3}), {9, 15, 21}, "valid x5*h3");

  // A filter longer than the signal (full only): numpy.convolve([1,2], [1,2,3]) = [1, 4, 7, 6].
  expect_values(cpu_reference(c1d(2, 3, 1), {{1, 2}, {1, 2, 3}}), {1, 4, 7, 6}, "full m > n");
  // m = 1 scales; m == n in valid mode is one dot product with the flipped filter.
  expect_values(cpu_reference(c1d(3, 1, 0), {x, {-2}}), {-2, -4, -6}, "m = 1");
  expect_values(cpu_reference(c1d(3, 3, 0), {x, {1, 10, 100}}), {100 * 1 + 10 * 2 + 1 * 3}, "m == n valid");

  // The output length is the operands' output length.
  for (const Problem& p : {c1d(5, 3, 1), c1d(5, 3, 0), c1d(2, 3, 1)})
    EXPECT_EQ(int64_t(cpu_reference(p, {std::vector<float>(size_t(p.at("n")), 1.f),
                                        std::vector<float>(size_t(p.at("m")), 1.f)})
                          .size()),
              p.output_elements())
        << p.key();
}

TEST(Conv1dConvention, PartsIsASliceOfTheSameConvolution) {
  const std::vector<float> a = {1, 2, 3}, b = {1, 10};
  expect_values(cpu_reference(parts(3, 2, 0, 4), {a, b}), {1, 12, 23, 30}, "parts full");
  expect_values(cpu_reference(parts(3, 2, 1, 3), {a, b}), {12, 23}, "parts = valid slice");
  expect_values(cpu_reference(parts(3, 2, 3, 4), {a, b}), {30}, "parts last");
  expect_values(cpu_reference(parts(3, 2, 0, 1), {a, b}), {1}, "parts first");
  // a shorter than b: numpy.convolve([1,2], [1,2,3,4]) = [1, 4, 7, 10, 8].
  expect_values(cpu_reference(parts(2, 4, 0, 5), {{1, 2}, {1, 2, 3, 4}}), {1, 4, 7, 10, 8}, "parts n < m");
  expect_values(cpu_reference(parts(2, 4, 2, 4), {{1, 2}, {1, 2, 3, 4}}), {7, 10}, "parts n < m slice");
  // Asymmetric and longer: numpy.convolve([1,2,3,4,5], [2,-1,5])[2:6] = [9, 15, 21, 15].
  expect_values(cpu_reference(parts(5, 3, 2, 6), {{1, 2, 3, 4, 5}, {2, -1, 5}}), {9, 15, 21, 15}, "parts mid");
}

// ---- 2. validation and the problem's sizes ------------------------------------------------------------

TEST(Conv1dProblem, ValidModeNeedsMNotAboveN) {
  const std::string e = input_error([] {
    Problem::from_json({{"family", "conv1d"}, {"n", 5}, {"m", 7}, {"mode", 0}}, "spec.problems[2]");
  });
  EXPECT_TRUE(contains(e, "spec.problems[2].m")) << e;
  EXPECT_TRUE(contains(e, "7")) << e;
  EXPECT_TRUE(contains(e, "n = 5")) << e;
  EXPECT_TRUE(contains(e, "m <= n")) << e;
  EXPECT_TRUE(contains(e, "mode 1")) << e;  // what is allowed instead
  // The same shape in full mode is fine, and so are m = 1 and m == n in valid mode.
  EXPECT_NO_THROW(c1d(5, 7, 1));
  EXPECT_EQ(c1d(5, 7, 1).output_elements(), 11);
  EXPECT_NO_THROW(c1d(1, 1, 0));
  EXPECT_EQ(c1d(1, 1, 0).output_elements(), 1);
  EXPECT_EQ(c1d(9, 1, 0).output_elements(), 9);
  EXPECT_EQ(c1d(1031, 1031, 0).output_elements(), 1);
}

TEST(Conv1dProblem, RangesNameTheFieldAndTheRange) {
  for (int mode : {-1, 2}) {
    const std::string e = input_error([&] {
      Problem::from_json({{"family", "conv1d"}, {"n", 10}, {"m", 3}, {"mode", mode}}, "p");
    });
    EXPECT_TRUE(contains(e, "p.mode")) << e;
    EXPECT_TRUE(contains(e, "0..1")) << e;
  }
  std::string e = input_error([] { Problem::from_json({{"family", "conv1d"}, {"n", 10}, {"m", 0}}, "p"); });
  EXPECT_TRUE(contains(e, "p.m")) << e;
  EXPECT_TRUE(contains(e, "1..1048576")) << e;
  e = input_error([] { Problem::from_json({{"family", "conv1d"}, {"n", (int64_t(1) << 28) + 1}, {"m", 3}}, "p"); });
  EXPECT_TRUE(contains(e, "p.n")) << e;
  EXPECT_TRUE(contains(e, "1..268435456")) << e;
  EXPECT_NO_THROW(c1d(int64_t(1) << 28, 3, 1));  // the bound itself is allowed
  e = input_error([] { Problem::from_json({{"family", "conv1d"}, {"n", 10}, {"m", (1 << 20) + 1}}, "p"); });
  EXPECT_TRUE(contains(e, "p.m")) << e;
}

TEST(Conv1dProblem, PartsSlicesAreCheckedWithClearErrors) {
  // n + m - 1 = 7 outputs in the full convolution.
  std::string e = input_error([] {
    Problem::from_json({{"family", "conv1d_parts"}, {"n", 5}, {"m", 3}, {"start", 0}, {"end", 8}}, "spec.p");
  });
  EXPECT_TRUE(contains(e, "spec.p.end")) << e;
  EXPECT_TRUE(contains(e, "8")) << e;
  EXPECT_TRUE(contains(e, "n + m - 1 = 7")) << e;
  EXPECT_NO_THROW(parts(5, 3, 0, 7));
  for (auto [start, end] : {std::pair{3, 3}, {5, 3}, {6, 1}}) {
    e = input_error([&] {
      Problem::from_json({{"family", "conv1d_parts"}, {"n", 5}, {"m", 3}, {"start", start}, {"end", end}}, "spec.p");
    });
    EXPECT_TRUE(contains(e, "spec.p.start")) << e;
    EXPECT_TRUE(contains(e, "empty")) << e;
  }
  // end = 0 is below its range.
  e = input_error([] {
    Problem::from_json({{"family", "conv1d_parts"}, {"n", 5}, {"m", 3}, {"start", 0}, {"end", 0}}, "spec.p");
  });
  EXPECT_TRUE(contains(e, "spec.p.end")) << e;
}

TEST(Conv1dProblem, OperandsAndDirectFlopsByHand) {
  auto sizes = [](const Problem& p) {
    std::vector<int64_t> out;
    for (const auto& o : p.operands()) out.push_back(o.elements);
    return out;
  };
  EXPECT_EQ(sizes(c1d(10, 3, 1)), (std::vector<int64_t>{10, 3, 12}));
  EXPECT_EQ(sizes(c1d(10, 3, 0)), (std::vector<int64_t>{10, 3, 8}));
  EXPECT_EQ(sizes(c1d(3, 40, 1)), (std::vector<int64_t>{3, 40, 42}));
  EXPECT_EQ(sizes(parts(100, 70, 20, 45)), (std::vector<int64_t>{100, 70, 25}));
  EXPECT_EQ(c1d(10, 3, 1).operands().back().name, "output");

  // Full: every x[k] meets every tap once: 10 * 3 pairs. Valid: 8 outputs of 3 taps.
  EXPECT_DOUBLE_EQ(c1d(10, 3, 1).direct_flops(), 2.0 * 30);
  EXPECT_DOUBLE_EQ(c1d(10, 3, 0).direct_flops(), 2.0 * 24);
  EXPECT_DOUBLE_EQ(c1d(3, 40, 1).direct_flops(), 2.0 * 120);
  EXPECT_DOUBLE_EQ(c1d(10, 3, 1).min_bytes(), 4.0 * (10 + 3 + 12));
  // Parts, a = 5, b = 3: pairs per full output are 1,2,3,3,3,2,1; the slice [1, 5) has 2+3+3+3 = 11.
  EXPECT_DOUBLE_EQ(parts(5, 3, 0, 7).direct_flops(), 2.0 * 15);
  EXPECT_DOUBLE_EQ(parts(5, 3, 1, 5).direct_flops(), 2.0 * 11);
  EXPECT_DOUBLE_EQ(parts(3, 5, 1, 5).direct_flops(), 2.0 * 11);  // symmetric in n, m
  EXPECT_DOUBLE_EQ(parts(1, 1, 0, 1).direct_flops(), 2.0);
}

TEST(Conv1dProblem, PartsClosedFormCountEqualsBruteForce) {
  std::mt19937_64 rng(12345);
  auto brute = [](int64_t n, int64_t m, int64_t start, int64_t end) {
    double pairs = 0;  // (j, i - j) with j in a and i - j in b, i in the slice
    for (int64_t i = start; i < end; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (i - j >= 0 && i - j < m) pairs += 1;
    return pairs;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    const int64_t n = 1 + int64_t(rng() % 40), m = 1 + int64_t(rng() % 40), full = n + m - 1;
    const int64_t start = int64_t(rng() % uint64_t(full)), end = start + 1 + int64_t(rng() % uint64_t(full - start));
    const Problem p = parts(n, m, start, end);
    ASSERT_DOUBLE_EQ(p.direct_flops(), 2.0 * brute(n, m, start, end)) << p.key();
  }
  // The full slice is n * m pairs, whatever the sizes; a valid slice is (max - min + 1) * min.
  EXPECT_DOUBLE_EQ(parts(1 << 20, 3001, 0, (1 << 20) + 3000).direct_flops(), 2.0 * (1 << 20) * 3001);
  EXPECT_DOUBLE_EQ(parts(4099, 3001, 3000, 4099).direct_flops(), 2.0 * 3001 * (4099 - 3001 + 1));
  // And conv1d agrees with a parts problem over the same slice.
  EXPECT_DOUBLE_EQ(c1d(1000, 33, 1).direct_flops(), parts(1000, 33, 0, 1032).direct_flops());
  EXPECT_DOUBLE_EQ(c1d(1000, 33, 0).direct_flops(), parts(1000, 33, 32, 1000).direct_flops());
}

// ---- 3. cost models ------------------------------------------------------------------------------------

// Seed 000's table, spatial overlap-discard: N/L work groups each read L + M - 1 inputs, so
// N (1 + (M-1)/L) reads (the table writes floor((M-1)/L) but its prose derives (M-1)/L: we follow the
// prose), and the outputs written once. Adapted to the code's tiling: L = threads * outputs_per_thread
// outputs per block, N = the outputs rounded up to whole blocks (the last block is counted whole), plus
// one read of the filter (the seed keeps it in constant memory and does not count it).
TEST(Conv1dCost, OverlapDiscardFollowsTheSeedTable) {
  const Variant& v = conv1d_variant("conv1d.overlap_discard");
  struct Case {
    int64_t n, m, mode;
    int threads, per_thread;
    double tile_rounded_outputs, outputs;
  };
  // full 1000 * 33: 1032 outputs -> 3 blocks of 512 = 1536; valid: 968 -> 2 blocks = 1024;
  // 256 * 8 = 2048-output tiles, full 4000 * 100: 4099 outputs -> 3 blocks = 6144.
  for (const Case& k : {Case{1000, 33, 1, 128, 4, 1536, 1032}, Case{1000, 33, 0, 128, 4, 1024, 968},
                        Case{4000, 100, 1, 256, 8, 6144, 4099}}) {
    const Problem p = c1d(k.n, k.m, k.mode);
    const double L = double(k.threads) * k.per_thread, N = k.tile_rounded_outputs;
    // N (1 + (m-1)/L), written N + N (m-1) / L so that the hand numbers stay exact in doubles.
    const double reads = N + N * double(k.m - 1) / L + double(k.m), writes = k.outputs;
    const Cost c = v.cost(p, tiled(k.threads, k.per_thread));
    EXPECT_DOUBLE_EQ(c.bytes_model, 4.0 * (reads + writes)) << p.key();
    EXPECT_DOUBLE_EQ(c.flops, p.direct_flops()) << p.key();
    EXPECT_DOUBLE_EQ(c.bytes_min, 4.0 * (k.n + k.m + k.outputs)) << p.key();
    EXPECT_GE(c.bytes_model, c.bytes_min) << p.key();
  }
  // Hand numbers for the first case: 1536 + 96 halo + 33 taps read, 1032 written.
  EXPECT_DOUBLE_EQ(v.cost(c1d(1000, 33, 1), tiled(128, 4)).bytes_model, 4.0 * (1536 + 96 + 33 + 1032));
  // The halo share falls as the tile grows (the seed: L as large as possible) and tends to (m-1)/L.
  const Problem big = c1d(1 << 24, 129, 1);
  EXPECT_LT(v.cost(big, tiled(256, 16)).bytes_model, v.cost(big, tiled(128, 4)).bytes_model);
  const double in_reads = v.cost(big, tiled(128, 4)).bytes_model / 4.0 - 129 - ((1 << 24) + 128);
  EXPECT_NEAR(in_reads / double((1 << 24) + 128), 1.0 + 128.0 / 512, 1e-3);
}

// Seed 000's table, spatial overlap-add: N reads; N (1 + (M-1)/L) writes with L the INPUT block (the
// table's floor again taken as the prose's fraction). Adapted to the code: a block computes
// threads * outputs_per_thread outputs from L = that - (m-1) inputs, N = the signal rounded up to whole
// input blocks; the filter is read once; and, beyond the seed's table, the (blocks-1)(m-1) outputs where
// neighbouring blocks meet are read back to be added (K-step and atomic alike).
TEST(Conv1dCost, OverlapAddFollowsTheSeedTable) {
  const Variant& v = conv1d_variant("conv1d.overlap_add");
  struct Case {
    int64_t n, m, mode;
    int threads, per_thread;
    double blocks;
  };
  // 512-output blocks at m = 33 take 480 inputs: n = 960 is 2 blocks exactly, n = 1000 needs 3.
  // 2048-output blocks at m = 100 take 1949 inputs: n = 4000 needs 3.
  for (const Case& k : {Case{960, 33, 1, 128, 4, 2}, Case{1000, 33, 1, 128, 4, 3}, Case{1000, 33, 0, 128, 4, 3},
                        Case{4000, 100, 1, 256, 8, 3}}) {
    const Problem p = c1d(k.n, k.m, k.mode);
    const double L = double(k.threads) * k.per_thread - double(k.m - 1), N = k.blocks * L;
    const double reads = double(k.n) + double(k.m), writes = N + N * double(k.m - 1) / L;  // N (1 + (m-1)/L)
    const double read_back = (k.blocks - 1) * double(k.m - 1);
    for (const char* schedule : {"k2", "atomic"}) {
      const Cost c = v.cost(p, tiled_add(k.threads, k.per_thread, schedule));
      EXPECT_DOUBLE_EQ(c.bytes_model, 4.0 * (reads + writes + read_back)) << p.key() << " " << schedule;
      EXPECT_DOUBLE_EQ(c.flops, p.direct_flops()) << p.key();
    }
  }
  // Hand numbers for n = 960 (exact blocks): 960 + 33 read; 1024 = n + m - 1 + 32 written; 32 read back.
  EXPECT_DOUBLE_EQ(v.cost(c1d(960, 33, 1), tiled_add(128, 4, "k2")).bytes_model, 4.0 * (960 + 33 + 1024 + 32));
}

TEST(Conv1dCost, FlopsAreTheDirectCountForEveryVariant) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Family& fam = find_family("conv1d");
  std::vector<Problem> problems = fam.test_problems();
  problems.push_back(fam.example());
  const auto variants = test::built_in_variants("conv1d");
  std::set<std::string> names;
  for (const Variant* v : variants) names.insert(v->name());
  for (const char* n : {"conv1d.direct", "conv1d.overlap_discard", "conv1d.overlap_add", "conv1d.fused_fft",
                        "conv1d.overlap_discard_fft", "conv1d.overlap_add_fft", "conv1d.fft", "conv1d.cudnn"})
    EXPECT_TRUE(names.count(n)) << n;
  for (const Variant* v : variants)
    for (const Problem& p : problems)
      for (const Config& c : v->space(p, dev).enumerate()) {
        const Cost cost = v->cost(p, c);
        ASSERT_DOUBLE_EQ(cost.flops, p.direct_flops()) << v->name() << " " << p.key() << " " << c.dump();
        ASSERT_DOUBLE_EQ(cost.bytes_min, p.min_bytes()) << v->name() << " " << p.key();
        if (!v->can_implement(p, c, dev)) continue;  // models of refused configs may be meaningless
        ASSERT_GT(cost.flops_variant, 0) << v->name() << " " << p.key() << " " << c.dump();
        ASSERT_GT(cost.bytes_model, 0) << v->name() << " " << p.key() << " " << c.dump();
      }
}

TEST(Conv1dCost, SpectralWorkGrowsLikeNLogN) {
  // Whole-signal cuFFT: full mode at m = 1 is a transform of exactly n = 2^k points: 5 N log2 N + 6 N.
  const Variant& fft = conv1d_variant("conv1d.fft");
  const Config pow2 = {{"size_policy", "pow2"}};
  for (int k : {10, 16, 20, 24}) {
    const double N = std::ldexp(1.0, k);
    EXPECT_DOUBLE_EQ(fft.cost(c1d(int64_t(N), 1, 1), pow2).flops_variant, 5 * N * k + 6 * N) << k;
    // Superlinear: 4x the signal costs more than 4x.
    const double f1 = fft.cost(c1d(int64_t(N), 1, 1), pow2).flops_variant;
    const double f4 = fft.cost(c1d(int64_t(4 * N), 1, 1), pow2).flops_variant;
    EXPECT_NEAR(f4 / f1, 4.0 * (5.0 * (k + 2) + 6) / (5.0 * k + 6), 1e-12) << k;
    EXPECT_GT(f4 / f1, 4.0) << k;
  }
  // n = 1000 is 2,3,5-smooth: no padding under the smooth policy.
  EXPECT_DOUBLE_EQ(fft.cost(c1d(1000, 1, 1), {{"size_policy", "smooth"}}).flops_variant,
                   5 * 1000 * std::log2(1000.0) + 6000);

  // The overlap methods: windows of fixed size S cost 5 S log2 S + 6 S each, so N log S overall: linear
  // in N, growing with log S. Valid mode, m = 33, S = 4096: 10 windows of 4064 outputs.
  const double S = 4096, valid = S - 32;
  const Problem ten = c1d(int64_t(10 * valid) + 32, 33, 0), twenty = c1d(int64_t(20 * valid) + 32, 33, 0);
  const Variant& od = conv1d_variant("conv1d.overlap_discard_fft");
  const Config s4096 = {{"fft_size", 4096}};
  EXPECT_DOUBLE_EQ(od.cost(ten, s4096).flops_variant, 10 * (5 * S * 12 + 6 * S));
  EXPECT_DOUBLE_EQ(od.cost(twenty, s4096).flops_variant, 2 * od.cost(ten, s4096).flops_variant);
  // Fused: two real windows per complex transform pair (forward + inverse): 5 blocks.
  const Variant& fused = conv1d_variant("conv1d.fused_fft");
  EXPECT_DOUBLE_EQ(fused.cost(ten, {{"fft_size", 4096}, {"threads", 256}, {"radix", 16}, {"grid", "per_pair"}}).flops_variant,
                   5 * (2 * 5 * S * 12 + 6 * S));
  // Overlap-add: blocks of S - 32 inputs: n = 10 (S - 32) is 10 blocks.
  const Variant& oa = conv1d_variant("conv1d.overlap_add_fft");
  const Config a4096 = {{"fft_size", 4096}, {"schedule", "k2"}};
  EXPECT_DOUBLE_EQ(oa.cost(c1d(int64_t(10 * valid), 33, 1), a4096).flops_variant, 10 * (5 * S * 12 + 6 * S));
  // Per output, larger windows cost more (log S), fewer halo points aside.
  const Problem big = c1d(1 << 24, 33, 1);
  EXPECT_LT(od.cost(big, {{"fft_size", 1024}}).flops_variant, od.cost(big, {{"fft_size", 65536}}).flops_variant);
}

// ---- 4. can_implement refusals -------------------------------------------------------------------------

TEST(Conv1dConstraints, OverlapAddNeedsABlockLongerThanTheFilter) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = conv1d_variant("conv1d.overlap_add");
  // 128 * 4 = 512 outputs per block: m = 513 leaves no input, m = 600 less than none.
  for (int64_t m : {513, 600}) {
    const Status s = v.can_implement(c1d(100000, m, 1), tiled_add(128, 4, "atomic"), dev);
    expect_refused(s, "threads * outputs_per_thread >= m", "m = " + std::to_string(m));
    EXPECT_TRUE(contains(s.reason, std::to_string(m))) << s.reason;
  }
  EXPECT_TRUE(v.can_implement(c1d(100000, 512, 1), tiled_add(128, 4, "atomic"), dev).ok);  // 1 input per block
}

TEST(Conv1dConstraints, KStepNeedsEnoughSteps) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  // Spatial: 512-output blocks, m = 300: 213 inputs per block, spans of 512 overlap the next 2 blocks'
  // starts 213 and 426 apart -> k >= 1 + ceil(299 / 213) = 3.
  ASSERT_EQ(conv1d::kstep_min_k(213, 300), 3);
  const Variant& v = conv1d_variant("conv1d.overlap_add");
  const Problem p = c1d(100000, 300, 1);
  expect_refused(v.can_implement(p, tiled_add(128, 4, "k2"), dev), "needs 3", "spatial k2");
  EXPECT_TRUE(v.can_implement(p, tiled_add(128, 4, "k3"), dev).ok);
  EXPECT_TRUE(v.can_implement(p, tiled_add(128, 4, "k4"), dev).ok);
  EXPECT_TRUE(v.can_implement(p, tiled_add(128, 4, "atomic"), dev).ok);
  // m <= block + 1 needs just 2.
  EXPECT_TRUE(v.can_implement(c1d(100000, 257, 1), tiled_add(128, 4, "k2"), dev).ok);

  // Spectral: 1024-point blocks, m = 700: 325 inputs per block -> k >= 1 + ceil(699 / 325) = 4.
  ASSERT_EQ(conv1d::kstep_min_k(325, 700), 4);
  const Variant& f = conv1d_variant("conv1d.overlap_add_fft");
  const Problem q = c1d(100000, 700, 1);
  for (const char* k : {"k2", "k3"})
    expect_refused(f.can_implement(q, {{"fft_size", 1024}, {"schedule", k}}, dev), "needs 4", k);
  EXPECT_TRUE(f.can_implement(q, {{"fft_size", 1024}, {"schedule", "k4"}}, dev).ok);
  EXPECT_TRUE(f.can_implement(q, {{"fft_size", 1024}, {"schedule", "atomic"}}, dev).ok);
}

TEST(Conv1dConstraints, FusedFftNeedsAQuarterValidAndSharedMemory) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = conv1d_variant("conv1d.fused_fft");
  const Config c1024 = {{"fft_size", 1024}, {"threads", 128}, {"radix", 16}, {"grid", "per_pair"}};
  // 1024 - (m - 1) < 256 refuses: m = 770 keeps 255; m = 769 keeps exactly a quarter.
  expect_refused(v.can_implement(c1d(100000, 770, 1), c1024, dev), "fewer than a quarter", "m = 770");
  EXPECT_TRUE(contains(v.can_implement(c1d(100000, 770, 1), c1024, dev).reason, "255")) << "valid count";
  EXPECT_TRUE(v.can_implement(c1d(100000, 769, 1), c1024, dev).ok);
  // The batched overlap-discard has the same rule.
  expect_refused(conv1d_variant("conv1d.overlap_discard_fft").can_implement(c1d(100000, 770, 1), {{"fft_size", 1024}}, dev),
                 "fewer than a quarter", "batched m = 770");

  // 16384 points: 8 * (16384 + 512) = 135168 B of shared memory: fits 227 KiB, not 100 KiB.
  const Config c16k = {{"fft_size", 16384}, {"threads", 1024}, {"radix", 16}, {"grid", "per_pair"}};
  EXPECT_TRUE(v.can_implement(c1d(1 << 20, 33, 1), c16k, dev).ok);
  DeviceInfo small = dev;
  small.max_smem_per_block_optin = 100 * 1024;
  const Status s = v.can_implement(c1d(1 << 20, 33, 1), c16k, small);
  expect_refused(s, "shared memory 135168 B", "16384 on a 100 KiB device");
  EXPECT_TRUE(contains(s.reason, std::to_string(100 * 1024))) << s.reason;
  // A size outside the declared values (32768: 270336 B) does not fit even the H100.
  expect_refused(v.can_implement(c1d(1 << 20, 33, 1), {{"fft_size", 32768}, {"threads", 1024}, {"radix", 16}, {"grid", "per_pair"}}, dev),
                 "shared memory 270336 B", "32768 on sm90");
}

TEST(Conv1dConstraints, ConstantMemoryHoldsAtMost16384Taps) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& direct = conv1d_variant("conv1d.direct");
  const Problem over = c1d(100000, 16385, 0), at = c1d(100000, 16384, 0);
  const Config constant = {{"threads", 256}, {"outputs_per_thread", 1}, {"filter", "constant"}};
  Config global = constant;
  global["filter"] = "global";
  expect_refused(direct.can_implement(over, constant, dev), "16384", "direct constant");
  EXPECT_TRUE(direct.can_implement(over, global, dev).ok);
  EXPECT_TRUE(direct.can_implement(at, constant, dev).ok);
  // The tiled kernels always keep the filter in constant memory.
  expect_refused(conv1d_variant("conv1d.overlap_discard").can_implement(over, tiled(128, 4), dev), "constant memory",
                 "overlap_discard");
  expect_refused(conv1d_variant("conv1d.overlap_add").can_implement(c1d(100000, 16385, 1), tiled_add(256, 128, "atomic"), dev),
                 "constant memory", "overlap_add");
}

TEST(Conv1dConstraints, BatchedFftSizesMustBe7Smooth) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Problem p = c1d(100000, 33, 1);
  // Configs outside the declared values reach can_implement as they are (complete_config is not called).
  for (int size : {1100, 1024 * 11, 1013}) {  // 2^2 5^2 11, 2^10 11, prime
    expect_refused(conv1d_variant("conv1d.overlap_discard_fft").can_implement(p, {{"fft_size", size}}, dev), "prime factor",
                   "overlap_discard_fft " + std::to_string(size));
    expect_refused(conv1d_variant("conv1d.overlap_add_fft").can_implement(p, {{"fft_size", size}, {"schedule", "atomic"}}, dev),
                   "prime factor", "overlap_add_fft " + std::to_string(size));
  }
  for (int size : {1000, 1029, 1080})  // 2^3 5^3, 3 7^3, 2^3 3^3 5
    EXPECT_TRUE(conv1d_variant("conv1d.overlap_discard_fft").can_implement(p, {{"fft_size", size}}, dev).ok) << size;
}

// BUG (reported, not fixed here): enough_valid (spectral.cpp) tests size - (m-1) < size/4, and size/4 is 0
// for sizes 1..3, so a window with NO valid output (size = m - 1) passes: overlap_discard_fft accepts it
// (its plan would then divide by a zero window length), and overlap_add_fft with a K-step schedule calls
// kstep_min_k(0, m), which throws std::invalid_argument out of can_implement instead of saying no. Such
// sizes are 7-smooth and reach can_implement from a user's params (values outside the declared ones).
TEST(Conv1dConstraints, BatchedFftRefusesWindowsWithoutValidOutputs) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (int size : {1, 2, 3}) {
    const Problem p = c1d(1000, size + 1, 1);  // size - (m - 1) = 0 valid outputs per window
    const std::string what = "fft_size " + std::to_string(size) + ", m " + std::to_string(size + 1);
    Status s;
    EXPECT_NO_THROW(s = conv1d_variant("conv1d.overlap_discard_fft").can_implement(p, {{"fft_size", size}}, dev)) << what;
    EXPECT_FALSE(s.ok) << "overlap_discard_fft " << what;
    for (const char* k : {"k2", "atomic"}) {
      Status a;
      EXPECT_NO_THROW(a = conv1d_variant("conv1d.overlap_add_fft").can_implement(p, {{"fft_size", size}, {"schedule", k}}, dev))
          << what << " " << k;
      EXPECT_FALSE(a.ok) << "overlap_add_fft " << what << " " << k;
    }
  }
}

TEST(Conv1dConstraints, SpatialWorkAbove2To41IsRefused) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Config global = {{"threads", 256}, {"outputs_per_thread", 4}, {"filter", "global"}};
  // 2^28 * 2^20 multiply-adds.
  const Problem huge = c1d(int64_t(1) << 28, 1 << 20, 1);
  expect_refused(conv1d_variant("conv1d.direct").can_implement(huge, global, dev), "2^41", "direct");
  // Valid mode with m = 2^14: n - m + 1 = 2^27 outputs is exactly 2^41 (allowed), one more is not.
  const int64_t m = 1 << 14, n = (int64_t(1) << 27) + m - 1;
  EXPECT_TRUE(conv1d_variant("conv1d.direct").can_implement(c1d(n, m, 0), global, dev).ok);
  expect_refused(conv1d_variant("conv1d.direct").can_implement(c1d(n + 1, m, 0), global, dev), "2^41", "direct + 1");
  expect_refused(conv1d_variant("conv1d.overlap_discard").can_implement(c1d(n + 1, m, 0), tiled(128, 4), dev), "2^41",
                 "overlap_discard");
  EXPECT_TRUE(conv1d_variant("conv1d.overlap_discard").can_implement(c1d(n, m, 0), tiled(128, 4), dev).ok);
}

// ---- 5. dispatch ---------------------------------------------------------------------------------------

TEST(Conv1dDispatch, ConstraintDimsAreMAndMode) {
  EXPECT_EQ(find_family("conv1d").constraint_dims(), (std::vector<std::string>{"m", "mode"}));
  EXPECT_TRUE(find_family("conv1d_parts").constraint_dims().empty());
}

TEST(Conv1dDispatch, LookupPrefersEqualMAndModeOverANearerN) {
  auto entry = [](int64_t n, int64_t m, int64_t mode, const char* variant) {
    const Problem p{"conv1d", {{"n", n}, {"m", m}, {"mode", mode}}};
    return json{{"family", "conv1d"},   {"problem", p.to_json()}, {"problem_key", p.key()},
                {"variant", variant},   {"config", json::object()}, {"candidate", variant}};
  };
  // No "fallback.constraints": the family's own constraint dims apply.
  const json d = {{"schema", kDispatchSchema},
                  {"entries",
                   {entry(1 << 20, 63, 1, "far_n_same_m_mode"), entry(1000, 65, 1, "near_n_other_m"),
                    entry(1000, 63, 0, "near_n_other_mode"), entry(1 << 20, 65, 0, "far_n_m65_valid")}}};
  // Without constraints, n = 1024 would be nearer the n = 1000 entries (|log2| ~0.03 + ~0.04, or 1 for mode)
  // than n = 2^20 (~10).
  Lookup l = lookup(d, Problem{"conv1d", {{"n", 1024}, {"m", 63}, {"mode", 1}}});
  EXPECT_EQ(l.rule, "nearest");
  EXPECT_EQ(l.entry["variant"], "far_n_same_m_mode");
  l = lookup(d, Problem{"conv1d", {{"n", 1024}, {"m", 63}, {"mode", 0}}});
  EXPECT_EQ(l.entry["variant"], "near_n_other_mode");
  l = lookup(d, Problem{"conv1d", {{"n", 1000}, {"m", 65}, {"mode", 0}}});
  EXPECT_EQ(l.entry["variant"], "far_n_m65_valid");
  l = lookup(d, Problem{"conv1d", {{"n", 1000}, {"m", 65}, {"mode", 1}}});
  EXPECT_EQ(l.rule, "exact");
  EXPECT_EQ(l.entry["variant"], "near_n_other_m");
}

// ---- 6. kernel sources -----------------------------------------------------------------------------------

TEST(Conv1dKernels, EveryKernelIncludesTheCommonHeaderAndNvrtcGetsIt) {
  const fs::path dir = fs::path(CONVTUNE_SOURCE_DIR) / "variants" / "conv1d" / "kernels";
  std::set<std::string> kernels;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().extension() == ".cuh" && f.path().filename() != "conv1d_common.cuh")
      kernels.insert(f.path().filename().string());
  EXPECT_EQ(kernels, (std::set<std::string>{"conv1d_direct.cuh", "conv1d_tiled.cuh", "conv1d_fused_fft.cuh",
                                            "conv1d_window.cuh"}));
  ASSERT_TRUE(embedded_sources().count("conv1d_common.cuh"));
  for (const std::string& k : kernels) {
    ASSERT_TRUE(embedded_sources().count(k)) << k;
    EXPECT_TRUE(contains(embedded_source(k), "#include \"conv1d_common.cuh\"")) << k;
    const auto inc = included_sources(k);
    EXPECT_NE(std::find(inc.begin(), inc.end(), "conv1d_common.cuh"), inc.end()) << k;
  }
  // And the sources the variants ask NVRTC for are among these kernels.
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Problem p = find_family("conv1d").example();
  for (const Variant* v : test::builtin_variants("conv1d")) {
    for (const Config& c : v->space(p, dev).enumerate())
      for (const JitProgram& prog : v->programs(p, c)) EXPECT_TRUE(kernels.count(prog.source)) << prog.describe();
  }
}

// conv1d.window: short filters only, odd outputs per thread; its byte model is the seed's overlap-discard
// count worked by hand: blocks * (T + m - 1) inputs + the filter + the outputs, 4 bytes each.
TEST(Conv1dWindow, RefusesLongFiltersAndEvenWidthsAndCountsItsTraffic) {
  const Variant& v = Registry::instance().get("conv1d.window");
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Problem valid{"conv1d", {{"n", 1 << 20}, {"m", 17}, {"mode", 0}}};
  const Config c{{"threads", 128}, {"outputs_per_thread", 15}, {"staging", "registers"}};
  EXPECT_TRUE(v.can_implement(valid, c, dev).ok);
  EXPECT_FALSE(v.can_implement(valid, Config{{"threads", 128}, {"outputs_per_thread", 16}, {"staging", "registers"}}, dev).ok);
  // cp.async staging from sm_80 on: a Turing card refuses it, naming why; the register path still runs there.
  Config async = c;
  async["staging"] = "async";
  EXPECT_TRUE(v.can_implement(valid, async, dev).ok);
  DeviceInfo turing = dev;
  turing.cc_major = 7;
  turing.cc_minor = 5;
  EXPECT_EQ(v.can_implement(valid, async, turing).reason, "staging async needs cp.async (sm_80 or newer)");
  EXPECT_TRUE(v.can_implement(valid, c, turing).ok);
  // Shared memory: the tile's 1936 inputs + 8 floats of the aligned cp.async span, in either staging.
  DeviceInfo tight = dev;
  tight.max_smem_per_block_optin = tight.max_smem_per_block = 4 * (1936 + 8) - 4;
  EXPECT_FALSE(v.can_implement(valid, c, tight).ok);
  tight.max_smem_per_block_optin = tight.max_smem_per_block = 4 * (1936 + 8);
  EXPECT_TRUE(v.can_implement(valid, c, tight).ok);
  const Problem long_filter{"conv1d", {{"n", 1 << 20}, {"m", 65}, {"mode", 0}}};
  EXPECT_TRUE(contains(v.can_implement(long_filter, c, dev).reason, "m = 65 > 64"));
  // valid: 2^20 - 16 = 1048560 outputs, tiles of 1920: 547 blocks (the last partial), 1936 inputs each.
  const Cost cost = v.cost(valid, c);
  EXPECT_DOUBLE_EQ(cost.bytes_model, 4.0 * (547.0 * 1936 + 17 + 1048560));
  EXPECT_DOUBLE_EQ(cost.flops_variant, 2.0 * 547 * 1920 * 17);
  EXPECT_DOUBLE_EQ(v.cost(valid, async).bytes_model, cost.bytes_model);
}
