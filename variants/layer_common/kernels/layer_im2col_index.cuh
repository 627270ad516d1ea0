// The column matrix of im2col (the ConvNets seed's unrolling), for one image: row (c, i, j) = (c*r + i)*s + j,
// the filter's KCRS order, so that the filter read as a K x CRS matrix multiplies it; column p*Q + q, one per
// output pixel. Entry ((c, i, j), (p, q)) = x[c, p*u - pad_h + i, q*v - pad_w + j], or 0 under padding.
// Host and device code without includes: NVRTC kernels include it by name, the CPU tests by path, so both run
// this very index arithmetic. Names are lower case: the kernels get the shape as upper-case macros.
#pragma once

#if defined(__CUDACC__)
#define LAYER_COL_FN __host__ __device__ inline
#else
#define LAYER_COL_FN inline
#endif

// One image's geometry. int: the variants refuse col buffers of 2^29 floats or more, far below 2^31.
struct LayerColShape {
  int c, h, w, r, s, p, q, pad_h, pad_w, u, v;
};

LAYER_COL_FN int layer_col_rows(const LayerColShape& g) { return g.c * g.r * g.s; }
LAYER_COL_FN int layer_col_cols(const LayerColShape& g) { return g.p * g.q; }
LAYER_COL_FN int layer_col_row(const LayerColShape& g, int ci, int i, int j) { return (ci * g.r + i) * g.s + j; }

// Where entry ((ci, i, j), (pi, qi)) comes from: its offset in the image's x (ci*h*w + y*w + x), or -1 under
// padding.
LAYER_COL_FN int layer_col_source(const LayerColShape& g, int ci, int i, int j, int pi, int qi) {
  const int y = pi * g.u - g.pad_h + i, x = qi * g.v - g.pad_w + j;
  return (y >= 0 && y < g.h && x >= 0 && x < g.w) ? (ci * g.h + y) * g.w + x : -1;
}

// The inverse, for col2im's gather: the column (p*Q + q) of the output pixel that read pixel (y, x) through
// tap (i, j), or -1 when none did (the tap lands between two strides, or past the last output).
LAYER_COL_FN int layer_col_reader(const LayerColShape& g, int y, int x, int i, int j) {
  const int row = y + g.pad_h - i, col = x + g.pad_w - j;  // p*u and q*v, if read at all
  if (row < 0 || col < 0 || row % g.u != 0 || col % g.v != 0) return -1;
  const int pi = row / g.u, qi = col / g.v;
  return (pi < g.p && qi < g.q) ? pi * g.q + qi : -1;
}
