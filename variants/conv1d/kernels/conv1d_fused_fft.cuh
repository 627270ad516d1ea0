// conv1d, spectral overlap-discard fused into one kernel per pair of windows (seed 000, 4.2 with the DFT): two
// overlapping input windows of N samples are the real and imaginary parts of one complex sequence; it is
// transformed in registers and shared memory, multiplied by the filter's spectrum H (N-point DFT of h, made once
// in bind), transformed back, and the N - (M - 1) valid outputs of each window are written. Since h is real,
// conv(a + ib, h) = conv(a, h) + i conv(b, h): one complex transform serves two real windows, with no unpacking.
//
// The FFT is a Stockham autosort of radix-16 passes (the last one radix 2, 4 or 8), in place in shared memory:
// each thread reads its butterflies' points into registers, the block synchronises, each thread writes. The first
// forward pass reads the windows straight from global memory, the last forward pass multiplies by H before it
// writes, and the last inverse pass writes the outputs straight to global memory: the signal crosses shared
// memory 5 times for N = 4096 instead of 11. The inverse is conj(FFT(conj(X))) / N. Shared memory rows are
// padded by one element every 32 so that the strided writes of the early passes spread over the banks.
// Compile-time: N (power of two, >= 256), THREADS, M (filter length), RADIX (16 or 8: the largest pass radix),
// PERSISTENT (0 or 1).
#include "conv1d_common.cuh"

#define PADDED(i) ((i) + ((i) >> 5))
#define VALID (N - (M - 1))
#ifndef RADIX
#define RADIX 16
#endif

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ float2 cadd(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ float2 csub(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
__device__ __forceinline__ float2 times_minus_i(float2 a) { return make_float2(a.y, -a.x); }

__device__ __forceinline__ void dft2(float2& a, float2& b) {
  const float2 t = a;
  a = cadd(t, b);
  b = csub(t, b);
}

// Forward DFT of 4 points: X_k = sum_r a_r exp(-2 pi i r k / 4).
__device__ __forceinline__ void dft4(float2& a0, float2& a1, float2& a2, float2& a3) {
  dft2(a0, a2);  // a0 = a0 + a2, a2 = a0 - a2
  dft2(a1, a3);  // a1 = a1 + a3, a3 = a1 - a3
  a3 = times_minus_i(a3);
  dft2(a0, a1);  // X0, X2
  dft2(a2, a3);  // X1, X3
  const float2 x1 = a2, x2 = a1;
  a1 = x1;
  a2 = x2;
}

// exp(-2 pi i e / 16) for a compile-time e: the radix-16 butterfly's inner twiddles.
__device__ __forceinline__ float2 w16(int e) {
  const float c1 = 0.92387953251128674f, s1 = 0.38268343236508978f, r2 = 0.70710678118654752f;
  switch (e & 15) {
    case 0: return make_float2(1.0f, 0.0f);
    case 1: return make_float2(c1, -s1);
    case 2: return make_float2(r2, -r2);
    case 3: return make_float2(s1, -c1);
    case 4: return make_float2(0.0f, -1.0f);
    case 6: return make_float2(-r2, -r2);
    default: return make_float2(-c1, s1);  // 9, the only other product n2 * k1 of two digits below 4
  }
}

// 16 points as 4 x 4: DFT4 down the columns (n = 4 n1 + n2 over n1), twiddle by w16(n2 k1), DFT4 along the rows.
__device__ __forceinline__ void dft16(float2 (&v)[16]) {
#pragma unroll
  for (int n2 = 0; n2 < 4; ++n2) dft4(v[n2], v[4 + n2], v[8 + n2], v[12 + n2]);
  // now v[4 k1 + n2] holds column n2's output k1
#pragma unroll
  for (int k1 = 1; k1 < 4; ++k1)
#pragma unroll
    for (int n2 = 1; n2 < 4; ++n2) v[4 * k1 + n2] = cmul(v[4 * k1 + n2], w16(n2 * k1));
#pragma unroll
  for (int k1 = 0; k1 < 4; ++k1) dft4(v[4 * k1], v[4 * k1 + 1], v[4 * k1 + 2], v[4 * k1 + 3]);
  // v[4 k1 + k2] = X[k1 + 4 k2]: slot<16>() reads it in place, with no register-hungry transpose.
}

template <int R>
__device__ __forceinline__ void dft(float2 (&v)[R]) {
  if constexpr (R == 2) {
    dft2(v[0], v[1]);
  } else if constexpr (R == 4) {
    dft4(v[0], v[1], v[2], v[3]);
  } else if constexpr (R == 16) {
    dft16(v);
  } else {  // R == 8: two DFT4 of the even and odd points, joined with the twiddles exp(-2 pi i k / 8)
    dft4(v[0], v[2], v[4], v[6]);
    dft4(v[1], v[3], v[5], v[7]);
    const float c = 0.70710678118654752f;
    v[3] = cmul(v[3], make_float2(c, -c));
    v[5] = times_minus_i(v[5]);
    v[7] = cmul(v[7], make_float2(-c, -c));
#pragma unroll
    for (int k = 0; k < 4; ++k) dft2(v[2 * k], v[2 * k + 1]);  // v[2k] = X_k, v[2k + 1] = X_{k+4}
  }
}

// Where dft<R>() leaves output r: the butterflies write their results in place, in a permuted order.
template <int R>
__device__ constexpr int slot(int r) {
  return R == 16 ? 4 * (r % 4) + r / 4 : R == 8 ? (r < 4 ? 2 * r : 2 * (r - 4) + 1) : r;
}

// Where a pass reads its points and where it writes them.
enum Source { kWindows, kShared };
enum Sink { kToShared, kTimesSpectrum, kOutputs };

// The pass's view of the kernel's arguments.
struct Io {
  const float* __restrict__ x;
  const float2* spectrum;
  float* __restrict__ y;
  long long n, outputs, shift, out0, out1;
};

// One Stockham pass of radix R after NS points per group are done: butterfly j takes points j + r*N/R, twiddles
// them by w^r with w = exp(-2 pi i k / (NS R)), k = j mod NS (w from sincospif, its powers by repeated
// products: about r ulp), and writes them to (j - k) R + k + r NS.
template <int R, Source SRC>
__device__ __forceinline__ void read_points(float2 (&v)[R], int j, const float2* z, const Io& io) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int i = j + r * (N / R);
    v[r] = SRC == kWindows ? make_float2(load_or_zero(io.x, io.out0 + io.shift + i, io.n),
                                         load_or_zero(io.x, io.out1 + io.shift + i, io.n))
                           : z[PADDED(i)];
  }
}

template <int R, int NS, Sink DST>
__device__ __forceinline__ void finish_butterfly(float2 (&v)[R], int j, float2* z, const Io& io) {
  const int k = j & (NS - 1);
  if constexpr (NS > 1) {
    float2 w1;  // computed, not loaded: a read-only table load would be hoisted above the barriers
    sincospif(-2.0f * float(k) / float(NS * R), &w1.y, &w1.x);
    float2 w = w1;
#pragma unroll
    for (int r = 1; r < R; ++r) {
      v[r] = cmul(v[r], w);
      w = cmul(w, w1);
    }
  }
  dft<R>(v);
  const int base = (j - k) * R + k;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int f = base + r * NS;
    const float2 out = v[slot<R>(r)];
    if constexpr (DST == kToShared) {
      z[PADDED(f)] = out;
    } else if constexpr (DST == kTimesSpectrum) {  // the inverse's input: conj(Z H)
      const float2 t = cmul(out, io.spectrum[f]);  // a plain load stays below the barrier
      z[PADDED(f)] = make_float2(t.x, -t.y);
    } else if (f >= M - 1) {  // the result is conj(this) / N: window 0 in x, window 1 in -y
      const long long o = f - (M - 1);
      if (io.out0 + o < io.outputs) io.y[io.out0 + o] = out.x * (1.0f / N);
      if (io.out1 + o < io.outputs) io.y[io.out1 + o] = -out.y * (1.0f / N);
    }
  }
}

// One Stockham pass of radix R after NS points per group are done: butterfly j takes points j + r*N/R, twiddles
// them by w^r with w = exp(-2 pi i k / (NS R)), k = j mod NS (w from sincospif, its powers by repeated
// products: about r ulp), and writes them to (j - k) R + k + r NS. In place, so every thread reads all its
// butterflies' points before the barrier; the last pass writes only global memory and goes one butterfly at a
// time, holding fewer registers.
template <int R, int NS, Source SRC, Sink DST>
__device__ __forceinline__ void stockham_pass(float2* z, const Io& io) {
  constexpr int B = N / R, PER = (B + THREADS - 1) / THREADS;
  if constexpr (DST == kOutputs) {
#pragma unroll
    for (int p = 0; p < PER; ++p) {
      const int j = threadIdx.x + p * THREADS;
      if (B % THREADS != 0 && j >= B) continue;
      float2 v[R];
      read_points<R, SRC>(v, j, z, io);
      finish_butterfly<R, NS, DST>(v, j, z, io);
    }
  } else {
    float2 v[PER][R];
#pragma unroll
    for (int p = 0; p < PER; ++p) {
      const int j = threadIdx.x + p * THREADS;
      if (B % THREADS == 0 || j < B) read_points<R, SRC>(v[p], j, z, io);
    }
    if (SRC == kShared) __syncthreads();  // everyone has read before anyone overwrites
#pragma unroll
    for (int p = 0; p < PER; ++p) {
      const int j = threadIdx.x + p * THREADS;
      if (B % THREADS == 0 || j < B) finish_butterfly<R, NS, DST>(v[p], j, z, io);
    }
    __syncthreads();
  }
}

// The passes of one transform, from the group size NS on: radix 16 while it divides, then the rest.
template <int NS, Source FIRST_SRC, Sink LAST_DST>
__device__ __forceinline__ void fft_passes(float2* z, const Io& io) {
  if constexpr (NS < N) {
    constexpr int R = N / NS >= RADIX ? RADIX : N / NS;
    constexpr Source src = NS == 1 ? FIRST_SRC : kShared;
    constexpr Sink dst = NS * R == N ? LAST_DST : kToShared;
    stockham_pass<R, NS, src, dst>(z, io);
    fft_passes<NS * R, FIRST_SRC, LAST_DST>(z, io);
  }
}

// Pair i is windows 2i and 2i+1; window w covers inputs [w*VALID + shift, + N) and yields outputs
// [w*VALID, + VALID). shift = 0 (valid) or -(m-1) (full), as for the spatial overlap-discard.
// PERSISTENT: a grid of as many blocks as fit at once; block b takes the pairs b, b + gridDim.x, ...; before it transforms one pair it asks L2 to
// fetch the next pair's inputs, so that their DRAM reads overlap this pair's arithmetic (with one or two blocks
// per SM nothing else would overlap them). Otherwise one block per pair.
__device__ __forceinline__ void prefetch_inputs(const Io& io, long long pair) {
  const long long first = 2 * pair * VALID + io.shift, count = 2LL * VALID + (M - 1);
  for (long long i = threadIdx.x * 32LL; i < count; i += THREADS * 32LL) {
    const long long at = first + i;
    if (at >= 0 && at < io.n) asm volatile("prefetch.global.L2 [%0];" ::"l"(io.x + at));
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
conv1d_fused_fft(const float* __restrict__ x, const float2* spectrum, float* __restrict__ y, long long n,
                 long long outputs, long long shift, long long pairs) {
  extern __shared__ float2 z[];
#if PERSISTENT
  for (long long pair = blockIdx.x; pair < pairs; pair += gridDim.x) {
    if (pair + gridDim.x < pairs) prefetch_inputs(Io{x, spectrum, y, n, outputs, shift, 0, 0}, pair + gridDim.x);
#else
  {
    const long long pair = blockIdx.x;
#endif
    const long long out0 = 2 * pair * VALID;
    const Io io{x, spectrum, y, n, outputs, shift, out0, out0 + VALID};
    fft_passes<1, kWindows, kTimesSpectrum>(z, io);
    fft_passes<1, kShared, kOutputs>(z, io);
    __syncthreads();  // the next pair's first pass overwrites shared memory the last pass may still read
  }
}
