// What both wgmma implicit-GEMM kernels (layer_wgmma_gemm.cuh: every warp gathers and multiplies;
// layer_wgmma_ws.cuh: warp-specialized) share, sm_90a only: the shape and the pass's GEMM, the tile
// constants, the swizzled B tiles and their descriptors, the tf32 wgmma's, the filter split, the 3xTF32
// products of one k-tile and the output store. Defines: the shape (N C H W K R S PAD_H PAD_W U V P Q), PASS
// (0 forward, 1 backward-data, 2 backward-filter), MATH (1 3xTF32, 2 TF32), WGS, BN (64, 128), STAGES,
// SMEM_BYTES, BIAS and ACT (forward: layer_epilogue.cuh), SPLITS (backward-filter).
#pragma once
#include "async_copy.cuh"
#include "layer_epilogue.cuh"
#include "layer_implicit_gemm_gather.cuh"
#include "wgmma_tf32.cuh"

struct DefinedShape {
  static constexpr int n = N, c = C, h = H, w = W, k = K, r = R, s = S, pad_h = PAD_H, pad_w = PAD_W, u = U,
                       v = V, p = P, q = Q;
};
#if PASS == 0
using Gemm = igemm::FwdGemm;
#elif PASS == 1
using Gemm = igemm::BwdDataGemm;
#else
// Backward-filter as the GEMM of dw's transpose: rows m = (c, i, j) gathered from x (BwdFilterGemm's
// columns), columns n = k from dy (its rows, split into the B blocks like a filter), t = (img, p, q). The
// long t sum may be split SPLITS ways (work items along grid.x, layer_wgmma_ws.cuh) whose partials a third
// kernel adds in order.
struct FilterGradGemm {
  using G = igemm::BwdFilterGemm;
  using Row = G::Col;
  using Col = G::Row;
  using Tap = G::Tap;
  template <class Shape> static __device__ int m_size(const Shape& s) { return G::n_size(s); }
  template <class Shape> static __device__ Col col(const Shape& s, int n) { return G::row(s, n); }
  template <class Shape> static __device__ Tap tap(const Shape& s, int t) { return G::tap(s, t); }
  template <class Shape> static __device__ bool a_at(const Shape& s, const Row& a, const Tap& k, int& off) {
    return G::b_at(s, a, k, off);
  }
  template <class Shape> static __device__ bool b_at(const Shape& s, const Col& b, const Tap& k, int& off) {
    return G::a_at(s, b, k, off);
  }
  // Where C is a multiple of the tile's rows, the rows run filter-tap major, m = (i * S + j) * C + c, so that
  // a tile has one (i, j); else m = (c * R + i) * S + j, dw's own order.
  static constexpr bool kTapMajorRows = C % (64 * WGS) == 0;
  template <class Shape> static __device__ Row row(const Shape& s, int m) {
    return G::col(s, kTapMajorRows ? (m % C) * (R * S) + m / C : m);
  }
  template <class Shape> static __device__ int d_row(const Shape&, int m) {
    return kTapMajorRows ? (m % C) * (R * S) + m / C : m;
  }
  template <class Shape> static __device__ int d_col_stride(const Shape& s) { return s.c * s.r * s.s; }
};
using Gemm = FilterGradGemm;
#endif
#ifndef SPLITS
#define SPLITS 1
#endif

constexpr int BM = 64 * WGS, BK = 32;
constexpr int kAcc = BN / 2;  // accumulator registers a thread
constexpr int kBTileBytes = BN * BK * 4;    // one BN x 32 tf32 tile: a swizzle row of 128 B per n
constexpr int kBTiles = MATH == 1 ? 2 : 1;  // 3xTF32: big + small; TF32: big
constexpr int kBBlockFloats = kBTiles * BN * BK;
constexpr int kBCopyBytes = kBTiles * kBTileBytes;
constexpr int kTSize = PASS == 0 ? C * R * S : PASS == 1 ? K * R * S : N * P * Q;  // Gemm's t and n sizes
constexpr int kNSize = PASS == 0 ? K : PASS == 1 ? C : K;
constexpr int kKTiles = (kTSize + BK - 1) / BK, kNTiles = (kNSize + BN - 1) / BN;
constexpr int kRS = R * S;
constexpr int kCInner = PASS == 0 ? C : K;  // the channel extent of a filter tap: c (forward) or k (backward-data)
static_assert(BN == 64 || BN == 128, "BN is 64 or 128");
static_assert(double(kNTiles) * kKTiles * kBBlockFloats <= 2147483647.0, "split filter past 32-bit offsets");

// The swizzled tile layout, its descriptor and the tf32 split are harness/kernels/wgmma_tf32.cuh's.
using wg::round_tf32;
using wg::swizzled_offset;
using wg::tile_descriptor;
// d (+)= a * B, m64 x BN x k8, is wg::Mma<BN, ACCUMULATE>::run.

// One k-tile's products into `part`, from a fresh accumulator; small terms first.
__device__ __forceinline__ void multiply_tile(float (&part)[kAcc], const unsigned (&big)[4][4],
                                              const unsigned (&small)[4][4], unsigned long long b_big) {
  wg::fence();
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const unsigned long long step = 2 * ks;  // 32 bytes along k within the swizzle row
#if MATH == 1
    const unsigned long long b_small = b_big + (kBTileBytes >> 4);  // descriptor addresses count 16 bytes
    if (ks == 0)
      wg::Mma<BN, 0>::run(part, small[ks], b_big);
    else
      wg::Mma<BN, 1>::run(part, small[ks], b_big + step);
    wg::Mma<BN, 1>::run(part, big[ks], b_small + step);
    wg::Mma<BN, 1>::run(part, big[ks], b_big + step);
#else
    if (ks == 0)
      wg::Mma<BN, 0>::run(part, big[ks], b_big);
    else
      wg::Mma<BN, 1>::run(part, big[ks], b_big + step);
#endif
  }
  wg::commit();
}

// ---- B: the filter (or backward-filter's dy), split once per call ----------------------------------------------
// Element (n, t) of the zero-padded kNTiles*BN x kKTiles*BK B goes to block (n/BN, t/BK); consecutive
// threads take consecutive t. TAP_MAJOR: the GEMM's t runs filter tap major, t = rs * kCInner + c (the
// specialized kernel's order where kCInner is a multiple of BK; no padding then).
template <bool TAP_MAJOR>
__device__ __forceinline__ void split_filter(const float* __restrict__ filter, float* __restrict__ blocks) {
  const DefinedShape s;
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= kNTiles * BN * kKTiles * BK) return;
  const int n = e / (kKTiles * BK), t = e % (kKTiles * BK);
  const int t_orig = TAP_MAJOR ? (t % kCInner) * kRS + t / kCInner : t;
  int off;
  const bool valid = Gemm::b_at(s, Gemm::col(s, n), Gemm::tap(s, t_orig), off);
  const float x = valid ? filter[off] : 0.f;
  const float big = __uint_as_float(round_tf32(x));
  char* block = reinterpret_cast<char*>(blocks + ((n / BN) * kKTiles + t / BK) * kBBlockFloats);
  *reinterpret_cast<float*>(block + swizzled_offset(n % BN, t % BK)) = big;
  if (MATH == 1) *reinterpret_cast<float*>(block + kBTileBytes + swizzled_offset(n % BN, t % BK)) = x - big;
}

// The forward pass's bias, staged: the tile's BN biases go to shared memory by cp.async among the first
// k-tile's copies (its wait covers them), so their latency hides under the main loop. Read from global memory
// in the epilogue, that latency ended every CTA: bias alone cost a 1x1 C64->K256 layer 6% (H200).
constexpr int kBiasBytes = PASS == 0 ? 4 * BN : 0;  // the host reserves it for every forward launch
__device__ __forceinline__ void copy_tile_bias(unsigned dst, const float* __restrict__ bias, int n_first, int tid) {
#if BIAS
  const int n = n_first + tid;
  if (tid < BN) cp_async_to<4>(dst + 4 * tid, bias + (n < kNSize ? n : 0), n < kNSize);
#else
  (void)dst, (void)bias, (void)n_first, (void)tid;
#endif
}

// Accumulator element 4j + 2h + e: row frag_m + 8h, column 8j + 2q + e. tile_bias: the staged biases
// (forward with BIAS; unread otherwise). Read into registers once for both rows.
__device__ __forceinline__ void store_tile(const float (&sum)[kAcc], float* __restrict__ d, const float* tile_bias,
                                           int m_first, int n_first, int q) {
  const DefinedShape s;
  constexpr bool kWholeN = kNSize % BN == 0;  // every column of every tile exists: no column test
  float column_bias[BN / 4];
#pragma unroll
  for (int i = 0; i < BN / 4; ++i) column_bias[i] = BIAS ? tile_bias[8 * (i / 2) + 2 * q + i % 2] : 0.f;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int m = m_first + 8 * h;
    if (m >= Gemm::m_size(s)) continue;
    const int d_row = Gemm::d_row(s, m);
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int n = n_first + 8 * j + 2 * q + e;
        const float v = sum[4 * j + 2 * h + e];
        if (kWholeN || n < kNSize)
          d[d_row + n * Gemm::d_col_stride(s)] = layer_epilogue_loaded(column_bias[2 * j + e], v);
      }
  }
}
