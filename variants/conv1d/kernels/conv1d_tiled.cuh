// conv1d overlap methods, spatial (seed 000, 4.2 and 4.3). A block stages one input tile in shared memory
// with coalesced loads and computes TILE_OUT = THREADS * P outputs as a correlation with the reversed filter
// g[k] = h[m-1-k] (constant memory, zero-padded to 32*KH taps).
//
// Register blocking: lane l of warp w owns outputs w*32*P + l + 32*c (c < P), so each shared-memory load is
// one conflict-free 32-wide row; taps split as k = 32*kh + kl, and the value s[u + 32*q + kl] serves every
// (output c, tap group kh) with c + kh = q, so a group of G tap rows costs P + G - 1 loads for P*G FMAs.
// Compile-time: M (filter length), THREADS, P (outputs per thread), G (tap rows per group).
#include "conv1d_common.cuh"

#define KH ((M + 31) / 32)
#define TILE_OUT (THREADS * P)
#define TILE_IN (TILE_OUT + 32 * KH)  // the last row group reads up to TILE_OUT + 32*KH - 2

__constant__ float c_filter[32 * KH];

// acc[c] += sum over taps 32*(kh0+kh) + kl, kh < NG, of s[u + 32*c + tap] * g[tap]. EXACT: kh0 is known at
// compile time after inlining, and taps >= M are skipped rather than multiplied by the zero padding.
template <int NG, bool EXACT>
__device__ __forceinline__ void tap_rows(const float* __restrict__ s, int u, int kh0, float (&acc)[P]) {
  const float* base = s + u + 32 * kh0;
#pragma unroll
  for (int kl = 0; kl < 32; ++kl) {
    float v[P + NG - 1];
#pragma unroll
    for (int q = 0; q < P + NG - 1; ++q) v[q] = base[32 * q + kl];
#pragma unroll
    for (int kh = 0; kh < NG; ++kh) {
      if (EXACT && 32 * (kh0 + kh) + kl >= M) continue;
      const float g = c_filter[32 * (kh0 + kh) + kl];
#pragma unroll
      for (int c = 0; c < P; ++c) acc[c] = fmaf(v[c + kh], g, acc[c]);
    }
  }
}

__device__ __forceinline__ void correlate_tile(const float* __restrict__ s, int u, float (&acc)[P]) {
#pragma unroll
  for (int c = 0; c < P; ++c) acc[c] = 0.0f;
  if constexpr (KH <= G) {
    tap_rows<KH, true>(s, u, 0, acc);
  } else {
#pragma unroll 1
    for (int kh0 = 0; kh0 + G <= KH; kh0 += G) tap_rows<G, false>(s, u, kh0, acc);
    if constexpr (KH % G != 0) tap_rows<KH % G, false>(s, u, KH - KH % G, acc);
  }
}

__device__ __forceinline__ int first_output_of_thread() { return (threadIdx.x / 32) * 32 * P + threadIdx.x % 32; }

// Overlap-discard: block b reads the overlapping input slice [b*TILE_OUT + shift, + TILE_IN) and writes the
// disjoint outputs [b*TILE_OUT, + TILE_OUT). y[o] = sum_k x[o + shift + k] g[k]; shift = 0 (valid), -(m-1) (full).
// Interior blocks take a path without bounds checks (the seed's specialised last block).
extern "C" __global__ void __launch_bounds__(THREADS)
conv1d_overlap_discard(const float* __restrict__ x, float* __restrict__ y, long long n, long long outputs,
                       long long shift) {
  extern __shared__ float s[];
  const long long o0 = (long long)blockIdx.x * TILE_OUT, in0 = o0 + shift;
  const bool interior = in0 >= 0 && in0 + TILE_IN <= n && o0 + TILE_OUT <= outputs;
  stage_inputs<THREADS, TILE_IN>(s, x, in0, n, interior);
  __syncthreads();
  const int u = first_output_of_thread();
  float acc[P];
  correlate_tile(s, u, acc);
#pragma unroll
  for (int c = 0; c < P; ++c) {
    const long long o = o0 + u + 32 * c;
    if (interior || o < outputs) y[o] = acc[c];
  }
}

// Overlap-add: block b convolves the disjoint input block [b*L_IN, (b+1)*L_IN), L_IN = TILE_OUT - (M - 1),
// zero-padded on both sides, and yields full-convolution outputs [b*L_IN, b*L_IN + TILE_OUT), which overlap the
// next block's. k_steps > 0: launch `step` of the K-step schedule runs blocks b = step + k_steps*i; k_steps == 0:
// all blocks at once, adding atomically where several blocks meet (zeroed first by conv1d_zero_overlaps).
// `first`: the full-convolution index of output 0 (0 for full, m-1 for valid).
#define L_IN (TILE_OUT - (M - 1))

extern "C" __global__ void __launch_bounds__(THREADS)
conv1d_overlap_add(const float* __restrict__ x, float* __restrict__ y, long long n, long long outputs,
                   long long first, long long blocks, int step, int k_steps) {
  extern __shared__ float s[];
  const long long b = k_steps > 0 ? step + (long long)k_steps * blockIdx.x : blockIdx.x;
  if (b >= blocks) return;
  const long long lo = b * L_IN, hi = lo + L_IN < n ? lo + L_IN : n, t0 = lo - (M - 1);
  for (int i = threadIdx.x; i < TILE_IN; i += THREADS) {
    const long long j = t0 + i;
    s[i] = (j >= lo && j < hi) ? __ldg(x + j) : 0.0f;
  }
  __syncthreads();
  const int u = first_output_of_thread();
  float acc[P];
  correlate_tile(s, u, acc);
#pragma unroll
  for (int c = 0; c < P; ++c) {
    const long long q = lo + u + 32 * c, o = q - first;
    if (o < 0 || o >= outputs) continue;
    if (!overlap_add_accumulates(q, b, L_IN, TILE_OUT, blocks, k_steps))
      y[o] = acc[c];
    else if (k_steps > 0)
      y[o] += acc[c];
    else
      atomicAdd(y + o, acc[c]);
  }
}

// Before an atomic overlap-add: zero the outputs that several blocks add into, [b*L_IN, b*L_IN + M - 1) for b >= 1.
extern "C" __global__ void conv1d_zero_overlaps(float* __restrict__ y, long long outputs, long long first,
                                                long long blocks) {
  const long long strip = M - 1, total = (blocks - 1) * strip;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const long long o = (1 + i / strip) * L_IN + i % strip - first;
    if (o >= 0 && o < outputs) y[o] = 0.0f;
  }
}
