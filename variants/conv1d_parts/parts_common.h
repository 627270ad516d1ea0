// What the three conv1d_parts variants share on the host: the size of a schedule without building it (for
// can_implement and cost, called for every config of a sweep), the slot table that lets the gather find an
// output's intervals arithmetically, and that gather's per-output sum, written once for host and device so
// that the CPU tests check the very index arithmetic the GPU kernel runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "variants/conv1d_parts/schedule.h"

#if defined(__CUDACC__)
#define PARTS_HOST_DEVICE __host__ __device__
#else
#define PARTS_HOST_DEVICE
#endif

namespace convtune::parts {

// Counts of the schedule make_parts_schedule(n, m, l_a, l_b, start, end) would build.
struct PartsCounts {
  int64_t pairs = 0;      // kept block pairs
  int64_t intervals = 0;  // intervals holding at least one kept pair
  int64_t used_a = 0;     // distinct blocks of a in kept pairs
  int64_t used_b = 0;     // distinct blocks of b in kept pairs
  int64_t covered = 0;    // sum over kept intervals of |interval ∩ [start, end)|: the values the gather reads
};

// O(ceil(len / max(l_a, l_b)) + intervals) time, O(1) memory. Same preconditions as make_parts_schedule
// (throws std::invalid_argument likewise).
PartsCounts count_parts(int64_t n, int64_t m, int64_t l_a, int64_t l_b, int64_t start, int64_t end);

// Interval index per slot. Interval t starts at slot * unit (unit = min(l_a, l_b)); slot = r * divisions + d
// for interval r of division d. index[s - base] is the interval of slot s, or -1 when that interval holds
// no kept pair (its outputs get nothing from that division).
struct SlotTable {
  int64_t unit = 0;
  int64_t base = 0;
  std::vector<int32_t> index;
};
SlotTable make_slot_table(const PartsSchedule& s);

// Output i of the full convolution: the sum over divisions of the one interval of each division covering i,
// read from `values` (interval t's offset k at values[t * stride + k]). Interval slot s covers
// [s*unit, s*unit + len) with len = l_a + l_b - 1, so the covering slots are those in
// (floor((i - len) / unit), floor(i / unit)]: consecutive slots, hence distinct divisions, at most one each.
PARTS_HOST_DEVICE inline float gather_output(int64_t i, const float* values, int64_t stride, const int32_t* slot_index,
                                             int64_t slot_base, int64_t slot_count, int64_t unit, int64_t len) {
  const int64_t below = i - len;  // may be negative: floor it by hand
  const int64_t first = (below >= 0 ? below / unit : -((-below + unit - 1) / unit)) + 1;
  const int64_t lo = first > slot_base ? first : slot_base;
  const int64_t last = i / unit;
  const int64_t hi = last < slot_base + slot_count - 1 ? last : slot_base + slot_count - 1;
  float sum = 0.0f;
  for (int64_t s = lo; s <= hi; ++s) {
    const int32_t t = slot_index[s - slot_base];
    if (t >= 0) sum += values[t * stride + (i - s * unit)];
  }
  return sum;
}

// Transform length for `len` (the support of one linear convolution): "pow2" or "smooth" (2,3,5,7 only).
int64_t fft_length(const std::string& policy, int64_t len);
inline bool known_fft_policy(const std::string& p) { return p == "pow2" || p == "smooth"; }
// The usual estimate of one real transform of p points: half a complex one, 2.5 p log2 p flops.
double real_fft_flops(int64_t p);

// Block lengths: powers of two in [lo, hi], also at most the smallest power of two >= len (a longer block
// only adds padding: the sequence is one block already).
std::vector<int64_t> block_lengths(int64_t lo, int64_t hi, int64_t len);
// "" when l is usable for a sequence of `len` samples with bounds [lo, hi], else why not ("l_a=... ").
std::string block_length_problem(const char* name, int64_t l, int64_t lo, int64_t hi, int64_t len);

}  // namespace convtune::parts
