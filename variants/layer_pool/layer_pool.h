// The layer_pool family: the seed's subsampling layer, forward only, NCHW; window r x s, zero padding
// pad_h/pad_w, strides u/v, output n x c x P x Q (floor formula, variants/layer_common/layer_shape.h):
//   op 0, max:                       y = max of the window's pixels inside the image (padding ignored,
//                                    as CUDNN_POOLING_MAX)
//   op 1, average including padding: y = sum of the window's pixels / (r*s) (padded zeros count; PyTorch's
//                                    default, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING)
//   op 2, average excluding padding: y = sum / (pixels of the window inside the image)
//                                    (CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING)
// Padding < window (checked) puts at least one image pixel in every window, so no case divides by zero.
#pragma once
#include "variants/layer_common/layer_shape.h"

namespace convtune {

inline constexpr const char* kLayerPool = "layer_pool";

enum PoolOp : int64_t { kPoolMax = 0, kPoolAverageIncludingPadding = 1, kPoolAverageExcludingPadding = 2 };

// Output element `index` of y (flat NCHW). Written once for the CPU and GPU references.
LAYER_HOST_DEVICE inline double pool_at(const LayerShape& l, const float* x, int64_t op, int64_t index) {
  const Nchw out = l.y_coords(index);  // (n, c, p, q)
  double largest = 0, sum = 0;
  int64_t inside = 0;
  for (int64_t i = 0; i < l.r; ++i)
    for (int64_t j = 0; j < l.s; ++j) {
      const int64_t yi = l.in_row(out.y, i), xi = l.in_col(out.x, j);
      if (!l.inside(yi, xi)) continue;
      const double value = double(x[l.x_index(out.n, out.c, yi, xi)]);
      largest = inside == 0 || value > largest ? value : largest;
      sum += value;
      ++inside;
    }
  if (op == kPoolMax) return largest;
  return sum / double(op == kPoolAverageIncludingPadding ? l.r * l.s : inside);
}

}  // namespace convtune
