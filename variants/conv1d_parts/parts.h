// The conv1d_parts family: two long sequences a (n samples) and b (m samples) and a slice [start, end) of
// their full linear convolution c[i] = sum_j a[j] b[i - j], i in [0, n + m - 1). Full: (0, n+m-1); valid:
// (min(n,m)-1, max(n,m)); the dE/dW case of a layer is a short slice of a long x long convolution.
#pragma once
#include <algorithm>

#include "harness/problem.h"

namespace convtune {

inline constexpr const char* kConv1dParts = "conv1d_parts";

struct Conv1dParts {
  int64_t n, m, start, end;
  explicit Conv1dParts(const Problem& p) : n(p.at("n")), m(p.at("m")), start(p.at("start")), end(p.at("end")) {}
  int64_t outputs() const { return end - start; }
  double multiply_adds() const;  // (j, i - j) pairs inside both sequences over the slice
  // Terms of output i: j in [max(0, i-m+1), min(n-1, i)].
  int64_t terms(int64_t i) const {
    return std::max<int64_t>(0, std::min(n - 1, i) - std::max<int64_t>(0, i - m + 1) + 1);
  }
  // The longest sum in the slice: terms() rises up to i = min(n,m)-1, stays flat, then falls.
  int64_t longest_sum() const { return terms(std::clamp(std::min(n, m) - 1, start, end - 1)); }
};

}  // namespace convtune
