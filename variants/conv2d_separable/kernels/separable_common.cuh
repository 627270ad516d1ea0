// Device helpers shared by the conv2d_separable kernels (NVRTC includes it by name).
// out(i, j) = sum_m col(m) * t(i+m-R, j), t(i, j) = sum_n row(n) * in(i, j+n-R): a row pass of FW taps
// and a column pass of FW taps, zero outside the image, both filters in constant memory (an FMA operand).
// Compile-time: RADIUS, BLOCK_X, BLOCK_Y, PX (1, 2 or 4: outputs per thread along x, the vector width of
// shared-memory loads), PY (outputs per thread along y). A block's output tile is TW x TH.
#define FW (2 * RADIUS + 1)
#define THREADS (BLOCK_X * BLOCK_Y)
#define TW (BLOCK_X * PX)
#define TH (BLOCK_Y * PY)
// A row pass's tile starts LEAD columns left of the output tile, LEAD = RADIUS rounded up to a multiple of
// 4, so that its global loads are aligned float4s; output column c's first tap is tile column c + SKEW.
#define LEAD (((RADIUS + 3) / 4) * 4)
#define SKEW (LEAD - RADIUS)
// A thread's row-pass window: from its first output's tile column (aligned to PX) to its last tap, in
// whole PX-vectors; the tile's pitch covers the last thread's window (and the halo: TW + LEAD + RADIUS).
#define WIN (((SKEW + PX + 2 * RADIUS + PX - 1) / PX) * PX)
#define ROW_PITCH ((((TW - PX + WIN) + 3) / 4) * 4)

__constant__ float c_col[FW];
__constant__ float c_row[FW];

template <int N>
struct alignas(4 * N) Vec {
  float v[N];
};

// ROWS x PITCH floats of the row-major h x w array src from (y0, x0) into tile (row pitch PITCH), zero
// outside the array. x0 and PITCH are multiples of 4, so with w a multiple of 4 and src 16-byte aligned
// each group of four floats is one aligned float4, wholly inside a row or wholly outside it.
template <int ROWS, int PITCH>
__device__ __forceinline__ void load_tile(const float* __restrict__ src, float* tile, int y0, int x0, int h, int w,
                                          int tid) {
  static_assert(PITCH % 4 == 0, "tile pitch must be a multiple of 4");
  if (w % 4 == 0 && reinterpret_cast<unsigned long long>(src) % 16 == 0) {
    constexpr int VC = PITCH / 4;
#pragma unroll 4
    for (int idx = tid; idx < ROWS * VC; idx += THREADS) {
      const int r = idx / VC;
      const int k = idx - r * VC;
      const int y = y0 + r, x = x0 + 4 * k;
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (y >= 0 && y < h && x >= 0 && x < w) v = __ldg(reinterpret_cast<const float4*>(src + (long long)y * w + x));
      *reinterpret_cast<float4*>(tile + r * PITCH + 4 * k) = v;
    }
  } else {
#pragma unroll 4
    for (int idx = tid; idx < ROWS * PITCH; idx += THREADS) {
      const int r = idx / PITCH;
      const int c = idx - r * PITCH;
      const int y = y0 + r, x = x0 + c;
      tile[idx] = (y >= 0 && y < h && x >= 0 && x < w) ? __ldg(src + (long long)y * w + x) : 0.0f;
    }
  }
}

// Row pass of PX consecutive outputs: src points at the tile column of the first output's window (a multiple
// of PX), which is read with WIN / PX vector loads; acc[q] = sum_n row(n) * src[SKEW + q + n].
__device__ __forceinline__ void row_pass(const float* src, float (&acc)[PX]) {
  float win[WIN];
#pragma unroll
  for (int k = 0; k < WIN / PX; ++k) {
    const Vec<PX> t = *reinterpret_cast<const Vec<PX>*>(src + k * PX);
#pragma unroll
    for (int q = 0; q < PX; ++q) win[k * PX + q] = t.v[q];
  }
#pragma unroll
  for (int q = 0; q < PX; ++q) acc[q] = 0.0f;
#pragma unroll
  for (int n = 0; n < FW; ++n) {
    const float f = c_row[n];
#pragma unroll
    for (int q = 0; q < PX; ++q) acc[q] += f * win[SKEW + q + n];
  }
}

// Column pass of a PY x PX patch: src points at the first of the PY + 2R rows the patch reads (row pitch
// PITCH, column aligned to PX). Each row is one vector load and serves up to PY output rows:
// acc[j][q] = sum_m col(m) * src[(j + m) * PITCH + q].
template <int PITCH>
__device__ __forceinline__ void column_pass(const float* src, float (&acc)[PY][PX]) {
#pragma unroll
  for (int j = 0; j < PY; ++j)
#pragma unroll
    for (int q = 0; q < PX; ++q) acc[j][q] = 0.0f;
#pragma unroll
  for (int i = 0; i < PY + 2 * RADIUS; ++i) {
    const Vec<PX> t = *reinterpret_cast<const Vec<PX>*>(src + i * PITCH);
#pragma unroll
    for (int j = 0; j < PY; ++j) {
      const int m = i - j;  // the tap that row i meets for output row j
      if (m >= 0 && m < FW) {
        const float f = c_col[m];
#pragma unroll
        for (int q = 0; q < PX; ++q) acc[j][q] += f * t.v[q];
      }
    }
  }
}

// PX outputs of one row from column col0 on; the parts outside the image are dropped. vec: w and dst's
// base allow one aligned PX-vector store (col0 is a multiple of PX).
__device__ __forceinline__ void store_row(float* __restrict__ out, const float (&v)[PX], int row, int col0, int h,
                                          int w, bool vec) {
  if (row >= h) return;
  float* dst = out + (long long)row * w + col0;
  if (vec && col0 + PX <= w) {
    Vec<PX> t;
#pragma unroll
    for (int q = 0; q < PX; ++q) t.v[q] = v[q];
    *reinterpret_cast<Vec<PX>*>(dst) = t;
  } else {
#pragma unroll
    for (int q = 0; q < PX; ++q)
      if (col0 + q < w) dst[q] = v[q];
  }
}

__device__ __forceinline__ bool vector_stores(const float* out, int w) {
  return PX > 1 && w % PX == 0 && reinterpret_cast<unsigned long long>(out) % (4 * PX) == 0;
}
