// The conv1d_parts variants without a GPU: the schedule counts their constraints and costs rest on (against
// the schedule itself), the gather's index arithmetic (the very function the GPU kernel runs) reassembling
// the direct convolution, cost models checked by hand, refusals with reasons, and NVRTC compiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "harness/error.h"
#include "harness/variant.h"
#include "variants/conv1d_parts/parts.h"
#include "variants/conv1d_parts/parts_common.h"

#include "tests/cpu/test_support.h"

using namespace convtune;
using parts::count_parts;
using parts::make_parts_schedule;
using parts::PartsSchedule;

namespace {

Problem parts_problem(int64_t n, int64_t m, int64_t start, int64_t end) {
  return Problem::from_json({{"family", "conv1d_parts"}, {"n", n}, {"m", m}, {"start", start}, {"end", end}});
}
const Variant& parts_variant(const char* n) { return Registry::instance().get(n); }

struct PartsCase {
  int64_t n, m, l_a, l_b, start, end;
  std::string name() const {
    std::ostringstream os;
    os << "n=" << n << " m=" << m << " l_a=" << l_a << " l_b=" << l_b << " slice=[" << start << "," << end << ")";
    return os.str();
  }
};

// Sizes around block boundaries, block pairs with 1 to 17 divisions, full / valid / point / random slices.
std::vector<PartsCase> cases() {
  const std::vector<int64_t> sizes = {1, 5, 63, 64, 65, 200, 1000};
  const std::vector<std::pair<int64_t, int64_t>> blocks = {{1, 1}, {4, 4}, {4, 8}, {8, 4}, {3, 12}, {4, 64}, {64, 4}, {16, 16}};
  std::mt19937_64 rng(0x9a27);
  std::vector<PartsCase> out;
  for (int64_t n : sizes)
    for (int64_t m : sizes) {
      const int64_t full = n + m - 1;
      std::uniform_int_distribution<int64_t> pos(0, full - 1);
      const int64_t p = pos(rng), q = pos(rng);
      for (auto [l_a, l_b] : blocks)
        for (auto [s, e] : {std::pair{int64_t(0), full}, {std::min(n, m) - 1, std::max(n, m)}, {p, p + 1},
                            {std::min(p, q), std::max(p, q) + 1}})
          out.push_back({n, m, l_a, l_b, s, e});
    }
  return out;
}

// What count_parts must agree with: the counts read off the built schedule.
parts::PartsCounts counted(const PartsSchedule& s, int64_t start, int64_t end) {
  parts::PartsCounts c;
  c.pairs = int64_t(s.pairs());
  c.intervals = int64_t(s.intervals());
  c.used_a = int64_t(std::set<int32_t>(s.pair_a.begin(), s.pair_a.end()).size());
  c.used_b = int64_t(std::set<int32_t>(s.pair_b.begin(), s.pair_b.end()).size());
  for (int64_t begin : s.interval_start)
    c.covered += std::max<int64_t>(0, std::min(begin + s.interval_length(), end) - std::max(begin, start));
  return c;
}

std::vector<double> float_signal(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> v(-1.0, 1.0);
  std::vector<double> x(static_cast<size_t>(n));
  for (double& e : x) e = float(v(rng));  // representable in float, as the GPU's inputs are
  return x;
}

// Interval t's values (stride apart), as the spatial kernel or the spectral pipeline leaves them.
std::vector<float> interval_values(const PartsSchedule& s, const std::vector<double>& a, const std::vector<double>& b,
                                   int64_t stride) {
  std::vector<double> values(s.intervals() * size_t(stride), 0.0);
  for (size_t t = 0; t < s.intervals(); ++t)
    for (int64_t p = s.pair_offset[t]; p < s.pair_offset[t + 1]; ++p)
      for (int64_t x = 0; x < s.l_a; ++x)
        for (int64_t y = 0; y < s.l_b; ++y) {
          const int64_t i = s.pair_a[p] * s.l_a + x, j = s.pair_b[p] * s.l_b + y;
          if (i < int64_t(a.size()) && j < int64_t(b.size())) values[t * stride + x + y] += a[i] * b[j];
        }
  return std::vector<float>(values.begin(), values.end());
}

}  // namespace

TEST(PartsVariants, AreRegisteredWithTheirKinds) {
  for (const char* n : {"conv1d_parts.spectral", "conv1d_parts.spatial", "conv1d_parts.fft"})
    ASSERT_NE(Registry::instance().find(n), nullptr) << n;
  EXPECT_EQ(test::built_in_variants("conv1d_parts").size(), 3u);
  EXPECT_TRUE(parts_variant("conv1d_parts.fft").library());
  EXPECT_FALSE(parts_variant("conv1d_parts.spectral").library());
  EXPECT_FALSE(parts_variant("conv1d_parts.spatial").library());
  EXPECT_LT(parts_variant("conv1d_parts.fft").complexity(), parts_variant("conv1d_parts.spatial").complexity());
  EXPECT_LT(parts_variant("conv1d_parts.spatial").complexity(), parts_variant("conv1d_parts.spectral").complexity());
}

TEST(PartsCounts, MatchTheBuiltSchedule) {
  for (const PartsCase& c : cases()) {
    const PartsSchedule s = make_parts_schedule(c.n, c.m, c.l_a, c.l_b, c.start, c.end);
    const parts::PartsCounts want = counted(s, c.start, c.end), got = count_parts(c.n, c.m, c.l_a, c.l_b, c.start, c.end);
    ASSERT_EQ(got.pairs, want.pairs) << c.name();
    ASSERT_EQ(got.intervals, want.intervals) << c.name();
    ASSERT_EQ(got.used_a, want.used_a) << c.name();
    ASSERT_EQ(got.used_b, want.used_b) << c.name();
    ASSERT_EQ(got.covered, want.covered) << c.name();
  }
}

TEST(PartsCounts, HandCountedShortSlice) {
  // n = m = 256 in blocks of 64; outputs [255, 257). Pair (i, j) covers [64(i+j), 64(i+j) + 127): slots
  // i+j = 3 (4 pairs, covering 255 and 256) and 4 (3 pairs, covering 256 only). All 4 blocks of each side used.
  const parts::PartsCounts c = count_parts(256, 256, 64, 64, 255, 257);
  EXPECT_EQ(c.pairs, 7);
  EXPECT_EQ(c.intervals, 2);
  EXPECT_EQ(c.used_a, 4);
  EXPECT_EQ(c.used_b, 4);
  EXPECT_EQ(c.covered, 3);
  EXPECT_THROW(count_parts(256, 256, 64, 96, 0, 511), std::invalid_argument);
  EXPECT_THROW(count_parts(256, 256, 64, 64, 0, 512), std::invalid_argument);
}

TEST(PartsCounts, AreFastForHugeProblems) {
  // 2^28 x 2^28 in blocks of 64 with a 4097-output slice in the middle: O(blocks + intervals), no schedule.
  const int64_t n = int64_t(1) << 28;
  const parts::PartsCounts c = count_parts(n, n, 64, 64, n - 1, n + 4096);
  EXPECT_EQ(c.intervals, 65);
  EXPECT_EQ(c.pairs, 65 * (n / 64) - 64 * 65 / 2);
}

TEST(PartsGather, ReassemblesTheDirectConvolution) {
  std::mt19937_64 rng(0x6a7e);
  for (const PartsCase& c : cases()) {
    const std::vector<double> a = float_signal(c.n, rng), b = float_signal(c.m, rng);
    const PartsSchedule s = make_parts_schedule(c.n, c.m, c.l_a, c.l_b, c.start, c.end);
    const parts::SlotTable table = parts::make_slot_table(s);
    const int64_t stride = c.l_a + c.l_b + 3;  // any stride >= the interval length works
    const std::vector<float> values = interval_values(s, a, b, stride);
    for (int64_t i = c.start; i < c.end; ++i) {
      double want = 0, bound = 0;
      for (int64_t j = std::max<int64_t>(0, i - c.m + 1); j <= std::min(c.n - 1, i); ++j) {
        want += a[j] * b[i - j];
        bound += std::fabs(a[j] * b[i - j]);
      }
      const float got = parts::gather_output(i, values.data(), stride, table.index.data(), table.base,
                                             int64_t(table.index.size()), table.unit, s.interval_length());
      ASSERT_NEAR(got, want, 1e-5 * (bound + 1e-30)) << c.name() << " output " << i;
    }
  }
}

TEST(PartsVariants, CostModelsByHand) {
  // n = m = 256, the full convolution (511 outputs), blocks of 64: 4 x 4 = 16 pairs, all kept, in slots
  // i + j = 0..6: 7 intervals of 127 values, all inside the slice (covered = 7 * 127 = 889).
  const Problem p = parts_problem(256, 256, 0, 511);
  const double direct = 2.0 * 256 * 256, min_bytes = 4.0 * (256 + 256 + 511);

  // Spectral, P = 128 (F = 65 bins): 8 block transforms and 7 interval transforms of 2.5 * 128 * 7 flops,
  // and 16 pairs x 65 bins x 8 flops.
  const Cost s = parts_variant("conv1d_parts.spectral").cost(p, {{"l_a", 64}, {"l_b", 64}, {"fft_size", "pow2"}});
  EXPECT_DOUBLE_EQ(s.flops, direct);
  EXPECT_DOUBLE_EQ(s.bytes_min, min_bytes);
  EXPECT_DOUBLE_EQ(s.flops_variant, 2240.0 * 15 + 8.0 * 16 * 65);
  const double pack = 4.0 * (4 * 64 + 4 * 64) + 4.0 * 8 * 128;  // blocks read, padded rows written
  const double forward = 4.0 * 8 * 128 + 8.0 * 8 * 65;
  const double accumulate = 16.0 * 16 * 65 + 8.0 * 7 * 65;      // two spectra per pair; one sum per interval
  const double inverse = 8.0 * 7 * 65 + 4.0 * 7 * 128;
  const double gather = 4.0 * 889 + 4.0 * 511;
  EXPECT_DOUBLE_EQ(s.bytes_model, pack + forward + accumulate + inverse + gather);
  EXPECT_DOUBLE_EQ(s.bytes_model, 47504.0);

  // Spatial: 64 threads x 2 outputs cover the 127 values in one pass; 16 pairs x 64 x 64 multiply-adds (the
  // full convolution's own count here: nothing is discarded).
  const Cost d = parts_variant("conv1d_parts.spatial").cost(p, {{"l_a", 64}, {"l_b", 64}, {"threads", 64}, {"coarsen", 2}});
  EXPECT_DOUBLE_EQ(d.flops_variant, 2.0 * 16 * 64 * 64);
  EXPECT_DOUBLE_EQ(d.flops_variant, direct);
  EXPECT_DOUBLE_EQ(d.bytes_model, 4.0 * 16 * 128 + 4.0 * 7 * 127 + gather);
  EXPECT_DOUBLE_EQ(d.bytes_model, 17348.0);
  // 64 threads x 1 output would need two passes over the 127 values: every pair's blocks loaded twice.
  const Config two_passes = {{"l_a", 64}, {"l_b", 64}, {"threads", 64}, {"coarsen", 1}};
  EXPECT_DOUBLE_EQ(parts_variant("conv1d_parts.spatial").cost(p, two_passes).bytes_model, 17348.0 + 4.0 * 16 * 128);

  // Whole transform, P = 512 (F = 257): three transforms of 2.5 * 512 * 9 flops and one product per bin.
  const Cost f = parts_variant("conv1d_parts.fft").cost(p, {{"size_policy", "pow2"}});
  EXPECT_DOUBLE_EQ(f.flops_variant, 3 * 11520.0 + 6.0 * 257);
  EXPECT_DOUBLE_EQ(f.bytes_model, (2048.0 + 4096) + (4096.0 + 16 * 257) + (24.0 * 257) + (8.0 * 257 + 2048) + 8.0 * 511);
  EXPECT_DOUBLE_EQ(f.bytes_model, 28712.0);
  // The smooth policy pads 511 to 512 too (2^9 is 7-smooth).
  EXPECT_DOUBLE_EQ(parts_variant("conv1d_parts.fft").cost(p, {{"size_policy", "smooth"}}).bytes_model, 28712.0);
}

TEST(PartsVariants, ToleranceOfTheDirectSumGrowsWithItsLength) {
  const Config c = {{"l_a", 64}, {"l_b", 64}, {"threads", 64}, {"coarsen", 2}};
  const Variant& spatial = parts_variant("conv1d_parts.spatial");
  // Output 12345 of 20011 x 50021 sums 12346 terms: 2e-7 * sqrt(12346) = 2.22e-5 > the 1e-5 floor.
  const Problem one = parts_problem(20011, 50021, 12345, 12346);
  EXPECT_EQ(Conv1dParts(one).longest_sum(), 12346);
  EXPECT_NEAR(spatial.tolerance(one, c).rel_l2, 2e-7 * std::sqrt(12346.0), 1e-15);
  EXPECT_NEAR(spatial.tolerance(one, c).max_rel, 2e-6 * std::sqrt(12346.0), 1e-14);
  // Full 1000 x 1000: the middle output sums 1000 terms, under the floor.
  EXPECT_EQ(Conv1dParts(parts_problem(1000, 1000, 0, 1999)).longest_sum(), 1000);
  EXPECT_DOUBLE_EQ(spatial.tolerance(parts_problem(1000, 1000, 0, 1999), c).rel_l2, 1e-5);
  // Slices on the rising, flat and falling parts of terms(i).
  EXPECT_EQ(Conv1dParts(parts_problem(4099, 3001, 3000, 4099)).longest_sum(), 3001);
  EXPECT_EQ(Conv1dParts(parts_problem(4099, 3001, 0, 10)).longest_sum(), 10);
  EXPECT_EQ(Conv1dParts(parts_problem(4099, 3001, 7000, 7099)).longest_sum(), 4099 + 3001 - 1 - 7000);
  // The spectral variants' error does not grow with the sum's length.
  EXPECT_DOUBLE_EQ(parts_variant("conv1d_parts.fft").tolerance(one, {{"size_policy", "pow2"}}).rel_l2, kSpectralFp32Tolerance.rel_l2);
}

TEST(PartsVariants, RefusalsSayWhy) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const auto refused = [&](const char* variant, const Problem& p, const Config& c, const std::string& why) {
    const Status s = parts_variant(variant).can_implement(p, c, dev);
    EXPECT_FALSE(s.ok) << variant << " " << config_string(c);
    EXPECT_NE(s.reason.find(why), std::string::npos) << variant << ": '" << s.reason << "' lacks '" << why << "'";
  };
  const Problem small = parts_problem(1000, 1000, 0, 1999);
  const Problem conv2d = Problem::from_json({{"family", "conv2d"}, {"h", 8}, {"w", 8}, {"r", 1}});
  const Config spectral = {{"l_a", 64}, {"l_b", 64}, {"fft_size", "pow2"}};
  EXPECT_TRUE(parts_variant("conv1d_parts.spectral").can_implement(small, spectral, dev).ok);
  refused("conv1d_parts.spectral", conv2d, spectral, "not a conv1d_parts problem");
  refused("conv1d_parts.spectral", small, {{"l_a", 64}, {"l_b", 64}, {"fft_size", "prime"}}, "unknown fft_size");
  refused("conv1d_parts.spectral", small, {{"l_a", 96}, {"l_b", 64}, {"fft_size", "pow2"}}, "l_a=96 is not a power of two");
  refused("conv1d_parts.spectral", small, {{"l_a", 32}, {"l_b", 64}, {"fft_size", "pow2"}}, "l_a=32 is outside [64, 65536]");
  // 1000 samples fit one block of 1024: a block of 2048 is padding.
  EXPECT_TRUE(parts_variant("conv1d_parts.spectral").can_implement(small, {{"l_a", 1024}, {"l_b", 64}, {"fft_size", "pow2"}}, dev).ok);
  refused("conv1d_parts.spectral", small, {{"l_a", 64}, {"l_b", 2048}, {"fft_size", "pow2"}}, "l_b=2048 is longer than needed");
  // Full 2^20 x 2^20 in blocks of 64: 2^14 x 2^14 pairs.
  const int64_t mega = int64_t(1) << 20;
  refused("conv1d_parts.spectral", parts_problem(mega, mega, 0, 2 * mega - 1), spectral, "268435456 block pairs > 2^26");
  // 2^24 x 2^24 with blocks 65536 and 64: 2^26 pairs (allowed), but ~2^19 intervals of 65537 bins.
  const int64_t big = int64_t(1) << 24;
  refused("conv1d_parts.spectral", parts_problem(big, big, 0, 2 * big - 1),
          {{"l_a", 65536}, {"l_b", 64}, {"fft_size", "pow2"}}, "interval spectra need");
  // The example's 2^15 used blocks of 64 need ~50 MiB of buffers: too much for a 16 MiB device.
  DeviceInfo tiny = dev;
  tiny.global_mem_bytes = int64_t(16) << 20;
  const Problem ex = example_problem("conv1d_parts");
  EXPECT_TRUE(parts_variant("conv1d_parts.spectral").can_implement(ex, spectral, dev).ok);
  const Status no_room = parts_variant("conv1d_parts.spectral").can_implement(ex, spectral, tiny);
  EXPECT_FALSE(no_room.ok);
  EXPECT_NE(no_room.reason.find("over half the device memory"), std::string::npos) << no_room.reason;

  const Config spatial = {{"l_a", 64}, {"l_b", 64}, {"threads", 64}, {"coarsen", 2}};
  EXPECT_TRUE(parts_variant("conv1d_parts.spatial").can_implement(small, spatial, dev).ok);
  refused("conv1d_parts.spatial", small, {{"l_a", 64}, {"l_b", 64}, {"threads", 512}, {"coarsen", 16}}, "most threads would idle");
  refused("conv1d_parts.spatial", small, {{"l_a", 64}, {"l_b", 64}, {"threads", 100}, {"coarsen", 2}}, "multiple of 32");
  refused("conv1d_parts.spatial", small, {{"l_a", 64}, {"l_b", 64}, {"threads", 64}, {"coarsen", 3}}, "power of two <= 32");
  refused("conv1d_parts.spatial", parts_problem(mega, mega, 0, 2 * mega - 1),
          {{"l_a", 8192}, {"l_b", 8192}, {"threads", 256}, {"coarsen", 8}}, "l_a=8192 is outside [64, 4096]");
  // 2^24 x 2^24 in blocks of 4096: 2^24 pairs x 2^24 multiply-adds = 2^48.
  refused("conv1d_parts.spatial", parts_problem(big, big, 0, 2 * big - 1),
          {{"l_a", 4096}, {"l_b", 4096}, {"threads", 256}, {"coarsen", 16}}, "multiply-adds > 2^42");

  refused("conv1d_parts.fft", small, {{"size_policy", "odd"}}, "unknown size_policy");
  EXPECT_TRUE(parts_variant("conv1d_parts.fft").can_implement(small, {{"size_policy", "smooth"}}, dev).ok);
  EXPECT_FALSE(parts_variant("conv1d_parts.fft").can_implement(parts_problem(big, big, 0, 2 * big - 1), {{"size_policy", "pow2"}}, tiny).ok);
}

TEST(PartsVariants, SpacesAdaptToTheProblemAndTheExampleRuns) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  // Block lengths stop at the first power of two covering the sequence (and never go below 64).
  const ParamSpace s = parts_variant("conv1d_parts.spectral").space(parts_problem(1000, 5, 0, 1004), dev);
  EXPECT_EQ(s.find("l_a")->values, (std::vector<json>{64, 128, 256, 512, 1024}));
  EXPECT_EQ(s.find("l_b")->values, (std::vector<json>{64}));
  // Every point of every space is admissible on the tiny test shapes, where nothing is large.
  for (const Problem& p : {parts_problem(1, 1, 0, 1), parts_problem(5, 3, 0, 7), parts_problem(1000, 1000, 0, 1999)})
    for (const Variant* v : test::built_in_variants("conv1d_parts"))
      for (const Config& c : v->space(p, dev).enumerate()) {
        const Status st = v->can_implement(p, c, dev);
        if (v->name() == "conv1d_parts.spatial" && !st.ok) {
          EXPECT_NE(st.reason.find("most threads would idle"), std::string::npos) << st.reason;
          continue;
        }
        EXPECT_TRUE(st.ok) << v->name() << " " << config_string(c) << " on " << p.key() << ": " << st.reason;
      }
  // The family's example (a 4097-output slice of 2^20 x 2^20) has admissible points for every variant.
  const Problem ex = example_problem("conv1d_parts");
  for (const Variant* v : test::built_in_variants("conv1d_parts")) {
    int admissible = 0;
    for (const Config& c : v->space(ex, dev).enumerate()) admissible += v->can_implement(ex, c, dev).ok;
    EXPECT_GT(admissible, 0) << v->name();
  }
}

TEST(PartsVariants, SpatialProgramsCompileForSm90) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = parts_variant("conv1d_parts.spatial");
  const Problem ex = example_problem("conv1d_parts");
  std::vector<JitProgram> programs;
  std::set<std::string> seen;
  const auto add = [&](const Config& c) {
    if (!v.can_implement(ex, c, dev)) return;
    for (auto& prog : v.programs(ex, c))
      if (seen.insert(prog.describe()).second) programs.push_back(prog);
  };
  // The extremes of shared memory and registers, then a spread of the space.
  for (int coarsen : {2, 16})
    for (auto [l_a, l_b] : {std::pair{64, 64}, {4096, 4096}, {64, 4096}, {4096, 64}})
      add({{"l_a", l_a}, {"l_b", l_b}, {"threads", coarsen == 2 ? 64 : 512}, {"coarsen", coarsen}});
  const auto configs = v.space(ex, dev).enumerate();
  for (size_t i = 0; i < configs.size(); i += 41) add(configs[i]);
  ASSERT_GE(programs.size(), 12u);
  test::expect_all_compile(programs);
}
