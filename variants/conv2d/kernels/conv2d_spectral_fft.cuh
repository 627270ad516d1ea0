// The line FFTs and tile geometry of the spectral conv2d kernels (conv2d_spectral_tiled, conv2d_spectral_rows).
//
// An N-point line FFT is done by G = N / P threads as P x G (Cooley-Tukey, four-step): each thread
// transforms the P elements n1 + G*n2 in registers, multiplies by the twiddles W_N^(n1*k2), and after
// an exchange through shared memory each thread does the G-point transforms of P / G of the k2, so
// that X[k2 + P*k1] lands in natural order: no digit reversal anywhere, and the spectrum is stored
// naturally. The exchange is XOR-swizzled so that neither side of it has bank conflicts.
// Two neighbouring tiles along x travel as the real and imaginary parts of one complex line: the filter
// is real, so their results stay apart in the real and imaginary parts.
// Compile-time: RADIUS, N (power of 2), P (points per thread, P >= N / P).
#pragma once
#define G (N / P)
#define V (N - 2 * RADIUS)
#define PITCH (N + 8)                 // float2s per shared row: four rows of a warp's row pass span all banks
// Along x a tile writes VX <= V outputs, VX a multiple of 8, from column X_START + t * VX, X_START in (-8, 0] and
// = RADIUS (mod 8): every tile's first input column is then a multiple of 8, so the 8 threads of a line
// read and write whole 32-byte sectors (measured: r = 15, V = 98 unaligned ran 11% slower than r = 16).
#define VX (V >= 8 ? V / 8 * 8 : V)
#define X_START (V >= 8 && RADIUS % 8 != 0 ? RADIUS % 8 - 8 : 0)

static_assert(N % P == 0 && P >= G && (G & (G - 1)) == 0, "N = P * G with P >= G, powers of two");
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
        const float2 d = csub(a, b);  // times W: exactly, by a swap, where W is 1 or -i (+i inverse)
        v[start + j + half] = angle == 0 ? d : angle == 4 ? (Inverse ? make_float2(-d.y, d.x) : make_float2(d.y, -d.x))
                                                          : cmul(d, w);
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


// The twiddles W_N^(n1 k2) at [k2 * G + n1], written by the block's `threads` threads (the caller syncs).
__device__ __forceinline__ void init_twiddles(float2* twiddle, int tid, int threads) {
  for (int k = tid; k < N; k += threads) {
    float s, c;
    sincospif(-2.0f * float((k % G) * (k / G)) / float(N), &s, &c);
    twiddle[k] = make_float2(c, s);
  }
}

// A block's two tiles along x of a w-wide image: tile a's first input column x0 (its outputs from x0 + r),
// and whether tile b, VX columns right of a, holds any of the image.
struct TilePair {
  int x0;
  bool has_b;
};
__device__ __forceinline__ TilePair tile_pair(int w) {
  const int tiles_x = (w - X_START + VX - 1) / VX;
  return {X_START + 2 * int(blockIdx.x) * VX - RADIUS, 2 * int(blockIdx.x) + 1 < tiles_x};
}
