// The layer_bwd_data family (dE/dX): the adjoint of layer_fwd's convolution (without bias and ReLU) with
// respect to its input, cuDNN's backward-data:
//   dx[n,c,y,x] = sum over (k, i, j, p, q) with p*u - pad_h + i = y and q*v - pad_w + j = x
//                 of dy[n,k,p,q] * filter[k,c,i,j]
// so that <fwd(x, w), dy> = <x, bwd_data(dy, w)> for every x. Rows and columns under padding or skipped
// by the stride get nothing from those taps. Shapes: variants/layer_common/layer_shape.h.
#pragma once
#include "variants/layer_common/layer_shape.h"

namespace convtune {

inline constexpr const char* kLayerBwdData = "layer_bwd_data";

// Input-gradient element `index` of dx (flat NCHW): for each filter tap (i, j), the output (p, q) that
// read this pixel through it, if any (p*u = y + pad_h - i, exactly, inside [0, P)). Written once for the
// CPU and GPU references.
LAYER_HOST_DEVICE inline double bwd_data_at(const LayerShape& l, const float* dy, const float* filter,
                                            int64_t index) {
  const Nchw in = l.x_coords(index);  // (n, c, y, x)
  double acc = 0;
  for (int64_t ki = 0; ki < l.k; ++ki)
    for (int64_t i = 0; i < l.r; ++i)
      for (int64_t j = 0; j < l.s; ++j) {
        const int64_t row = in.y + l.pad_h - i, col = in.x + l.pad_w - j;  // = p*u, q*v if read at all
        if (row < 0 || col < 0 || row % l.u != 0 || col % l.v != 0) continue;
        const int64_t pi = row / l.u, qi = col / l.v;
        if (pi >= l.p || qi >= l.q) continue;
        acc += double(dy[l.y_index(in.n, ki, pi, qi)]) * double(filter[l.filter_index(ki, in.c, i, j)]);
      }
  return acc;
}

}  // namespace convtune
