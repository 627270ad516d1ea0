// conv1d, spectral overlap-discard fused into one kernel per pair of blocks (seed 000, 4.2 with the DFT): load
// two overlapping input windows of N samples as the real and imaginary parts of one complex sequence, FFT it in
// shared memory, multiply by the filter's spectrum H (N-point DFT of h, computed once in bind), inverse FFT,
// and write the N - (M - 1) valid outputs of each window. Since h is real, conv(a + ib, h) = conv(a, h) +
// i conv(b, h): one complex transform serves two real blocks, with no unpacking step.
//
// The FFT is a Stockham autosort (radix 8, then one radix-2 or radix-4 pass), in place in shared memory: each
// thread reads its butterflies' inputs into registers, the block synchronises, then each thread writes.
// The inverse is conj(FFT(conj(X))) / N. Shared memory rows are padded by one element every 32 so that the
// strided writes of the early passes spread over the banks.
// Compile-time: N (power of two), THREADS, M (filter length).
#include "conv1d_common.cuh"

#define PADDED(i) ((i) + ((i) >> 5))
#define VALID (N - (M - 1))

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

template <int R>
__device__ __forceinline__ void dft(float2 (&v)[R]) {
  if constexpr (R == 2) {
    dft2(v[0], v[1]);
  } else if constexpr (R == 4) {
    dft4(v[0], v[1], v[2], v[3]);
  } else {  // R == 8: two DFT4 of the even and odd points, joined with the twiddles exp(-2 pi i k / 8)
    dft4(v[0], v[2], v[4], v[6]);
    dft4(v[1], v[3], v[5], v[7]);
    const float c = 0.70710678118654752f;
    v[3] = cmul(v[3], make_float2(c, -c));
    v[5] = times_minus_i(v[5]);
    v[7] = cmul(v[7], make_float2(-c, -c));
    float2 out[8];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      out[k] = cadd(v[2 * k], v[2 * k + 1]);
      out[k + 4] = csub(v[2 * k], v[2 * k + 1]);
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = out[k];
  }
}

// One Stockham pass of radix R after NS points per group are done: butterfly j takes points j + r*N/R, twiddles
// them by exp(-2 pi i r k / (NS R)) with k = j mod NS (tw[t] = exp(-2 pi i t / N)), and writes them to
// (j - k) R + k + r NS.
template <int R, int NS>
__device__ __forceinline__ void stockham_pass(float2* s, const float2* __restrict__ tw) {
  constexpr int B = N / R, PER = (B + THREADS - 1) / THREADS;
  float2 v[PER][R];
#pragma unroll
  for (int p = 0; p < PER; ++p) {
    const int j = threadIdx.x + p * THREADS;
    if (B % THREADS == 0 || j < B) {
#pragma unroll
      for (int r = 0; r < R; ++r) v[p][r] = s[PADDED(j + r * B)];
    }
  }
  __syncthreads();
#pragma unroll
  for (int p = 0; p < PER; ++p) {
    const int j = threadIdx.x + p * THREADS;
    if (B % THREADS != 0 && j >= B) continue;
    const int k = j & (NS - 1);
    if constexpr (NS > 1) {
#pragma unroll
      for (int r = 1; r < R; ++r) v[p][r] = cmul(v[p][r], __ldg(tw + r * k * (N / (NS * R))));
    }
    dft<R>(v[p]);
    const int base = (j - k) * R + k;
#pragma unroll
    for (int r = 0; r < R; ++r) s[PADDED(base + r * NS)] = v[p][r];
  }
  __syncthreads();
}

template <int NS>
__device__ __forceinline__ void fft_in_shared(float2* s, const float2* __restrict__ tw) {
  if constexpr (NS < N) {
    constexpr int R = N / NS >= 8 ? 8 : N / NS;
    stockham_pass<R, NS>(s, tw);
    fft_in_shared<NS * R>(s, tw);
  }
}

// Block i handles windows 2i and 2i+1; window w covers inputs [w*VALID + shift, + N) and yields outputs
// [w*VALID, + VALID). shift = 0 (valid) or -(m-1) (full), as for the spatial overlap-discard.
extern "C" __global__ void __launch_bounds__(THREADS)
conv1d_fused_fft(const float* __restrict__ x, const float2* __restrict__ spectrum, const float2* __restrict__ tw,
                 float* __restrict__ y, long long n, long long outputs, long long shift) {
  extern __shared__ float2 z[];
  const long long out0 = 2LL * blockIdx.x * VALID, out1 = out0 + VALID;
  for (int i = threadIdx.x; i < N; i += THREADS)
    z[PADDED(i)] = make_float2(load_or_zero(x, out0 + shift + i, n), load_or_zero(x, out1 + shift + i, n));
  __syncthreads();
  fft_in_shared<1>(z, tw);
  for (int i = threadIdx.x; i < N; i += THREADS) {
    const float2 v = cmul(z[PADDED(i)], __ldg(spectrum + i));
    z[PADDED(i)] = make_float2(v.x, -v.y);
  }
  __syncthreads();
  fft_in_shared<1>(z, tw);
  const float scale = 1.0f / N;
  for (int i = (M - 1) + threadIdx.x; i < N; i += THREADS) {
    const float2 v = z[PADDED(i)];
    const long long o = i - (M - 1);
    if (out0 + o < outputs) y[out0 + o] = v.x * scale;
    if (out1 + o < outputs) y[out1 + o] = -v.y * scale;
  }
}
