// The conv2d family: one image h x w, filter (2r+1)^2, zero ghost cells, 'same' output,
// cross-correlation (out(i,j) = sum in(i+m, j+n) * f(m+r, n+r)), as in the seeds and cuDNN.
#pragma once
#include <tuple>
#include <vector>

#include "harness/problem.h"

namespace convtune {

inline constexpr const char* kConv2d = "conv2d";

// Typed view of a conv2d problem.
struct Conv2d {
  int64_t h, w, r;
  explicit Conv2d(const Problem& p) : h(p.at("h")), w(p.at("w")), r(p.at("r")) {}
  int64_t fw() const { return 2 * r + 1; }
};

// The awkward image shapes (h, w, r) every 2D family's variants are verified on: single pixels, odd and
// prime sizes, images smaller than the filter, rows that are and are not a multiple of 4 floats.
inline std::vector<std::tuple<int, int, int>> awkward_image_shapes() {
  return {{1, 1, 1}, {7, 13, 2}, {97, 31, 3}, {257, 509, 1}, {131, 67, 5}, {61, 1031, 8}, {139, 83, 16}, {33, 35, 0},
          // w a multiple of 4, h not of any tile: the kernels' aligned float4 paths and partial tiles
          {97, 36, 3}, {45, 100, 7},
          // a radius past a small spectral tile's valid width (n = 32: 6 outputs per side)
          {53, 75, 13}};
}

}  // namespace convtune
