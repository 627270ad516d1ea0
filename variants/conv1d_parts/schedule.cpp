#include "variants/conv1d_parts/schedule.h"

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

namespace convtune::parts {
namespace {


[[noreturn]] void reject(const std::string& what) { throw std::invalid_argument("make_parts_schedule: " + what); }

void validate(int64_t n_a, int64_t n_b, int64_t l_a, int64_t l_b, int64_t start, int64_t end) {
  const auto s = [](int64_t v) { return std::to_string(v); };
  if (n_a < 1 || n_b < 1) reject("lengths must be >= 1, got n_a=" + s(n_a) + " n_b=" + s(n_b));
  if (l_a < 1 || l_b < 1) reject("block lengths must be >= 1, got l_a=" + s(l_a) + " l_b=" + s(l_b));
  if (l_a % l_b != 0 && l_b % l_a != 0)
    reject("one block length must divide the other, got l_a=" + s(l_a) + " l_b=" + s(l_b));
  if (std::max(l_a, l_b) / std::min(l_a, l_b) >= std::numeric_limits<int>::max())
    reject("too many divisions for l_a=" + s(l_a) + " l_b=" + s(l_b));
  const int64_t out = n_a + n_b - 1;
  if (start < 0 || start >= end || end > out)
    reject("slice [" + s(start) + ", " + s(end) + ") must be non-empty and inside [0, " + s(out) + ")");
  const int64_t int32_max = std::numeric_limits<int32_t>::max();
  if (ceil_div(n_a, l_a) > int32_max || ceil_div(n_b, l_b) > int32_max)
    reject("block indices must fit int32 (n_a=" + s(n_a) + " l_a=" + s(l_a) + " n_b=" + s(n_b) + " l_b=" + s(l_b) + ")");
}

// Every pair starts at a multiple of unit = min(l_a, l_b): pair (i, j) starts at unit * (i*step_a + j*step_b).
// Its interval is identified by that multiple ("slot"); slot s is interval s / divisions of division
// s % divisions, so slots of one division are spaced l_a + l_b apart and their intervals cannot overlap.
struct Geometry {
  int64_t l_a, l_b, unit, step_a, step_b, blocks_a, blocks_b, slot_lo, slot_hi;
  int divisions;
  int64_t slot(int64_t i, int64_t j) const { return i * step_a + j * step_b; }
  // Blocks of b that pair with block i of a into a slot of [slot_lo, slot_hi]; empty when lo > hi.
  int64_t j_lo(int64_t i) const { return std::max<int64_t>(0, ceil_div(slot_lo - i * step_a, step_b)); }
  int64_t j_hi(int64_t i) const { return std::min(blocks_b - 1, floor_div(slot_hi - i * step_a, step_b)); }
};

Geometry make_geometry(int64_t n_a, int64_t n_b, int64_t l_a, int64_t l_b, int64_t start, int64_t end) {
  Geometry g{};
  g.l_a = l_a, g.l_b = l_b;
  g.unit = std::min(l_a, l_b);
  g.step_a = l_a / g.unit, g.step_b = l_b / g.unit;
  g.blocks_a = ceil_div(n_a, l_a), g.blocks_b = ceil_div(n_b, l_b);
  g.divisions = static_cast<int>(std::max(g.step_a, g.step_b) + 1);
  // Pair start p touches [start, end) iff p < end and p + l_a + l_b - 1 > start.
  g.slot_lo = std::max<int64_t>(0, ceil_div(start - l_a - l_b + 2, g.unit));
  g.slot_hi = std::min(floor_div(end - 1, g.unit), g.slot(g.blocks_a - 1, g.blocks_b - 1));
  return g;
}

// Calls visit(i, j) for every kept pair, i ascending then j ascending.
template <class Visit>
void for_each_kept_pair(const Geometry& g, Visit visit) {
  const int64_t i_hi = std::min(g.blocks_a - 1, floor_div(g.slot_hi, g.step_a));
  for (int64_t i = 0; i <= i_hi; ++i)
    for (int64_t j = g.j_lo(i), j_end = g.j_hi(i); j <= j_end; ++j) visit(i, j);
}

// Non-empty slots in schedule order: by division, then by start.
std::vector<int64_t> ordered_slots(const Geometry& g, const std::vector<int64_t>& count) {
  std::vector<int64_t> slots;
  for (int k = 0; k < g.divisions; ++k) {
    const int64_t first = g.slot_lo + ((k - g.slot_lo) % g.divisions + g.divisions) % g.divisions;
    for (int64_t s = first; s <= g.slot_hi; s += g.divisions)
      if (count[s - g.slot_lo] > 0) slots.push_back(s);
  }
  return slots;
}

}  // namespace

PartsSchedule make_parts_schedule(int64_t n_a, int64_t n_b, int64_t l_a, int64_t l_b, int64_t start, int64_t end) {
  validate(n_a, n_b, l_a, l_b, start, end);
  const Geometry g = make_geometry(n_a, n_b, l_a, l_b, start, end);
  PartsSchedule out;
  out.l_a = l_a, out.l_b = l_b, out.blocks_a = g.blocks_a, out.blocks_b = g.blocks_b, out.divisions = g.divisions;
  out.pair_offset.push_back(0);
  if (g.slot_lo > g.slot_hi) return out;

  // Counting sort by slot: one pass to size the slots, one to place the pairs (keeps i ascending per slot).
  std::vector<int64_t> count(static_cast<size_t>(g.slot_hi - g.slot_lo + 1), 0);
  for_each_kept_pair(g, [&](int64_t i, int64_t j) { ++count[g.slot(i, j) - g.slot_lo]; });
  std::vector<int64_t> cursor(count.size(), 0);
  for (int64_t s : ordered_slots(g, count)) {
    cursor[s - g.slot_lo] = out.pair_offset.back();
    out.interval_start.push_back(s * g.unit);
    out.interval_division.push_back(static_cast<int32_t>(s % g.divisions));
    out.pair_offset.push_back(out.pair_offset.back() + count[s - g.slot_lo]);
  }
  out.pair_a.resize(static_cast<size_t>(out.pair_offset.back()));
  out.pair_b.resize(out.pair_a.size());
  for_each_kept_pair(g, [&](int64_t i, int64_t j) {
    const int64_t at = cursor[g.slot(i, j) - g.slot_lo]++;
    out.pair_a[at] = static_cast<int32_t>(i);
    out.pair_b[at] = static_cast<int32_t>(j);
  });
  return out;
}

std::vector<std::pair<int64_t, int64_t>> admissible_block_lengths(const std::vector<int64_t>& lengths) {
  for (int64_t l : lengths)
    if (l < 1) throw std::invalid_argument("admissible_block_lengths: block length " + std::to_string(l) + " < 1");
  const std::set<int64_t> distinct(lengths.begin(), lengths.end());
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t l_a : distinct)
    for (int64_t l_b : distinct)
      if (l_a % l_b == 0 || l_b % l_a == 0) pairs.emplace_back(l_a, l_b);
  return pairs;
}

}  // namespace convtune::parts
