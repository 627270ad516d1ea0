// conv2d, beyond the seeds: a shared-memory input tile (halo included) loaded cooperatively and
// coalesced, and register blocking: each thread computes a PY x PX patch of outputs. A window of PX + 2r
// inputs, read with one vector load per PX floats, serves PX * FW taps per filter row, and each input row
// read from shared memory serves up to PY output rows, so shared-memory traffic per FMA falls as the
// patch grows while the filter stays in constant memory (an FMA operand, no load at all).
// Compile-time: RADIUS, BLOCK_X, BLOCK_Y, PX (1, 2 or 4), PY, FILTER_ROWS (loop order), UNROLL_ROWS.
#define FW (2 * RADIUS + 1)
#define TX (BLOCK_X * PX)
#define TY (BLOCK_Y * PY)
#define IN_Y (TY + 2 * RADIUS)
#define WIN (((PX + 2 * RADIUS + PX - 1) / PX) * PX)
#define PITCH ((((TX - PX + WIN) + 3) / 4) * 4)
__constant__ float c_filter[FW * FW];

template <int N>
struct alignas(4 * N) Vec {
  float v[N];
};

// WIN consecutive floats of a shared-memory row into registers, PX floats per (vector) load.
__device__ __forceinline__ void load_window(const float* src, float (&win)[WIN]) {
#pragma unroll
  for (int k = 0; k < WIN / PX; ++k) {
    const Vec<PX> t = *reinterpret_cast<const Vec<PX>*>(src + k * PX);
#pragma unroll
    for (int q = 0; q < PX; ++q) win[k * PX + q] = t.v[q];
  }
}

// The tile with its halo, one aligned 16-byte load per four floats where the image's rows allow it (w a
// multiple of 4, the input 16-byte aligned): profiled, the scalar load loop (index arithmetic and bounds checks per float) was a
// large share of the issue slots of this issue-bound kernel at r = 3..8. The loads start RADIUS rounded
// up to a multiple of 4 left of the tile, so every load is aligned; the SKEW floats before the tile's
// first column are dropped.
#define LEAD (((RADIUS + 3) / 4) * 4)
#define SKEW (LEAD - RADIUS)
#define VEC_COLS ((PITCH + SKEW + 3) / 4)
__device__ __forceinline__ void load_tile_vec4(const float* __restrict__ in, float* tile, int x0, int y0, int h, int w,
                                               int tid) {
  const int xa = x0 - SKEW;  // a multiple of 4: x0 + RADIUS = blockIdx.x * TX is one (TX % 4 == 0)
#pragma unroll 2
  for (int idx = tid; idx < IN_Y * VEC_COLS; idx += BLOCK_X * BLOCK_Y) {
    const int r = idx / VEC_COLS;
    const int k = idx - r * VEC_COLS;
    const int y = y0 + r, x = xa + 4 * k;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (y >= 0 && y < h) {
      const float* row = in + (long long)y * w;
      if (x >= 0 && x + 3 < w) {
        v = __ldg(reinterpret_cast<const float4*>(row + x));
      } else {
        v.x = (x >= 0 && x < w) ? __ldg(row + x) : 0.0f;
        v.y = (x + 1 >= 0 && x + 1 < w) ? __ldg(row + x + 1) : 0.0f;
        v.z = (x + 2 >= 0 && x + 2 < w) ? __ldg(row + x + 2) : 0.0f;
        v.w = (x + 3 >= 0 && x + 3 < w) ? __ldg(row + x + 3) : 0.0f;
      }
    }
    float* dst = tile + r * PITCH + 4 * k - SKEW;
    const float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (4 * k + q - SKEW >= 0 && 4 * k + q - SKEW < PITCH) dst[q] = e[q];
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
conv2d_kernel(const float* __restrict__ in, const float* __restrict__, float* __restrict__ out, int h, int w) {
  in += (long long)blockIdx.z * h * w;  // image blockIdx.z of a batch (grid.z = b)
  out += (long long)blockIdx.z * h * w;
  extern __shared__ Vec<4> smem_raw[];  // 16-byte aligned
  float* tile = reinterpret_cast<float*>(smem_raw);
  const int x0 = blockIdx.x * TX - RADIUS;
  const int y0 = blockIdx.y * TY - RADIUS;
  const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
  if (TX % 4 == 0 && w % 4 == 0 && reinterpret_cast<unsigned long long>(in) % 16 == 0) {
    load_tile_vec4(in, tile, x0, y0, h, w, tid);
  } else {
#pragma unroll 4
    for (int idx = tid; idx < IN_Y * PITCH; idx += BLOCK_X * BLOCK_Y) {
      const int r = idx / PITCH;
      const int c = idx - r * PITCH;
      const int y = y0 + r, x = x0 + c;
      tile[idx] = (y >= 0 && y < h && x >= 0 && x < w) ? __ldg(in + (long long)y * w + x) : 0.0f;
    }
  }
  __syncthreads();

  float acc[PY][PX];
#pragma unroll
  for (int j = 0; j < PY; ++j)
#pragma unroll
    for (int q = 0; q < PX; ++q) acc[j][q] = 0.0f;

  const int sx = threadIdx.x * PX;
  const int sy = threadIdx.y * PY;
#if FILTER_ROWS
  // Large filters: filter rows in an outer run-time loop, the row's taps held in registers; each output
  // row of the patch reads its own input window. More shared loads, but the code stays small and every
  // FMA takes its tap from a register.
#pragma unroll 1
  for (int m = 0; m < FW; ++m) {
    float f[FW];
#pragma unroll
    for (int n = 0; n < FW; ++n) f[n] = c_filter[m * FW + n];
#pragma unroll
    for (int j = 0; j < PY; ++j) {
      float win[WIN];
      load_window(tile + (sy + j + m) * PITCH + sx, win);
#pragma unroll
      for (int n = 0; n < FW; ++n)
#pragma unroll
        for (int q = 0; q < PX; ++q) acc[j][q] += f[n] * win[q + n];
    }
  }
#else
  // Input rows in the outer loop: each row read from shared memory serves up to PY output rows.
#if UNROLL_ROWS
#pragma unroll
#else
#pragma unroll 1
#endif
  for (int i = 0; i < PY + 2 * RADIUS; ++i) {  // input rows of this thread's patch
    float win[WIN];
    load_window(tile + (sy + i) * PITCH + sx, win);
#pragma unroll
    for (int j = 0; j < PY; ++j) {
      const int m = i - j;  // the filter row that input row i meets for output row j of the patch
      if (m >= 0 && m < FW) {
#pragma unroll
        for (int n = 0; n < FW; ++n) {
          const float f = c_filter[m * FW + n];
#pragma unroll
          for (int q = 0; q < PX; ++q) acc[j][q] += f * win[q + n];
        }
      }
    }
  }
#endif

  const int col0 = blockIdx.x * TX + sx;
#pragma unroll
  for (int j = 0; j < PY; ++j) {
    const int row = blockIdx.y * TY + sy + j;
    if (row >= h) break;
    float* dst = out + (long long)row * w + col0;
    if (PX > 1 && col0 + PX <= w && (w % PX) == 0) {
      Vec<PX> t;
#pragma unroll
      for (int q = 0; q < PX; ++q) t.v[q] = acc[j][q];
      *reinterpret_cast<Vec<PX>*>(dst) = t;  // aligned: col0 and w are multiples of PX
    } else {
#pragma unroll
      for (int q = 0; q < PX; ++q)
        if (col0 + q < w) dst[q] = acc[j][q];
    }
  }
}
