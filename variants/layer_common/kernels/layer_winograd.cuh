// The transform kernels of the Winograd variants (layer_fwd.winograd, layer_bwd_data.winograd,
// layer_bwd_filter.winograd), F(m x m, 3x3) with m = TILE and t = m + 2; the t^2 GEMMs between them are
// cuBLAS's (strict fp32). Layouts, for a chunk of `images` images with T = images * tiles-per-image columns:
//   forward, backward-data:  U[t^2][co][ci] transformed filter, V[t^2][ci][T] transformed input tiles,
//                            M[t^2][co][T] = U V per transform point, out = the m x m blocks of A^T M A
//   backward-filter:         the whole batch at once, in NCH chunks of CHUNK images (TC columns each; images
//                            past N are zero tiles): V[t^2][NCH][ci][TC] from x, E[t^2][NCH][co][TC] from dy,
//                            partial sums M[t^2][NCH][co][ci] = E V^T (one batched GEMM of t^2 * NCH), then
//                            dw = G^T (M summed over the chunks in order) G
// Defines: the shape (N C H W K R S PAD_H PAD_W U V P Q), PASS (0 forward, 1 backward-data,
// 2 backward-filter), TILE (m: 2 or 4), THREADS, BIAS and ACT (forward: layer_epilogue.cuh), CHUNK
// (backward-filter).
#include "layer_epilogue.cuh"
#include "layer_winograd_tiles.cuh"

constexpr int kM = TILE, kT = TILE + 2, kPoints = kT * kT;
constexpr wino::WinoDims kDims = wino::dims(PASS, kM, C, H, W, K, PAD_H, PAD_W, P, Q);

#if PASS != 2
// U for every (co, ci): one thread each, consecutive threads along ci (the stores coalesce).
extern "C" __global__ void __launch_bounds__(THREADS)
winograd_filter(const float* __restrict__ filter, float* __restrict__ u) {
  const int e = blockIdx.x * THREADS + threadIdx.x;
  if (e >= kDims.co * kDims.ci) return;
  const int co = e / kDims.ci, ci = e % kDims.ci;
  float g[3][3], t[kT][kT];
#pragma unroll
  for (int i = 0; i < 3; ++i)
#pragma unroll
    for (int j = 0; j < 3; ++j) g[i][j] = __ldg(filter + wino::filter_index(PASS, kDims, co, ci, i, j));
  wino::filter_tile<kM>(g, t);
#pragma unroll
  for (int x = 0; x < kPoints; ++x) u[x * kDims.co * kDims.ci + e] = t[x / kT][x % kT];
}

// V for every (ci, column) of the chunk that starts at image `first`: consecutive threads along the
// columns (tiles), so the t^2 stores coalesce.
extern "C" __global__ void __launch_bounds__(THREADS)
winograd_input(const float* __restrict__ in, float* __restrict__ v, int first, int images) {
  const int columns = images * kDims.tiles();
  const int e = blockIdx.x * THREADS + threadIdx.x;
  if (e >= kDims.ci * columns) return;
  const int ci = e / columns, col = e % columns;
  const int image = first + col / kDims.tiles(), tile = col % kDims.tiles();
  float d[kT][kT], t[kT][kT];
  wino::load_input_tile<kM>(in + (size_t(image) * kDims.ci + ci) * kDims.ih * kDims.iw, kDims, tile / kDims.tw,
                            tile % kDims.tw, d);
  wino::input_tile<kM>(d, t);
#pragma unroll
  for (int x = 0; x < kPoints; ++x) v[(size_t(x) * kDims.ci + ci) * columns + col] = t[x / kT][x % kT];
}

// The m x m outputs of every (co, column): A^T M A, then the forward pass's epilogue; blocks that
// reach past the output's edge write only their inside part.
extern "C" __global__ void __launch_bounds__(THREADS)
winograd_output(const float* __restrict__ m, const float* __restrict__ bias, float* __restrict__ out, int first,
                int images) {
  const int columns = images * kDims.tiles();
  const int e = blockIdx.x * THREADS + threadIdx.x;
  if (e >= kDims.co * columns) return;
  const int co = e / columns, col = e % columns;
  const int image = first + col / kDims.tiles(), tile = col % kDims.tiles();
  float t[kT][kT], y[kM][kM];
#pragma unroll
  for (int x = 0; x < kPoints; ++x) t[x / kT][x % kT] = m[(size_t(x) * kDims.co + co) * columns + col];
  wino::output_tile<kM>(t, y);
  const int y0 = kM * (tile / kDims.tw), x0 = kM * (tile % kDims.tw);
  float* plane = out + (size_t(image) * kDims.co + co) * kDims.oh * kDims.ow;
#pragma unroll
  for (int i = 0; i < kM; ++i)
#pragma unroll
    for (int j = 0; j < kM; ++j) {
      if (y0 + i >= kDims.oh || x0 + j >= kDims.ow) continue;
      plane[(y0 + i) * kDims.ow + x0 + j] = layer_epilogue(bias, co, y[i][j]);
    }
}
#else
constexpr int kChunks = (N + CHUNK - 1) / CHUNK, kColumns = CHUNK * kDims.tiles();

// Column `col` of chunk `chunk`: its image (possibly past N: a zero tile) and tile.
__device__ __forceinline__ void chunk_column(int chunk, int col, int& image, int& ty, int& tx) {
  image = chunk * CHUNK + col / kDims.tiles();
  const int tile = col % kDims.tiles();
  ty = tile / kDims.tw, tx = tile % kDims.tw;
}

// V for every (chunk, ci, column): x's tiles transformed, consecutive threads along the columns.
extern "C" __global__ void __launch_bounds__(THREADS)
winograd_tiles(const float* __restrict__ x, float* __restrict__ v) {
  const int e = blockIdx.x * THREADS + threadIdx.x;
  if (e >= kChunks * kDims.ci * kColumns) return;
  const int col = e % kColumns, ci = e / kColumns % kDims.ci, chunk = e / (kColumns * kDims.ci);
  int image, ty, tx;
  chunk_column(chunk, col, image, ty, tx);
  float d[kT][kT] = {}, t[kT][kT];
  if (image < N)
    wino::load_input_tile<kM>(x + (size_t(image) * kDims.ci + ci) * kDims.ih * kDims.iw, kDims, ty, tx, d);
  wino::input_tile<kM>(d, t);
#pragma unroll
  for (int p = 0; p < kPoints; ++p) v[size_t(p * kChunks * kDims.ci) * kColumns + e] = t[p / kT][p % kT];
}

// E for every (chunk, co, column): dy's m x m blocks transformed.
extern "C" __global__ void __launch_bounds__(THREADS)
winograd_gradient(const float* __restrict__ dy, float* __restrict__ e_out) {
  const int e = blockIdx.x * THREADS + threadIdx.x;
  if (e >= kChunks * kDims.co * kColumns) return;
  const int col = e % kColumns, co = e / kColumns % kDims.co, chunk = e / (kColumns * kDims.co);
  int image, ty, tx;
  chunk_column(chunk, col, image, ty, tx);
  float g[kM][kM] = {}, t[kT][kT];
  if (image < N)
    wino::load_gradient_tile<kM>(dy + (size_t(image) * kDims.co + co) * kDims.oh * kDims.ow, kDims, ty, tx, g);
  wino::gradient_tile<kM>(g, t);
#pragma unroll
  for (int p = 0; p < kPoints; ++p) e_out[size_t(p * kChunks * kDims.co) * kColumns + e] = t[p / kT][p % kT];
}

// dw for every (co, ci): the chunks' partial M summed in chunk order (no atomics), then G^T M G.
extern "C" __global__ void __launch_bounds__(THREADS)
winograd_filter_gradient(const float* __restrict__ m, float* __restrict__ dw) {
  const int e = blockIdx.x * THREADS + threadIdx.x;
  if (e >= kDims.co * kDims.ci) return;
  float t[kT][kT], g[3][3];
#pragma unroll
  for (int p = 0; p < kPoints; ++p) {
    float sum = 0.f;
    for (int chunk = 0; chunk < kChunks; ++chunk) sum += m[(p * kChunks + chunk) * kDims.co * kDims.ci + e];
    t[p / kT][p % kT] = sum;
  }
  wino::filter_gradient_tile<kM>(t, g);
#pragma unroll
  for (int i = 0; i < 3; ++i)
#pragma unroll
    for (int j = 0; j < 3; ++j) dw[e * 9 + i * 3 + j] = g[i][j];
}
#endif
