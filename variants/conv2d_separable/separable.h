// The conv2d_separable family: conv2d's operation (one image h x w, zero ghost cells, 'same' output,
// cross-correlation) with a separable filter, given as a column vector and a row vector of 2r+1 taps each:
//   out(i, j) = sum_m sum_n in(i+m, j+n) * col(m+r) * row(n+r),  m, n in [-r, r],
// i.e. conv2d with the filter f(a, b) = col(a) * row(b). The separable flag is the family: its operands
// differ from conv2d's (two vectors instead of a (2r+1)^2 filter), so it is never inferred from a conv2d
// filter's data, and no conv2d variant has to refuse it. Its dims are conv2d's (h, w, r), so records of the
// two families compare at the same shape.
#pragma once
#include "harness/problem.h"

namespace convtune {

inline constexpr const char* kConv2dSeparable = "conv2d_separable";
inline constexpr int64_t kMaxSeparableRadius = 32;  // the family's range; kernels unroll the taps fully

// Typed view of a conv2d_separable problem.
struct Separable {
  int64_t h, w, r;
  explicit Separable(const Problem& p) : h(p.at("h")), w(p.at("w")), r(p.at("r")) {}
  int64_t fw() const { return 2 * r + 1; }
  int64_t pixels() const { return h * w; }
};

}  // namespace convtune
