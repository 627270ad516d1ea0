// The layer_fwd family: a convolution layer's forward pass, NCHW, as cuDNN computes it with
// CUDNN_CROSS_CORRELATION (the filter is not flipped, unlike conv1d):
//   y[n,k,p,q] = sum_{c,i,j} x[n, c, p*u - pad_h + i, q*v - pad_w + j] * filter[k,c,i,j]  (+ bias[k])
// with zeros outside the image, then the activation asked for (none, ReLU, sigmoid or tanh: the dim relu,
// variants/layer_common/layer_epilogue.h). Shapes: variants/layer_common/layer_shape.h.
// Every layer_fwd variant and both references compute exactly this; the CPU tests pin it.
#pragma once
#include "variants/layer_common/layer_epilogue.h"
#include "variants/layer_common/layer_shape.h"

namespace convtune {

inline constexpr const char* kLayerFwd = "layer_fwd";

// Output element `index` of y (flat NCHW): its receptive field correlated with filter k, plus bias[k]
// (nullptr: no bias), then the activation. Written once for the CPU and GPU references.
LAYER_HOST_DEVICE inline double forward_at(const LayerShape& l, const float* x, const float* filter,
                                           const float* bias, Activation act, int64_t index) {
  const Nchw out = l.y_coords(index);  // (n, k, p, q)
  double acc = 0;
  for (int64_t ci = 0; ci < l.c; ++ci)
    for (int64_t i = 0; i < l.r; ++i)
      for (int64_t j = 0; j < l.s; ++j) {
        const int64_t yi = l.in_row(out.y, i), xi = l.in_col(out.x, j);
        if (l.inside(yi, xi))
          acc += double(x[l.x_index(out.n, ci, yi, xi)]) * double(filter[l.filter_index(out.c, ci, i, j)]);
      }
  if (bias) acc += double(bias[out.c]);
  return activate(act, acc);
}

}  // namespace convtune
