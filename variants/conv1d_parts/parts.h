// The conv1d_parts family: two long sequences a (n samples) and b (m samples) and a slice [start, end) of
// their full linear convolution c[i] = sum_j a[j] b[i - j], i in [0, n + m - 1). Full: (0, n+m-1); valid:
// (min(n,m)-1, max(n,m)); the dE/dW case of a layer is a short slice of a long x long convolution.
#pragma once
#include "harness/problem.h"

namespace convtune {

inline constexpr const char* kConv1dParts = "conv1d_parts";

struct Conv1dParts {
  int64_t n, m, start, end;
  explicit Conv1dParts(const Problem& p) : n(p.at("n")), m(p.at("m")), start(p.at("start")), end(p.at("end")) {}
  int64_t outputs() const { return end - start; }
  double multiply_adds() const;  // (j, i - j) pairs inside both sequences over the slice
};

}  // namespace convtune
