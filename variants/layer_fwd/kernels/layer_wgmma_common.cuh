// What both wgmma implicit-GEMM kernels (layer_wgmma_gemm.cuh: every warp gathers and multiplies;
// layer_wgmma_ws.cuh: warp-specialized) share, sm_90a only: the shape and the pass's GEMM, the tile
// constants, the swizzled B tiles and their descriptors, the tf32 wgmma's, the filter split, the 3xTF32
// products of one k-tile and the output store. Defines: the shape (N C H W K R S PAD_H PAD_W U V P Q), PASS
// (0 forward, 1 backward-data, 2 backward-filter), MATH (1 3xTF32, 2 TF32), WGS, BN (64, 128), STAGES,
// SMEM_BYTES, BIAS and RELU (forward), SPLITS (backward-filter).
#pragma once
#include "layer_implicit_gemm_gather.cuh"
#include "wgmma_tf32.cuh"

#ifndef BIAS
#define BIAS 0
#endif
#ifndef RELU
#define RELU 0
#endif

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
// long t sum may be split over SPLITS CTAs (gridDim.z) whose partials a third kernel adds in order.
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

// d (+)= a * B: m64 x BN x k8, A from registers, B from the tile the descriptor names; ACCUMULATE 0 ignores d.
// The accumulator is BN/2 registers a thread (the asm needs each one named).
template <int ACCUMULATE>
__device__ __forceinline__ void wgmma_tile(float (&d)[32], const unsigned (&a)[4], unsigned long long b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, %37, 1, 1;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(ACCUMULATE));
}
template <int ACCUMULATE>
__device__ __forceinline__ void wgmma_tile(float (&d)[64], const unsigned (&a)[4], unsigned long long b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, %69, 1, 1;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(ACCUMULATE));
}

// One k-tile's products into `part`, from a fresh accumulator; small terms first.
__device__ __forceinline__ void multiply_tile(float (&part)[kAcc], const unsigned (&big)[4][4],
                                              const unsigned (&small)[4][4], unsigned long long b_big) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const unsigned long long step = 2 * ks;  // 32 bytes along k within the swizzle row
#if MATH == 1
    const unsigned long long b_small = b_big + (kBTileBytes >> 4);  // descriptor addresses count 16 bytes
    if (ks == 0)
      wgmma_tile<0>(part, small[ks], b_big);
    else
      wgmma_tile<1>(part, small[ks], b_big + step);
    wgmma_tile<1>(part, big[ks], b_small + step);
    wgmma_tile<1>(part, big[ks], b_big + step);
#else
    if (ks == 0)
      wgmma_tile<0>(part, big[ks], b_big);
    else
      wgmma_tile<1>(part, big[ks], b_big + step);
#endif
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
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

__device__ __forceinline__ float epilogue(const float* __restrict__ bias, int n, float value) {
#if BIAS
  value += bias[n];
#endif
#if RELU
  value = value < 0.f ? 0.f : value;
#endif
  return value;
}

// Accumulator element 4j + 2h + e: row frag_m + 8h, column 8j + 2q + e.
__device__ __forceinline__ void store_tile(const float (&sum)[kAcc], float* __restrict__ d,
                                           const float* __restrict__ bias, int m_first, int n_first, int q) {
  const DefinedShape s;
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
        if (n < kNSize) d[d_row + n * Gemm::d_col_stride(s)] = epilogue(bias, n, sum[4 * j + 2 * h + e]);
      }
  }
}
