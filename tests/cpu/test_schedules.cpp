// Schedules of the 1D overlap methods: convolution in parts (divisions / intervals / block pairs) and the
// K-step schedule of overlap-add. Pure host code, checked by properties over many sizes and slices.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "variants/conv1d/kstep.h"
#include "variants/conv1d_parts/schedule.h"

using convtune::conv1d::kstep_min_k;
using convtune::conv1d::kstep_schedule;
using convtune::parts::admissible_block_lengths;
using convtune::parts::make_parts_schedule;
using convtune::parts::PartsSchedule;

namespace {

struct ScheduleCase {
  int64_t n_a, n_b, l_a, l_b, start, end;
  std::string name() const {
    std::ostringstream os;
    os << "n_a=" << n_a << " n_b=" << n_b << " l_a=" << l_a << " l_b=" << l_b << " slice=[" << start << ","
       << end << ")";
    return os.str();
  }
  int64_t blocks_a() const { return (n_a + l_a - 1) / l_a; }
  int64_t blocks_b() const { return (n_b + l_b - 1) / l_b; }
  int64_t pair_start(int64_t i, int64_t j) const { return i * l_a + j * l_b; }
  bool touches(int64_t i, int64_t j) const {
    return pair_start(i, j) < end && pair_start(i, j) + l_a + l_b - 1 > start;
  }
  PartsSchedule schedule() const { return make_parts_schedule(n_a, n_b, l_a, l_b, start, end); }
};

// Full, 'valid', one random point and two random slices for every size pair and admissible block pair.
std::vector<ScheduleCase> property_cases() {
  const std::vector<int64_t> sizes = {1, 2, 3, 5, 17, 64, 100, 257, 1000};
  const auto block_pairs = admissible_block_lengths({1, 2, 3, 4, 6, 8, 16, 64});
  std::mt19937_64 rng(0x5eed'0001);
  std::vector<ScheduleCase> cases;
  for (int64_t n_a : sizes)
    for (int64_t n_b : sizes) {
      const int64_t out = n_a + n_b - 1;
      std::uniform_int_distribution<int64_t> pos(0, out - 1);
      const int64_t point = pos(rng);
      int64_t s1 = pos(rng), e1 = pos(rng), s2 = pos(rng), e2 = pos(rng);
      const std::vector<std::pair<int64_t, int64_t>> slices = {
          {0, out}, {std::min(n_a, n_b) - 1, std::max(n_a, n_b)}, {point, point + 1},
          {std::min(s1, e1), std::max(s1, e1) + 1}, {std::min(s2, e2), std::max(s2, e2) + 1}};
      for (auto [l_a, l_b] : block_pairs)
        for (auto [start, end] : slices) cases.push_back({n_a, n_b, l_a, l_b, start, end});
    }
  return cases;
}

int64_t min_block(const PartsSchedule& s) { return std::min(s.l_a, s.l_b); }

// Interval t really is interval r >= 0 of its division.
bool interval_on_its_division_grid(const PartsSchedule& s, size_t t) {
  const int64_t from_division_origin = s.interval_start[t] - s.interval_division[t] * min_block(s);
  return from_division_origin >= 0 && from_division_origin % (s.l_a + s.l_b) == 0;
}

::testing::AssertionResult csr_is_well_formed(const PartsSchedule& s) {
  if (s.pair_offset.size() != s.intervals() + 1 || s.interval_division.size() != s.intervals())
    return ::testing::AssertionFailure() << "array sizes disagree";
  if (s.pair_offset.front() != 0 || s.pair_offset.back() != static_cast<int64_t>(s.pairs()) ||
      s.pair_b.size() != s.pairs())
    return ::testing::AssertionFailure() << "pair_offset does not span the pairs";
  for (size_t t = 0; t < s.intervals(); ++t)
    if (s.pair_offset[t + 1] <= s.pair_offset[t]) return ::testing::AssertionFailure() << "empty interval " << t;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult intervals_sorted_and_on_grid(const PartsSchedule& s) {
  for (size_t t = 0; t < s.intervals(); ++t) {
    if (s.interval_division[t] < 0 || s.interval_division[t] >= s.divisions)
      return ::testing::AssertionFailure() << "interval " << t << " has division " << s.interval_division[t];
    if (!interval_on_its_division_grid(s, t))
      return ::testing::AssertionFailure() << "interval " << t << " at " << s.interval_start[t] << " is off grid";
    if (t > 0 && std::make_pair(s.interval_division[t - 1], s.interval_start[t - 1]) >=
                     std::make_pair(s.interval_division[t], s.interval_start[t]))
      return ::testing::AssertionFailure() << "intervals " << t - 1 << "," << t << " out of order";
  }
  return ::testing::AssertionSuccess();
}

// Every touching pair exactly once, in the interval its start names; nothing else.
::testing::AssertionResult pairs_are_exactly_the_touching_ones(const ScheduleCase& c, const PartsSchedule& s) {
  std::vector<int> seen(static_cast<size_t>(c.blocks_a() * c.blocks_b()), 0);
  for (size_t t = 0; t < s.intervals(); ++t)
    for (int64_t p = s.pair_offset[t]; p < s.pair_offset[t + 1]; ++p) {
      const int64_t i = s.pair_a[p], j = s.pair_b[p];
      if (i < 0 || i >= c.blocks_a() || j < 0 || j >= c.blocks_b())
        return ::testing::AssertionFailure() << "pair (" << i << "," << j << ") names a missing block";
      if (c.pair_start(i, j) != s.interval_start[t])
        return ::testing::AssertionFailure() << "pair (" << i << "," << j << ") in interval at " << s.interval_start[t];
      if (!c.touches(i, j)) return ::testing::AssertionFailure() << "pair (" << i << "," << j << ") misses the slice";
      ++seen[i * c.blocks_b() + j];
    }
  for (int64_t i = 0; i < c.blocks_a(); ++i)
    for (int64_t j = 0; j < c.blocks_b(); ++j)
      if (seen[i * c.blocks_b() + j] != (c.touches(i, j) ? 1 : 0))
        return ::testing::AssertionFailure() << "pair (" << i << "," << j << ") kept " << seen[i * c.blocks_b() + j]
                                             << " times";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult divisions_have_disjoint_intervals(const PartsSchedule& s) {
  for (size_t t = 1; t < s.intervals(); ++t)
    if (s.interval_division[t] == s.interval_division[t - 1] &&
        s.interval_start[t - 1] + s.interval_length() > s.interval_start[t])
      return ::testing::AssertionFailure() << "intervals at " << s.interval_start[t - 1] << " and "
                                           << s.interval_start[t] << " of division " << s.interval_division[t]
                                           << " overlap";
  return ::testing::AssertionSuccess();
}

// The seed's printout: "Division k Intervals: start : [(i, j), ...] ...", i the block of the sequence with the
// shorter blocks, pairs by ascending i. Empty intervals are not part of a schedule, so they are not printed.
std::string seed_printout(const PartsSchedule& s, bool a_has_shorter_blocks) {
  std::ostringstream os;
  for (size_t t = 0; t < s.intervals(); ++t) {
    if (t == 0 || s.interval_division[t] != s.interval_division[t - 1])
      os << (t ? " " : "") << "Division " << s.interval_division[t] << " Intervals:";
    std::vector<std::pair<int, int>> pairs;
    for (int64_t p = s.pair_offset[t]; p < s.pair_offset[t + 1]; ++p)
      pairs.push_back(a_has_shorter_blocks ? std::make_pair(s.pair_a[p], s.pair_b[p])
                                           : std::make_pair(s.pair_b[p], s.pair_a[p]));
    std::sort(pairs.begin(), pairs.end());
    os << " " << s.interval_start[t] << " : [";
    for (size_t p = 0; p < pairs.size(); ++p)
      os << (p ? ", " : "") << "(" << pairs[p].first << ", " << pairs[p].second << ")";
    os << "]";
  }
  return os.str();
}

std::vector<double> random_signal(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::vector<double> x(static_cast<size_t>(n));
  for (double& v : x) v = value(rng);
  return x;
}

// Full linear convolution of x[x_begin, x_end) and y[y_begin, y_end), added into out at `at`.
void add_direct_convolution(const std::vector<double>& x, int64_t x_begin, int64_t x_end, const std::vector<double>& y,
                            int64_t y_begin, int64_t y_end, std::vector<double>& out, int64_t at) {
  for (int64_t p = x_begin; p < x_end; ++p)
    for (int64_t q = y_begin; q < y_end; ++q) out[at + (p - x_begin) + (q - y_begin)] += x[p] * y[q];
}

std::vector<double> direct_convolution(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a.size() + b.size() - 1, 0.0);
  add_direct_convolution(a, 0, a.size(), b, 0, b.size(), out, 0);
  return out;
}

// The seed's privatized algorithm: each interval sums its pairs locally and is stored (not added) into its
// division's buffer, so two intervals of one division that overlapped would clobber each other; then the
// divisions are added. Only the slice is meaningful.
std::vector<double> convolution_in_parts(const ScheduleCase& c, const PartsSchedule& s, const std::vector<double>& a,
                                         const std::vector<double>& b) {
  const int64_t out_len = c.n_a + c.n_b - 1;
  std::vector<std::vector<double>> division(s.divisions, std::vector<double>(out_len, 0.0));
  for (size_t t = 0; t < s.intervals(); ++t) {
    std::vector<double> interval(s.interval_length(), 0.0);
    for (int64_t p = s.pair_offset[t]; p < s.pair_offset[t + 1]; ++p) {
      const int64_t i = s.pair_a[p], j = s.pair_b[p];
      const int64_t at = c.pair_start(i, j) - s.interval_start[t];  // 0 by construction
      add_direct_convolution(a, i * c.l_a, std::min((i + 1) * c.l_a, c.n_a), b, j * c.l_b,
                             std::min((j + 1) * c.l_b, c.n_b), interval, at);
    }
    for (int64_t k = 0; k < s.interval_length() && s.interval_start[t] + k < out_len; ++k)
      division.at(s.interval_division[t]).at(s.interval_start[t] + k) = interval[k];
  }
  std::vector<double> out(out_len, 0.0);
  for (const auto& d : division)
    for (int64_t k = 0; k < out_len; ++k) out[k] += d[k];
  return out;
}

std::vector<double> absolute(std::vector<double> x) {
  for (double& v : x) v = std::fabs(v);
  return x;
}

}  // namespace

TEST(PartsSchedule, KeepsExactlyTheTouchingPairsEachInOneInterval) {
  for (const ScheduleCase& c : property_cases()) {
    const PartsSchedule s = c.schedule();
    ASSERT_EQ(s.blocks_a, c.blocks_a()) << c.name();
    ASSERT_EQ(s.blocks_b, c.blocks_b()) << c.name();
    ASSERT_EQ(s.divisions, std::max(c.l_a, c.l_b) / std::min(c.l_a, c.l_b) + 1) << c.name();
    ASSERT_TRUE(csr_is_well_formed(s)) << c.name();
    ASSERT_TRUE(intervals_sorted_and_on_grid(s)) << c.name();
    ASSERT_TRUE(pairs_are_exactly_the_touching_ones(c, s)) << c.name();
  }
}

TEST(PartsSchedule, IntervalsOfOneDivisionAreDisjoint) {
  for (const ScheduleCase& c : property_cases()) ASSERT_TRUE(divisions_have_disjoint_intervals(c.schedule())) << c.name();
}

TEST(PartsSchedule, ReproducesTheSeedExample) {
  // Blocks of 6 and 12; the sequence with 6-blocks has 36 elements, the other 60; full convolution.
  const std::string seed =
      "Division 0 Intervals: 0 : [(0, 0)] 18 : [(1, 1), (3, 0)] 36 : [(0, 3), (2, 2), (4, 1)] "
      "54 : [(1, 4), (3, 3), (5, 2)] 72 : [(4, 4)] "
      "Division 1 Intervals: 6 : [(1, 0)] 24 : [(0, 2), (2, 1), (4, 0)] 42 : [(1, 3), (3, 2), (5, 1)] "
      "60 : [(2, 4), (4, 3)] 78 : [(5, 4)] "
      "Division 2 Intervals: 12 : [(0, 1), (2, 0)] 30 : [(1, 2), (3, 1), (5, 0)] 48 : [(0, 4), (2, 3), (4, 2)] "
      "66 : [(3, 4), (5, 3)]";
  EXPECT_EQ(seed_printout(make_parts_schedule(36, 60, 6, 12, 0, 95), true), seed);
  EXPECT_EQ(seed_printout(make_parts_schedule(60, 36, 12, 6, 0, 95), false), seed);
  // Within an interval pairs come by ascending block of a.
  const PartsSchedule s = make_parts_schedule(36, 60, 6, 12, 0, 95);
  ASSERT_EQ(s.intervals(), 14u);
  EXPECT_EQ(s.interval_start[2], 36);
  EXPECT_EQ(std::vector<int32_t>(s.pair_a.begin() + s.pair_offset[2], s.pair_a.begin() + s.pair_offset[3]),
            (std::vector<int32_t>{0, 2, 4}));
}

TEST(PartsSchedule, ConvolutionInPartsMatchesDirectOnTheSlice) {
  std::mt19937_64 rng(0x5eed'0002);
  int64_t last_n_a = -1, last_n_b = -1;
  std::vector<double> a, b, direct, bound;
  for (const ScheduleCase& c : property_cases()) {
    if (c.n_a != last_n_a || c.n_b != last_n_b) {  // cases come grouped by size pair
      a = random_signal(c.n_a, rng), b = random_signal(c.n_b, rng);
      direct = direct_convolution(a, b);
      bound = direct_convolution(absolute(a), absolute(b));  // scale of the rounding error per output
      last_n_a = c.n_a, last_n_b = c.n_b;
    }
    const std::vector<double> parts = convolution_in_parts(c, c.schedule(), a, b);
    for (int64_t k = c.start; k < c.end; ++k)
      ASSERT_LE(std::fabs(parts[k] - direct[k]), 1e-12 * bound[k]) << c.name() << " output " << k;
  }
}

TEST(PartsSchedule, ShortSliceOfHugeInputsIsFastAndLinearInBlocks) {
  const int64_t n = int64_t{1} << 22, l = 64, start = n - 1, end = n - 1 + 4097;
  const auto t0 = std::chrono::steady_clock::now();
  const PartsSchedule s = make_parts_schedule(n, n, l, l, start, end);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("build_seconds", std::to_string(seconds));
  EXPECT_LT(seconds, 1.0);
  // Pair (i, j) starts at 64(i+j) and touches [start, end) iff 64(i+j) < 2^22+4096 and 64(i+j)+127 > 2^22-1,
  // i.e. i+j = u for u in [2^16-1, 2^16+63]: 65 intervals. With blocks 0..2^16-1, u = 2^16-1 has 2^16 pairs
  // and u = 2^16+t (t = 0..63) has 2^16-1-t, so 65*2^16 - 64*65/2 pairs: 65 per block, O(n/l).
  const int64_t blocks = n / l;
  EXPECT_EQ(s.divisions, 2);
  EXPECT_EQ(s.intervals(), 65u);
  EXPECT_EQ(static_cast<int64_t>(s.pairs()), 65 * blocks - 64 * 65 / 2);
  EXPECT_LE(static_cast<int64_t>(s.pairs()), ((end - start) / l + 2) * blocks);
  for (size_t t = 0; t < s.intervals(); ++t)
    EXPECT_EQ(s.interval_start[t] % l, 0) << t;
}

TEST(PartsSchedule, AdmissibleBlockLengthsAreTheDividingPairs) {
  const std::vector<std::pair<int64_t, int64_t>> expected = {{1, 1}, {1, 2}, {1, 4}, {1, 6}, {2, 1}, {2, 2}, {2, 4},
                                                             {2, 6}, {4, 1}, {4, 2}, {4, 4}, {6, 1}, {6, 2}, {6, 6}};
  EXPECT_EQ(admissible_block_lengths({4, 1, 6, 2, 4}), expected);
  EXPECT_TRUE(admissible_block_lengths({}).empty());
}

TEST(PartsSchedule, RejectsBadArguments) {
  try {
    make_parts_schedule(100, 100, 4, 6, 0, 199);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("l_a=4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("l_b=6"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_parts_schedule(100, 100, 0, 4, 0, 199), std::invalid_argument);
  EXPECT_THROW(make_parts_schedule(100, 100, 4, -4, 0, 199), std::invalid_argument);
  EXPECT_THROW(make_parts_schedule(0, 100, 4, 4, 0, 99), std::invalid_argument);
  EXPECT_THROW(make_parts_schedule(100, 100, 4, 4, 5, 5), std::invalid_argument);    // empty slice
  EXPECT_THROW(make_parts_schedule(100, 100, 4, 4, 9, 5), std::invalid_argument);    // reversed slice
  EXPECT_THROW(make_parts_schedule(100, 100, 4, 4, -1, 5), std::invalid_argument);   // before the output
  EXPECT_THROW(make_parts_schedule(100, 100, 4, 4, 0, 200), std::invalid_argument);  // past the output
  EXPECT_NO_THROW(make_parts_schedule(100, 100, 4, 4, 0, 199));
  EXPECT_THROW(make_parts_schedule(int64_t{1} << 40, 8, 1, 1, 0, 8), std::invalid_argument);  // int32 blocks
  EXPECT_THROW(admissible_block_lengths({4, 0}), std::invalid_argument);
}

TEST(KStep, MinimalKMatchesTheOverlap) {
  EXPECT_EQ(kstep_min_k(256, 17), 2);
  EXPECT_EQ(kstep_min_k(256, 513), 3);
  EXPECT_EQ(kstep_min_k(100, 1), 2);
  EXPECT_EQ(kstep_min_k(256, 257), 2);  // 2*256 == 256+257-1: touching, not overlapping
  EXPECT_EQ(kstep_min_k(256, 258), 3);
  EXPECT_EQ(kstep_min_k(1, 5), 5);
}

TEST(KStep, SeedExample) {
  const std::vector<std::vector<int64_t>> expected = {{0, 3, 6, 9}, {1, 4, 7}, {2, 5, 8}};
  EXPECT_EQ(kstep_schedule(10, 3), expected);
  EXPECT_EQ(kstep_schedule(1, 2), (std::vector<std::vector<int64_t>>{{0}, {}}));
}

// Largest number of blocks of one step that write the same output (block b writes [b*l, b*l+l+m-1)).
int max_writers_in_a_step(const std::vector<int64_t>& step, int64_t blocks, int64_t l, int64_t m) {
  std::vector<int> writers(static_cast<size_t>(blocks * l + m - 1), 0);
  int most = 0;
  for (int64_t b : step)
    for (int64_t x = b * l; x < b * l + l + m - 1; ++x) most = std::max(most, ++writers[x]);
  return most;
}

TEST(KStep, EveryBlockOnceAndStepsNeverShareAnOutput) {
  for (int64_t l : {1, 3, 100, 256})
    for (int64_t m : {1, 2, 17, 100, 101, 256, 257, 513})
      for (int64_t blocks : {0, 1, 5, 10, 33}) {
        const int64_t min_k = kstep_min_k(l, m);
        for (int64_t k = min_k; k <= min_k + 2; ++k) {
          const auto steps = kstep_schedule(blocks, static_cast<int>(k));
          SCOPED_TRACE("l=" + std::to_string(l) + " m=" + std::to_string(m) + " blocks=" +
                       std::to_string(blocks) + " k=" + std::to_string(k));
          ASSERT_EQ(static_cast<int64_t>(steps.size()), k);
          std::vector<int> runs(static_cast<size_t>(blocks), 0);
          for (size_t s = 0; s < steps.size(); ++s)
            for (int64_t b : steps[s]) {
              ASSERT_EQ(b % k, static_cast<int64_t>(s));
              ++runs[b];
            }
          EXPECT_EQ(std::count(runs.begin(), runs.end(), 1), blocks);
          for (const auto& step : steps) EXPECT_LE(max_writers_in_a_step(step, blocks, l, m), 1);
        }
        // One step fewer than the minimum (when still >= 2) lets blocks 0 and k collide.
        const int64_t fewer = min_k - 1;
        if (fewer >= 2 && blocks > fewer) {
          EXPECT_GT(max_writers_in_a_step(kstep_schedule(blocks, static_cast<int>(fewer))[0], blocks, l, m), 1);
        }
      }
}

TEST(KStep, RejectsBadArguments) {
  EXPECT_THROW(kstep_min_k(0, 5), std::invalid_argument);
  EXPECT_THROW(kstep_min_k(5, 0), std::invalid_argument);
  EXPECT_THROW(kstep_schedule(-1, 2), std::invalid_argument);
  EXPECT_THROW(kstep_schedule(5, 0), std::invalid_argument);
}
