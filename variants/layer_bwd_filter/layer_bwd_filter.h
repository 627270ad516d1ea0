// The layer_bwd_filter family (dE/dW): the adjoint of layer_fwd's convolution (without bias and ReLU) with
// respect to its filter, cuDNN's backward-filter:
//   dw[k,c,i,j] = sum_{n,p,q} x[n, c, p*u - pad_h + i, q*v - pad_w + j] * dy[n,k,p,q]
// with zeros outside the image, so that <fwd(x, w), dy> = <w, bwd_filter(x, dy)> for every w. Few outputs,
// each a long sum over n*P*Q terms. Shapes: variants/layer_common/layer_shape.h.
#pragma once
#include "variants/layer_common/layer_shape.h"

namespace convtune {

inline constexpr const char* kLayerBwdFilter = "layer_bwd_filter";

// Terms in each filter-gradient element's sum: one per (image, output pixel).
LAYER_HOST_DEVICE inline int64_t bwd_filter_terms(const LayerShape& l) { return l.n * l.p * l.q; }

// Term `t` (flat over n, P, Q) of filter-gradient element `tap` (coordinates (k, c, i, j)); 0 under padding.
// Written once for the CPU reference's sequential sum and the GPU reference's block reduction.
LAYER_HOST_DEVICE inline double bwd_filter_term(const LayerShape& l, const float* x, const float* dy,
                                                const Nchw& tap, int64_t t) {
  const int64_t qi = t % l.q, pi = (t / l.q) % l.p, ni = t / l.q / l.p;
  const int64_t yi = l.in_row(pi, tap.y), xi = l.in_col(qi, tap.x);
  if (!l.inside(yi, xi)) return 0.0;
  return double(x[l.x_index(ni, tap.c, yi, xi)]) * double(dy[l.y_index(ni, tap.n, pi, qi)]);
}

}  // namespace convtune
