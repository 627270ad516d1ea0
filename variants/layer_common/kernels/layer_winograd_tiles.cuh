// Winograd F(m x m, 3x3) for the 3x3 stride-1 layers, m = 2 or 4: each m x m block of outputs is computed
// from a t x t input tile (t = m + 2) as A^T [ (G g G^T) .* (B^T d B) ] A, summed over the input channels in
// the transformed domain, so t^2 multiplies per channel give m^2 outputs: 16 for 4 (F(2x2,3x3)), 36 for 16
// (F(4x4,3x3)), where the direct sum takes 36 and 144. Shared by the NVRTC kernels (layer_winograd.cuh) and
// the CPU test, which runs the whole method through these functions in fp32 against the float64 references.
//
// Backward-data at stride 1 is the forward correlation of dy with the filter rotated by 180 degrees and its
// k and c swapped, padded by 2 - pad: WinoDims maps both passes onto one "input -> output" convolution.
// Backward-filter is the same trilinear form differentiated by the filter instead (F(3x3, m x m)): with
// each m x m block of dy as the "filter" and the forward pass's input tiles,
//   dw = G^T [ sum over tiles and images of (A dy A^T) .* (B^T d B) ] G.
// Every transform is a product L X L^T with one of the constant matrices; their zero coefficients are
// skipped at compile time (the loops unroll), so the transforms cost their additions only.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WINO_HD __host__ __device__ __forceinline__
#define WINO_UNROLL _Pragma("unroll")
#else
#define WINO_HD inline
#define WINO_UNROLL
#endif

namespace wino {

// The convolution in the transformed form: ci input channels of ih x iw, co output channels of oh x ow,
// padding ph, pw, and th x tw tiles of m x m outputs per image. Lowercase members: the kernel's -D
// defines (C, H, K, ...) would replace uppercase names.
struct WinoDims {
  int m, ci, co, ih, iw, oh, ow, ph, pw, th, tw;
  WINO_HD constexpr int tiles() const { return th * tw; }
};

// pass 0 (forward): x (c maps of h x w) -> y (k maps of p x q), padding pad. pass 1 (backward-data):
// dy (k maps of p x q) -> dx (c maps of h x w), padding 2 - pad (3x3 filter, stride 1). pass 2
// (backward-filter): the forward pass's tiles, x and dy in, dw out.
WINO_HD constexpr WinoDims dims(int pass, int m, int c, int h, int w, int k, int pad_h, int pad_w, int p, int q) {
  return pass != 1 ? WinoDims{m, c, k, h, w, p, q, pad_h, pad_w, (p + m - 1) / m, (q + m - 1) / m}
                   : WinoDims{m, k, c, p, q, h, w, 2 - pad_h, 2 - pad_w, (h + m - 1) / m, (w + m - 1) / m};
}

// Tap (i, j) of the 3x3 filter that links input channel ci to output channel co, from the k x c x 3 x 3
// filter tensor: as stored (forward, backward-filter), or rotated with k and c swapped (backward-data).
WINO_HD int filter_index(int pass, const WinoDims& d, int co, int ci, int i, int j) {
  return pass != 1 ? ((co * d.ci + ci) * 3 + i) * 3 + j : ((ci * d.co + co) * 3 + (2 - i)) * 3 + (2 - j);
}

// The matrices of F(m x m, 3x3): B^T (t x t), G (t x 3), A^T (m x t). m = 2 interpolates at 0, 1, -1 and
// infinity; m = 4 at 0, 1, -1, 2, -2 and infinity (its fractions of G round to fp32: the CPU test measures
// the error they add).
template <int M>
struct Matrices;

template <>
struct Matrices<2> {
  static constexpr int T = 4;
  WINO_HD static constexpr float bt(int i, int j) {
    constexpr float b[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
    return b[i][j];
  }
  WINO_HD static constexpr float g(int i, int j) {
    constexpr float g[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
    return g[i][j];
  }
  WINO_HD static constexpr float at(int i, int j) {
    constexpr float a[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
    return a[i][j];
  }
};

template <>
struct Matrices<4> {
  static constexpr int T = 6;
  WINO_HD static constexpr float bt(int i, int j) {
    constexpr float b[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                               {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
    return b[i][j];
  }
  WINO_HD static constexpr float g(int i, int j) {
    constexpr float g[6][3] = {{1.f / 4, 0, 0},
                               {-1.f / 6, -1.f / 6, -1.f / 6},
                               {-1.f / 6, 1.f / 6, -1.f / 6},
                               {1.f / 24, 1.f / 12, 1.f / 6},
                               {1.f / 24, -1.f / 12, 1.f / 6},
                               {0, 0, 1}};
    return g[i][j];
  }
  WINO_HD static constexpr float at(int i, int j) {
    constexpr float a[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
    return a[i][j];
  }
};

// The sum over k < Cols of l(i, k) x(k) over the nonzero l(i, k) only. (Template parameters are spelled
// out: the kernels' -D defines take the one-letter names.)
template <int Cols, class Coef, class Elem>
WINO_HD float row_sum(Coef l, int i, Elem x) {
  float sum = 0.f;
  bool first = true;
  WINO_UNROLL
  for (int k = 0; k < Cols; ++k)
    if (l(i, k) != 0.f) {
      sum = first ? l(i, k) * x(k) : sum + l(i, k) * x(k);
      first = false;
    }
  return sum;
}

// y = L x L^T for a Rows x Cols matrix L given as a coefficient function.
template <int Rows, int Cols, class Coef>
WINO_HD void sandwich(Coef l, const float (&x)[Cols][Cols], float (&y)[Rows][Rows]) {
  float t[Rows][Cols];  // L x
  WINO_UNROLL
  for (int i = 0; i < Rows; ++i) {
    WINO_UNROLL
    for (int j = 0; j < Cols; ++j) t[i][j] = row_sum<Cols>(l, i, [&](int k) { return x[k][j]; });
  }
  WINO_UNROLL
  for (int i = 0; i < Rows; ++i) {
    WINO_UNROLL
    for (int j = 0; j < Rows; ++j) y[i][j] = row_sum<Cols>(l, j, [&](int k) { return t[i][k]; });
  }
}

// u = G g G^T.
template <int M>
WINO_HD void filter_tile(const float (&g)[3][3], float (&u)[M + 2][M + 2]) {
  sandwich<M + 2, 3>([](int i, int j) { return Matrices<M>::g(i, j); }, g, u);
}

// v = B^T d B.
template <int M>
WINO_HD void input_tile(const float (&d)[M + 2][M + 2], float (&v)[M + 2][M + 2]) {
  sandwich<M + 2, M + 2>([](int i, int j) { return Matrices<M>::bt(i, j); }, d, v);
}

// y = A^T m A.
template <int M>
WINO_HD void output_tile(const float (&m)[M + 2][M + 2], float (&y)[M][M]) {
  sandwich<M, M + 2>([](int i, int j) { return Matrices<M>::at(i, j); }, m, y);
}

// Backward-filter: e = A g A^T for an m x m block g of dy.
template <int M>
WINO_HD void gradient_tile(const float (&g)[M][M], float (&e)[M + 2][M + 2]) {
  sandwich<M + 2, M>([](int i, int j) { return Matrices<M>::at(j, i); }, g, e);
}

// Backward-filter: dw = G^T m G.
template <int M>
WINO_HD void filter_gradient_tile(const float (&m)[M + 2][M + 2], float (&dw)[3][3]) {
  sandwich<3, M + 2>([](int i, int j) { return Matrices<M>::g(j, i); }, m, dw);
}

// The m x m block of tile (ty, tx) from one oh x ow plane of dy, zero outside.
template <int M>
WINO_HD void load_gradient_tile(const float* plane, const WinoDims& d, int ty, int tx, float (&g)[M][M]) {
  WINO_UNROLL
  for (int i = 0; i < M; ++i)
    WINO_UNROLL
    for (int j = 0; j < M; ++j) {
      const int y = M * ty + i, x = M * tx + j;
      g[i][j] = y < d.oh && x < d.ow ? plane[y * d.ow + x] : 0.f;
    }
}

// The t x t input tile of tile (ty, tx) from one input channel's ih x iw plane, zero outside.
template <int M>
WINO_HD void load_input_tile(const float* plane, const WinoDims& d, int ty, int tx, float (&tile)[M + 2][M + 2]) {
  const int y0 = M * ty - d.ph, x0 = M * tx - d.pw;
  WINO_UNROLL
  for (int i = 0; i < M + 2; ++i)
    WINO_UNROLL
    for (int j = 0; j < M + 2; ++j) {
      const int y = y0 + i, x = x0 + j;
      tile[i][j] = y >= 0 && y < d.ih && x >= 0 && x < d.iw ? plane[y * d.iw + x] : 0.f;
    }
}

}  // namespace wino
