#include "variants/conv1d_parts/parts_common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/cufft.h"

namespace convtune::parts {
namespace {


// Values of slot s's interval [s*unit, s*unit + len) that fall in [start, end).
int64_t overlap(int64_t s, int64_t unit, int64_t len, int64_t start, int64_t end) {
  return std::max<int64_t>(0, std::min(s * unit + len, end) - std::max(s * unit, start));
}

}  // namespace

// Every pair starts at slot x*step + y (x a block of the side with the longer blocks, step = its length /
// unit; y a block of the other side, whose step is 1). For a fixed x the kept pairs fill the slot range
// [max(x*step, slot_lo), min(x*step + blocks_short - 1, slot_hi)], contiguous, with both ends nondecreasing
// in x; the short-side blocks they use, [lo - x*step, hi - x*step], have both ends nonincreasing. So one
// pass over x counts pairs, and sweeps the two unions (slots and short-side blocks) without storing them.
PartsCounts count_parts(int64_t n, int64_t m, int64_t l_a, int64_t l_b, int64_t start, int64_t end) {
  if (l_a < 1 || l_b < 1 || (l_a % l_b != 0 && l_b % l_a != 0))
    throw std::invalid_argument("count_parts: block lengths must be >= 1 and one must divide the other");
  if (n < 1 || m < 1 || start < 0 || start >= end || end > n + m - 1)
    throw std::invalid_argument("count_parts: lengths must be >= 1 and the slice non-empty inside [0, n+m-1)");
  const int64_t unit = std::min(l_a, l_b), len = l_a + l_b - 1;
  const bool a_long = l_a >= l_b;
  const int64_t step = std::max(l_a, l_b) / unit;
  const int64_t blocks_long = a_long ? ceil_div(n, l_a) : ceil_div(m, l_b);
  const int64_t blocks_short = a_long ? ceil_div(m, l_b) : ceil_div(n, l_a);
  const int64_t slot_lo = std::max<int64_t>(0, ceil_div(start - len + 1, unit));
  const int64_t slot_hi = floor_div(end - 1, unit);

  PartsCounts c;
  int64_t used_long = 0, used_short = 0;
  int64_t short_cover_lo = std::numeric_limits<int64_t>::max();  // short blocks seen so far: [cover_lo, ...]
  int64_t slot_cover_hi = std::numeric_limits<int64_t>::min();   // slots seen so far: [..., cover_hi]
  for (int64_t x = 0; x < blocks_long && x * step <= slot_hi; ++x) {
    const int64_t lo = std::max(x * step, slot_lo), hi = std::min(x * step + blocks_short - 1, slot_hi);
    if (lo > hi) continue;
    c.pairs += hi - lo + 1;
    ++used_long;
    const int64_t y_lo = lo - x * step, y_hi = hi - x * step;
    used_short += std::max<int64_t>(0, std::min(y_hi, short_cover_lo - 1) - y_lo + 1);
    short_cover_lo = std::min(short_cover_lo, y_lo);
    for (int64_t s = std::max(lo, slot_cover_hi + 1); s <= hi; ++s) {
      ++c.intervals;
      c.covered += overlap(s, unit, len, start, end);
    }
    slot_cover_hi = std::max(slot_cover_hi, hi);
  }
  c.used_a = a_long ? used_long : used_short;
  c.used_b = a_long ? used_short : used_long;
  return c;
}

SlotTable make_slot_table(const PartsSchedule& s) {
  SlotTable table;
  table.unit = std::min(s.l_a, s.l_b);
  if (s.intervals() == 0) return table;
  const auto [lo, hi] = std::minmax_element(s.interval_start.begin(), s.interval_start.end());
  table.base = *lo / table.unit;
  table.index.assign(static_cast<size_t>(*hi / table.unit - table.base + 1), -1);
  for (size_t t = 0; t < s.intervals(); ++t)
    table.index[static_cast<size_t>(s.interval_start[t] / table.unit - table.base)] = static_cast<int32_t>(t);
  return table;
}

int64_t fft_length(const std::string& policy, int64_t len) {
  return policy == "pow2" ? next_pow2(len) : next_smooth(len);
}

double real_fft_flops(int64_t p) { return 2.5 * double(p) * std::log2(double(p)); }

std::vector<int64_t> block_lengths(int64_t lo, int64_t hi, int64_t len) {
  std::vector<int64_t> out;
  for (int64_t l = lo; l <= hi; l *= 2) {
    out.push_back(l);
    if (l >= len) break;  // one block covers the sequence: longer ones are padding only
  }
  return out;
}

std::string block_length_problem(const char* name, int64_t l, int64_t lo, int64_t hi, int64_t len) {
  const std::string head = std::string(name) + "=" + std::to_string(l);
  if (l < lo || l > hi) return head + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if ((l & (l - 1)) != 0) return head + " is not a power of two";
  if (l / 2 >= std::max(len, lo))
    return head + " is longer than needed: a block of " + std::to_string(l / 2) + " already covers all " +
           std::to_string(len) + " samples";
  return "";
}

}  // namespace convtune::parts
