// Winograd F(2x2, 3x3) for the 3x3 stride-1 layers: each 2x2 block of outputs is computed from a 4x4 input
// tile as A^T [ (G g G^T) .* (B^T d B) ] A, summed over the input channels in the transformed domain, so 16
// multiplies per channel give 4 outputs where the direct sum takes 36. Shared by the NVRTC kernels
// (layer_winograd.cuh) and the CPU test, which runs the whole method through these functions in fp32
// against the float64 references.
//
// Backward-data at stride 1 is the forward correlation of dy with the filter rotated by 180 degrees and its
// k and c swapped, padded by 2 - pad: WinoDims maps both passes onto one "input -> output" convolution.
// Backward-filter is the same trilinear form differentiated by the filter instead (F(3x3, 2x2)): with each
// 2x2 block of dy as the "filter" and the forward pass's input tiles,
//   dw = G^T [ sum over tiles and images of (A dy A^T) .* (B^T d B) ] G.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WINO_HD __host__ __device__ __forceinline__
#else
#define WINO_HD inline
#endif

namespace wino {

// The convolution in the transformed form: ci input channels of ih x iw, co output channels of oh x ow,
// padding ph, pw, and th x tw tiles of 2x2 outputs per image. Lowercase members: the kernel's -D defines
// (C, H, K, ...) would replace uppercase names.
struct WinoDims {
  int ci, co, ih, iw, oh, ow, ph, pw, th, tw;
  WINO_HD constexpr int tiles() const { return th * tw; }
};

// pass 0 (forward): x (c maps of h x w) -> y (k maps of p x q), padding pad. pass 1 (backward-data):
// dy (k maps of p x q) -> dx (c maps of h x w), padding 2 - pad (3x3 filter, stride 1). pass 2
// (backward-filter): the forward pass's tiles, x and dy in, dw out.
WINO_HD constexpr WinoDims dims(int pass, int c, int h, int w, int k, int pad_h, int pad_w, int p, int q) {
  return pass != 1 ? WinoDims{c, k, h, w, p, q, pad_h, pad_w, (p + 1) / 2, (q + 1) / 2}
                   : WinoDims{k, c, p, q, h, w, 2 - pad_h, 2 - pad_w, (h + 1) / 2, (w + 1) / 2};
}

// Tap (i, j) of the 3x3 filter that links input channel ci to output channel co, from the k x c x 3 x 3
// filter tensor: as stored (forward, backward-filter), or rotated with k and c swapped (backward-data).
WINO_HD int filter_index(int pass, const WinoDims& d, int co, int ci, int i, int j) {
  return pass != 1 ? ((co * d.ci + ci) * 3 + i) * 3 + j : ((ci * d.co + co) * 3 + (2 - i)) * 3 + (2 - j);
}

// u = G g G^T, G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
WINO_HD void filter_tile(const float (&g)[3][3], float (&u)[4][4]) {
  float t[4][3];  // G g
  for (int j = 0; j < 3; ++j) {
    t[0][j] = g[0][j];
    t[1][j] = 0.5f * (g[0][j] + g[1][j] + g[2][j]);
    t[2][j] = 0.5f * (g[0][j] - g[1][j] + g[2][j]);
    t[3][j] = g[2][j];
  }
  for (int i = 0; i < 4; ++i) {
    u[i][0] = t[i][0];
    u[i][1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
    u[i][2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
    u[i][3] = t[i][2];
  }
}

// v = B^T d B, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
WINO_HD void input_tile(const float (&d)[4][4], float (&v)[4][4]) {
  float t[4][4];  // B^T d
  for (int j = 0; j < 4; ++j) {
    t[0][j] = d[0][j] - d[2][j];
    t[1][j] = d[1][j] + d[2][j];
    t[2][j] = d[2][j] - d[1][j];
    t[3][j] = d[1][j] - d[3][j];
  }
  for (int i = 0; i < 4; ++i) {
    v[i][0] = t[i][0] - t[i][2];
    v[i][1] = t[i][1] + t[i][2];
    v[i][2] = t[i][2] - t[i][1];
    v[i][3] = t[i][1] - t[i][3];
  }
}

// y = A^T m A, A^T = [1 1 1 0; 0 1 -1 -1].
WINO_HD void output_tile(const float (&m)[4][4], float (&y)[2][2]) {
  float t[2][4];  // A^T m
  for (int j = 0; j < 4; ++j) {
    t[0][j] = m[0][j] + m[1][j] + m[2][j];
    t[1][j] = m[1][j] - m[2][j] - m[3][j];
  }
  for (int i = 0; i < 2; ++i) {
    y[i][0] = t[i][0] + t[i][1] + t[i][2];
    y[i][1] = t[i][1] - t[i][2] - t[i][3];
  }
}

// Backward-filter: e = A g A^T for a 2x2 block g of dy, A = [1 0; 1 1; 1 -1; 0 -1].
WINO_HD void gradient_tile(const float (&g)[2][2], float (&e)[4][4]) {
  float t[4][2];  // A g
  for (int j = 0; j < 2; ++j) {
    t[0][j] = g[0][j];
    t[1][j] = g[0][j] + g[1][j];
    t[2][j] = g[0][j] - g[1][j];
    t[3][j] = -g[1][j];
  }
  for (int i = 0; i < 4; ++i) {
    e[i][0] = t[i][0];
    e[i][1] = t[i][0] + t[i][1];
    e[i][2] = t[i][0] - t[i][1];
    e[i][3] = -t[i][1];
  }
}

// Backward-filter: dw = G^T m G, G^T = [1 1/2 1/2 0; 0 1/2 -1/2 0; 0 1/2 1/2 1].
WINO_HD void filter_gradient_tile(const float (&m)[4][4], float (&dw)[3][3]) {
  float t[3][4];  // G^T m
  for (int j = 0; j < 4; ++j) {
    t[0][j] = m[0][j] + 0.5f * (m[1][j] + m[2][j]);
    t[1][j] = 0.5f * (m[1][j] - m[2][j]);
    t[2][j] = 0.5f * (m[1][j] + m[2][j]) + m[3][j];
  }
  for (int i = 0; i < 3; ++i) {
    dw[i][0] = t[i][0] + 0.5f * (t[i][1] + t[i][2]);
    dw[i][1] = 0.5f * (t[i][1] - t[i][2]);
    dw[i][2] = 0.5f * (t[i][1] + t[i][2]) + t[i][3];
  }
}

// The 2x2 block of tile (ty, tx) from one oh x ow plane of dy, zero outside.
WINO_HD void load_gradient_tile(const float* plane, const WinoDims& d, int ty, int tx, float (&g)[2][2]) {
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      const int y = 2 * ty + i, x = 2 * tx + j;
      g[i][j] = y < d.oh && x < d.ow ? plane[y * d.ow + x] : 0.f;
    }
}

// The 4x4 input tile of tile (ty, tx) from one input channel's ih x iw plane, zero outside.
WINO_HD void load_input_tile(const float* plane, const WinoDims& d, int ty, int tx, float (&tile)[4][4]) {
  const int y0 = 2 * ty - d.ph, x0 = 2 * tx - d.pw;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int y = y0 + i, x = x0 + j;
      tile[i][j] = y >= 0 && y < d.ih && x >= 0 && x < d.iw ? plane[y * d.iw + x] : 0.f;
    }
}

}  // namespace wino
