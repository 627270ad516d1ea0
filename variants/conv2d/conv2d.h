// The conv2d family: one image h x w, filter (2r+1)^2, zero ghost cells, 'same' output,
// cross-correlation (out(i,j) = sum in(i+m, j+n) * f(m+r, n+r)), as in the seeds and cuDNN.
#pragma once
#include "harness/problem.h"

namespace convtune {

inline constexpr const char* kConv2d = "conv2d";

// Typed view of a conv2d problem.
struct Conv2d {
  int64_t h, w, r;
  explicit Conv2d(const Problem& p) : h(p.at("h")), w(p.at("w")), r(p.at("r")) {}
  int64_t fw() const { return 2 * r + 1; }
};

}  // namespace convtune
