// The conv2d family: b images h x w (one after another, row-major), one filter (2r+1)^2 for all, zero
// ghost cells, 'same' output, cross-correlation (out(i,j) = sum in(i+m, j+n) * f(m+r, n+r)), as in the
// seeds and cuDNN. b = 1 is the seeds' problem; its records' keys name no b.
#pragma once
#include <tuple>
#include <vector>

#include "harness/problem.h"

namespace convtune {

inline constexpr const char* kConv2d = "conv2d";

// Typed view of a conv2d problem.
struct Conv2d {
  int64_t h, w, r, b;
  explicit Conv2d(const Problem& p) : h(p.at("h")), w(p.at("w")), r(p.at("r")), b(p.at("b")) {}
  int64_t fw() const { return 2 * r + 1; }
  int64_t pixels() const { return b * h * w; }  // of all images
};

// The float64 'same' cross-correlation of one h x w image with zero ghost cells: out(i, j) = sum over m, n in
// [-r, r] of in(i+m, j+n) * tap(m + r, n + r). The CPU references of conv2d and conv2d_separable.
template <class Tap>
void correlate_image(const float* in, int64_t h, int64_t w, int64_t r, Tap tap, double* out) {
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < w; ++j) {
      double acc = 0;
      for (int64_t m = -r; m <= r; ++m)
        for (int64_t n = -r; n <= r; ++n) {
          const int64_t y = i + m, x = j + n;
          if (y < 0 || y >= h || x < 0 || x >= w) continue;
          acc += double(in[y * w + x]) * tap(m + r, n + r);
        }
      out[i * w + j] = acc;
    }
}

// Kernels take one image per grid.z index, so a batch is at most this many images.
inline constexpr int64_t kMaxConv2dBatch = 65535;

// The awkward image shapes (h, w, r) every 2D family's variants are verified on: single pixels, odd and
// prime sizes, images smaller than the filter, rows that are and are not a multiple of 4 floats.
inline std::vector<std::tuple<int, int, int>> awkward_image_shapes() {
  return {{1, 1, 1}, {7, 13, 2}, {97, 31, 3}, {257, 509, 1}, {131, 67, 5}, {61, 1031, 8}, {139, 83, 16}, {33, 35, 0},
          // w a multiple of 4, h not of any tile: the kernels' aligned float4 paths and partial tiles
          {97, 36, 3}, {45, 100, 7},
          // a radius past a small spectral tile's valid width (n = 32: 6 outputs per side)
          {53, 75, 13}};
}

// Batched shapes (b, h, w, r) the conv2d variants are verified on: one pixel, odd sizes whose images do not
// start on a 16-byte boundary, an image smaller than the filter.
inline std::vector<std::tuple<int, int, int, int>> awkward_batches() {
  return {{3, 1, 1, 1}, {5, 37, 29, 3}, {2, 97, 36, 3}, {4, 7, 13, 8}};
}

}  // namespace convtune
