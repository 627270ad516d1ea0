// The conv1d family: a signal x of n samples and a filter h of m taps; the output is their linear
// CONVOLUTION (not cross-correlation, the filter is flipped), as numpy.convolve and the seeds define it:
//   full  (mode 1): y[i] = sum_j x[i - j] * h[j], i in [0, n + m - 1)
//   valid (mode 0): y[i] = full[i + m - 1],      i in [0, n - m + 1)  (needs m <= n)
// Every conv1d variant and both references compute exactly this; the CPU tests pin it.
#pragma once
#include <algorithm>

#include "harness/problem.h"

namespace convtune {

inline constexpr const char* kConv1d = "conv1d";

// Typed view of a conv1d problem.
struct Conv1d {
  int64_t n, m;
  bool full;
  explicit Conv1d(const Problem& p) : n(p.at("n")), m(p.at("m")), full(p.at("mode") == 1) {}
  int64_t outputs() const { return full ? n + m - 1 : std::max<int64_t>(n - m + 1, 0); }
  int64_t first() const { return full ? 0 : m - 1; }  // index of output 0 in the full convolution
};

}  // namespace convtune
