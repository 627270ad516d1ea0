// Convolution in parts: which pairs of input blocks each output interval of each admissible division gathers.
// The output range of the full linear convolution of a (length n_a) and b (length n_b) is [0, n_a+n_b-1).
// Block i of a is a[i*l_a, min((i+1)*l_a, n_a)), block j of b likewise with l_b. Pair (i, j) touches outputs
// [i*l_a + j*l_b, i*l_a + j*l_b + l_a + l_b - 1).
//
// With l_a | l_b (or l_b | l_a) every pair falls in exactly one interval of exactly one division, and the
// intervals of one division are disjoint: a kernel may run all intervals of a division concurrently, each
// summing its pairs (e.g. in the frequency domain) and inverting once, into a private per-division buffer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace convtune::parts {

// Slice arithmetic goes below zero near the start of the output; round toward -inf / +inf explicitly.
inline int64_t floor_div(int64_t num, int64_t den) { return num / den - ((num % den != 0) && (num < 0)); }
inline int64_t ceil_div(int64_t num, int64_t den) { return -floor_div(-num, den); }

struct PartsSchedule {
  int64_t l_a = 0, l_b = 0;
  int64_t blocks_a = 0, blocks_b = 0;  // ceil(n/l)
  int divisions = 0;                   // max(l_a,l_b)/min(l_a,l_b) + 1
  // Intervals that hold at least one kept pair, sorted by (division, start). Interval r of division k
  // starts at k*min(l_a,l_b) + r*(l_a+l_b) and is l_a+l_b-1 long; every pair (i,j) with
  // i*l_a + j*l_b == that start belongs to it.
  std::vector<int64_t> interval_start;
  std::vector<int32_t> interval_division;
  // CSR, size intervals+1: pairs of interval t are [pair_offset[t], pair_offset[t+1]), ordered by pair_a.
  std::vector<int64_t> pair_offset;
  std::vector<int32_t> pair_a, pair_b;  // block index into a and into b, one entry per kept pair

  size_t intervals() const { return interval_start.size(); }
  size_t pairs() const { return pair_a.size(); }
  int64_t interval_length() const { return l_a + l_b - 1; }
};

// Keeps only pairs whose touched range intersects [start, end) (and whose blocks exist). Requires
// l_a | l_b or l_b | l_a. Throws std::invalid_argument for n < 1, l < 1, neither l dividing the other,
// or a slice that is empty or not inside [0, n_a+n_b-1). Costs O(pairs + (end-start)/min(l_a,l_b) + blocks_a).
PartsSchedule make_parts_schedule(int64_t n_a, int64_t n_b, int64_t l_a, int64_t l_b, int64_t start, int64_t end);

// Admissible block-length pairs for the sweep: all ordered (l_a, l_b) of distinct values from `lengths`
// with one dividing the other (l_a == l_b included), sorted. Throws std::invalid_argument for a length < 1.
std::vector<std::pair<int64_t, int64_t>> admissible_block_lengths(const std::vector<int64_t>& lengths);

}  // namespace convtune::parts
