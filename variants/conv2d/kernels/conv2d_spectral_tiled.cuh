// conv2d past the direct floor for large filters: 2D overlap-save in one kernel. Each block loads two
// neighbouring N x N input tiles (halo included) as the real and imaginary parts of one complex tile,
// transforms it in shared memory (row FFTs, then column FFTs), multiplies by the filter's spectrum
// (computed once on the host in bind, scaled by 1/N^2), transforms back and writes the V x V valid
// outputs of each tile, V = N - 2 RADIUS. The filter is real, so the two tiles' results stay apart in the
// real and imaginary parts. Per output this costs O(log N) flops instead of the direct (2r+1)^2.
//
// An N-point line FFT is done by G = N / P threads as P x G (Cooley-Tukey, four-step): each thread
// transforms the P elements n1 + G*n2 in registers, multiplies by the twiddles W_N^(n1*k2), and after
// an exchange through shared memory each thread does the G-point transforms of P / G of the k2, so
// that X[k2 + P*k1] lands in natural order: no digit reversal anywhere, and the spectrum is stored
// naturally. The exchange is XOR-swizzled so that neither side of it has bank conflicts.
// Compile-time: RADIUS, N (power of 2), P (points per thread, P >= N / P), THREADS.
#define G (N / P)
#define V (N - 2 * RADIUS)
#define PITCH (N + 8)                 // float2s per shared row: four rows of a warp's row pass span all banks
#define LINES_PER_CHUNK (THREADS / G)  // lines transformed at once by the block
// Along x a tile writes VX <= V outputs, VX a multiple of 8, from column X_START + t * VX, X_START in (-8, 0] and
// = RADIUS (mod 8): every tile's first input column is then a multiple of 8, so the 8 threads of a line
// read and write whole 32-byte sectors (measured: r = 15, V = 98 unaligned ran 11% slower than r = 16).
#define VX (V >= 8 ? V / 8 * 8 : V)
#define X_START (V >= 8 && RADIUS % 8 != 0 ? RADIUS % 8 - 8 : 0)

static_assert(N % P == 0 && P >= G && (G & (G - 1)) == 0, "N = P * G with P >= G, powers of two");
static_assert(THREADS % G == 0 && N % LINES_PER_CHUNK == 0, "the block transforms whole chunks of lines");
static_assert(V >= 1, "the tile must be wider than the filter");

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ float2 cadd(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ float2 csub(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
__device__ __forceinline__ float2 conj_if(float2 a, bool c) { return c ? make_float2(a.x, -a.y) : a; }

// cos(pi * k / 8) for k in [0, 4], then any k by symmetry: with `a` a compile-time constant after
// unrolling this folds to a literal (no array: an indexed local array would live in local memory).
__device__ __forceinline__ constexpr float cos_pi8_quadrant(int k) {
  return k == 0 ? 1.0f : k == 1 ? 0.92387953251128674f : k == 2 ? 0.70710678118654752f : k == 3 ? 0.38268343236508977f : 0.0f;
}
__device__ __forceinline__ constexpr float cos_pi8(int a) {
  a = ((a % 16) + 16) % 16;
  return a <= 4 ? cos_pi8_quadrant(a) : a <= 8 ? -cos_pi8_quadrant(8 - a) : a <= 12 ? -cos_pi8_quadrant(a - 8)
                                                                                      : cos_pi8_quadrant(16 - a);
}

template <int M>
__device__ __forceinline__ constexpr int bit_reverse(int i) {
  int r = 0;
#pragma unroll
  for (int bit = 1; bit < M; bit <<= 1, i >>= 1) r = (r << 1) | (i & 1);
  return r;
}

// In-register M-point DFT (M <= 16), radix-2 decimation in frequency; X[k] ends up in v[bit_reverse(k)].
// Forward: exp(-2 pi i nk / M); inverse: exp(+2 pi i nk / M), unscaled.
template <int M, bool Inverse>
__device__ __forceinline__ void dft_registers(float2 (&v)[M]) {
#pragma unroll
  for (int half = M / 2; half >= 1; half /= 2) {
#pragma unroll
    for (int start = 0; start < M; start += 2 * half) {
#pragma unroll
      for (int j = 0; j < half; ++j) {
        const float2 a = v[start + j], b = v[start + j + half];
        v[start + j] = cadd(a, b);
        const int angle = j * (16 / (2 * half));  // W_(2 half)^j = exp(-2 pi i angle / 16); sin = cos shifted by 4
        const float2 w = make_float2(cos_pi8(angle), Inverse ? cos_pi8(angle - 4) : -cos_pi8(angle - 4));
        v[start + j + half] = angle == 0 ? csub(a, b) : cmul(csub(a, b), w);
      }
    }
  }
}

// Where thread n1's k2-th value waits between the two steps of a line FFT: consecutive for fixed k2
// (the writes) and on distinct banks for fixed n1 across the G threads (the reads).
__device__ __forceinline__ int swizzled(int n1, int k2) { return (n1 ^ (k2 % G)) + G * k2; }

// One N-point FFT of a line by its G threads. Thread n1 holds x[m] = line[n1 + G m] before and after
// (the second step's outputs X[k2 + P k1], k2 = n1 + G j, are exactly the positions n1 + G (j + P/G k1)),
// so consecutive transforms of a line chain in registers. The line's storage (`base`, `step` apart) is the
// exchange buffer: `sync` must order the G threads (__syncwarp for rows, __syncthreads for columns) and
// be reached by every thread, `active` or not.
template <bool Inverse, typename Sync>
__device__ __forceinline__ void fft_line(float2 (&x)[P], float2* base, int step, int n1, bool active,
                                         const float2* twiddle, Sync sync) {
  if (active) dft_registers<P, Inverse>(x);
  sync();  // the line's earlier readers are done with its storage
  if (active) {
#pragma unroll
    for (int k2 = 0; k2 < P; ++k2)
      base[swizzled(n1, k2) * step] = cmul(x[bit_reverse<P>(k2)], conj_if(twiddle[k2 * G + n1], Inverse));
  }
  sync();
  if (active) {
#pragma unroll
    for (int j = 0; j < P / G; ++j) {
      float2 u[G];
#pragma unroll
      for (int m = 0; m < G; ++m) u[m] = base[swizzled(m, n1 + G * j) * step];
      dft_registers<G, Inverse>(u);
#pragma unroll
      for (int k1 = 0; k1 < G; ++k1) x[j + (P / G) * k1] = u[bit_reverse<G>(k1)];
    }
  }
}

extern "C" __global__ void __launch_bounds__(THREADS) conv2d_spectral_kernel(const float* __restrict__ in,
                                                                             const float2* __restrict__ spectrum,
                                                                             float* __restrict__ out, int h, int w) {
  extern __shared__ float2 smem[];
  float2* tile = smem;                // N rows of PITCH
  float2* twiddle = smem + N * PITCH;  // [k2 * G + n1] = exp(-2 pi i n1 k2 / N): conflict-free in the row pass
  const int tid = threadIdx.x;
  for (int k = tid; k < N; k += THREADS) {
    float s, c;
    sincospif(-2.0f * float((k % G) * (k / G)) / float(N), &s, &c);
    twiddle[k] = make_float2(c, s);
  }
  __syncthreads();
  const auto warp_sync = [] { __syncwarp(); };
  const auto block_sync = [] { __syncthreads(); };
  // Tile a's outputs start at (x0 + RADIUS, y0 + RADIUS); tile b is a's right neighbour.
  const int tiles_x = (w - X_START + VX - 1) / VX;
  const bool has_b = 2 * int(blockIdx.x) + 1 < tiles_x;
  const int x0 = X_START + 2 * int(blockIdx.x) * VX - RADIUS, y0 = int(blockIdx.y) * V - RADIUS;
  // Rows: a line's G threads are neighbours in one warp; columns: a warp spans 32 columns.
  const int row_n1 = tid % G, row_lane = tid / G;
  const int col_n1 = tid / LINES_PER_CHUNK, col_lane = tid % LINES_PER_CHUNK;
  float2 x[P];

  // Forward row FFTs, straight from the image: tile a in the real parts, tile b in the imaginary parts.
  for (int chunk = 0; chunk < N; chunk += LINES_PER_CHUNK) {
    const int row = chunk + row_lane, y = y0 + row;
    const float* src = in + (long long)y * w;
    const bool in_rows = y >= 0 && y < h;
#pragma unroll
    for (int m = 0; m < P; ++m) {
      const int xa = x0 + row_n1 + G * m, xb = xa + VX;
      x[m] = make_float2(in_rows && xa >= 0 && xa < w ? __ldg(src + xa) : 0.0f,
                         in_rows && has_b && xb >= 0 && xb < w ? __ldg(src + xb) : 0.0f);
    }
    float2* base = tile + row * PITCH;
    fft_line<false>(x, base, 1, row_n1, true, twiddle, warp_sync);
#pragma unroll
    for (int m = 0; m < P; ++m) base[row_n1 + G * m] = x[m];
  }
  __syncthreads();
  // Column FFTs, the filter's spectrum, inverse column FFTs: one chain in registers per column.
  for (int chunk = 0; chunk < N; chunk += LINES_PER_CHUNK) {
    const int col = chunk + col_lane;
    float2* base = tile + col;
#pragma unroll
    for (int m = 0; m < P; ++m) x[m] = base[(col_n1 + G * m) * PITCH];
    fft_line<false>(x, base, PITCH, col_n1, true, twiddle, block_sync);
#pragma unroll
    for (int m = 0; m < P; ++m) x[m] = cmul(x[m], __ldg(spectrum + (col_n1 + G * m) * N + col));
    fft_line<true>(x, base, PITCH, col_n1, true, twiddle, block_sync);
    __syncthreads();  // the exchange's readers are done before the results overwrite it
#pragma unroll
    for (int m = 0; m < P; ++m) base[(col_n1 + G * m) * PITCH] = x[m];
  }
  __syncthreads();
  // Inverse row FFTs of the rows that hold valid outputs, straight to the output.
  for (int chunk = RADIUS; chunk < RADIUS + V; chunk += LINES_PER_CHUNK) {
    const int row = chunk + row_lane, y = y0 + row;
    const bool active = row < RADIUS + V;
    float2* base = tile + row * PITCH;
    if (active) {
#pragma unroll
      for (int m = 0; m < P; ++m) x[m] = base[row_n1 + G * m];
    }
    fft_line<true>(x, base, 1, row_n1, active, twiddle, warp_sync);
    if (!active || y >= h) continue;
    float* dst = out + (long long)y * w;
#pragma unroll
    for (int m = 0; m < P; ++m) {
      const int k = row_n1 + G * m, xa = x0 + k, xb = xa + VX;
      if (k < RADIUS || k >= RADIUS + VX) continue;
      if (xa >= 0 && xa < w) dst[xa] = x[m].x;
      if (has_b && xb < w) dst[xb] = x[m].y;
    }
  }
}
