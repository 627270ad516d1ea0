// Implicit-GEMM convolution-layer kernel for all three passes: D[m][n] = sum_t A(m,t) B(t,n), with A and
// B gathered from the NCHW tensors on the fly (layer_implicit_gemm_gather.cuh says how, per PASS).
// Each CTA computes a BM x BN tile of D, walking t in BK steps through a STAGES-deep cp.async ring of
// shared-memory tiles (zero-filled where the gather says padding or out of range).
//   MATH 0: fp32 FMA, each thread a TM x TN register tile (outer products from shared memory).
//   MATH 1: 3xTF32 on tensor cores (mma.sync m16n8k8): a = big + small, a*b ~ small_a*big_b +
//           big_a*small_b + big_a*big_b, small products first; fp32-level accuracy.
//   MATH 2: TF32 on tensor cores: one product of the rounded values.
//   MATH 1, 2: each k-tile's mma's start from a zero accumulator that is then FADDed into the fp32 sum
//           (the tensor core truncates in its accumulation: long sums in mma registers drift).
// Defines: the shape (N C H W K R S PAD_H PAD_W U V P Q), PASS (0 forward, 1 backward-data,
// 2 backward-filter), MATH, BM BN BK STAGES, TM TN (MATH 0) or WARPS_M WARPS_N (MATH 1, 2), BIAS and
// ACT (forward: layer_epilogue.cuh), SPLITS (t split over gridDim.z, each slice's partial D in the workspace,
// summed in slice order by split_reduce_kernel, which then applies the epilogue).
#include "async_copy.cuh"
#include "layer_epilogue.cuh"
#include "layer_implicit_gemm_gather.cuh"

#ifndef SPLITS
#define SPLITS 1
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
using Gemm = igemm::BwdFilterGemm;
#endif

#if MATH == 0
constexpr int kThreads = (BM / TM) * (BN / TN);
static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read as float4");
#else
constexpr int kThreads = WARPS_M * WARPS_N * 32;
constexpr int kWarpM = BM / WARPS_M, kWarpN = BN / WARPS_N;
constexpr int kMmaM = kWarpM / 16, kMmaN = kWarpN / 8;
static_assert(kWarpM % 16 == 0 && kWarpN % 8 == 0 && BK % 8 == 0, "warp tile of whole m16n8k8 tiles");
#endif

// Shared tiles are k-major (As[k][m], Bs[k][n]). A row stride of 8 mod 32 words makes the mma fragment
// reads (rows tig, tig+4; columns group) hit 32 distinct banks, and keeps float4 reads aligned.
// Resident CTAs an SM should hold: caps registers at 128 (256 threads) or 168 (128 threads) a thread.
constexpr int kMinBlocks = kThreads >= 256 ? 2 : 3;
constexpr int kLdA = BM + 8, kLdB = BN + 8;
constexpr int kStageFloats = BK * (kLdA + kLdB);

__host__ __device__ constexpr int min_int(int a, int b) { return a < b ? a : b; }

// How the threads cover a (fixed x BK) operand tile per k-step: consecutive threads run along the
// fixed dimension (m or n) or along t, whichever is contiguous in memory, so that loads coalesce. Along
// the fixed dimension a warp spans 32 rows and the warps split t: each thread then decodes BK/warps taps
// (not BK) and keeps a few rows' gather state.
template <int kFixed, bool kAlongFixed>
struct TileMap {
  static constexpr int kSpanF = kAlongFixed ? min_int(kFixed, 32) : kThreads / min_int(BK, kThreads);
  static constexpr int kSpanK = kThreads / kSpanF;
  static constexpr int kCountF = kFixed / kSpanF, kCountK = BK / kSpanK;
  static_assert(kThreads % kSpanF == 0 && kFixed % kSpanF == 0 && BK % kSpanK == 0, "tile not covered evenly");
  static __device__ __forceinline__ int f0(int tid) { return kAlongFixed ? tid % kSpanF : tid / kSpanK; }
  static __device__ __forceinline__ int k0(int tid) { return kAlongFixed ? tid / kSpanF : tid % kSpanK; }
};
using MapA = TileMap<BM, Gemm::kAAlongM>;
using MapB = TileMap<BN, false>;  // B is contiguous along t in all three passes

// The per-thread gather state: the fixed coordinates of the rows of A and columns of B it loads.
struct Gathers {
  Gemm::Row rows[MapA::kCountF];
  Gemm::Col cols[MapB::kCountF];
};

__device__ __forceinline__ void init_gathers(Gathers& g, int m_tile, int n_tile, int tid) {
  const DefinedShape s;
#pragma unroll
  for (int fi = 0; fi < MapA::kCountF; ++fi) g.rows[fi] = Gemm::row(s, m_tile + MapA::f0(tid) + fi * MapA::kSpanF);
#pragma unroll
  for (int fi = 0; fi < MapB::kCountF; ++fi) g.cols[fi] = Gemm::col(s, n_tile + MapB::f0(tid) + fi * MapB::kSpanF);
}

// Issues the cp.async copies of k-tile `kt` into stage buffer `tile` (zeros where the gather says so).
__device__ __forceinline__ void load_tile(float* tile, const Gathers& g, const float* __restrict__ a,
                                          const float* __restrict__ b, int kt, int tid) {
  const DefinedShape s;
  float* as = tile;
  float* bs = tile + BK * kLdA;
  const int t0 = kt * BK;
#pragma unroll
  for (int ki = 0; ki < MapA::kCountK; ++ki) {
    const int kk = MapA::k0(tid) + ki * MapA::kSpanK;
    const Gemm::Tap tap = Gemm::tap(s, t0 + kk);
#pragma unroll
    for (int fi = 0; fi < MapA::kCountF; ++fi) {
      int off;
      const bool valid = Gemm::a_at(s, g.rows[fi], tap, off);
      cp_async<4>(as + kk * kLdA + MapA::f0(tid) + fi * MapA::kSpanF, a + off, valid);
    }
  }
#pragma unroll
  for (int ki = 0; ki < MapB::kCountK; ++ki) {
    const int kk = MapB::k0(tid) + ki * MapB::kSpanK;
    const Gemm::Tap tap = Gemm::tap(s, t0 + kk);
#pragma unroll
    for (int fi = 0; fi < MapB::kCountF; ++fi) {
      int off;
      const bool valid = Gemm::b_at(s, g.cols[fi], tap, off);
      cp_async<4>(bs + kk * kLdB + MapB::f0(tid) + fi * MapB::kSpanF, b + off, valid);
    }
  }
}

// bias[n] for the epilogue, loaded once a column for all of the thread's rows (in the epilogue, one load an
// element put its latency between each sum and its store); 0 past the GEMM's columns, without a bias, and
// for a split's partial (the reduction applies the epilogue to the sum).
__device__ __forceinline__ float column_bias(const float* __restrict__ bias, int n) {
  const DefinedShape s;
  return BIAS && SPLITS == 1 && n < Gemm::n_size(s) ? __ldg(bias + n) : 0.f;
}

// One output element, guarded by the GEMM's extent in n; a split's partial is stored as it is.
__device__ __forceinline__ void store_element(float* __restrict__ d, int d_row, int n, float value, float bias_n) {
  const DefinedShape s;
  if (n >= Gemm::n_size(s)) return;
  d[d_row + n * Gemm::d_col_stride(s)] = SPLITS > 1 ? value : layer_epilogue_loaded(bias_n, value);
}

#if MATH == 0
// ---- fp32 SIMT ----------------------------------------------------------------------------------------
// Thread (mg, ng) owns rows {chunk * 4*MG + mg*4 + 0..3} and columns {chunk * 4*NG + ng*4 + 0..3}: float4
// reads of consecutive threads are contiguous (no bank conflicts), consecutive threads run along m.
constexpr int kGroupsM = BM / TM, kGroupsN = BN / TN;

struct Accumulators {
  float v[TM][TN];
};

__device__ __forceinline__ void clear(Accumulators& acc) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc.v[i][j] = 0.f;
}

__device__ __forceinline__ void compute_tile(Accumulators& acc, const float* tile, int tid) {
  const float* as = tile;
  const float* bs = tile + BK * kLdA;
  const int mg = tid % kGroupsM, ng = tid / kGroupsM;
#pragma unroll
  for (int kk = 0; kk < BK; ++kk) {
    float a[TM], b[TN];
#pragma unroll
    for (int chunk = 0; chunk < TM / 4; ++chunk) {
      const float4 v = *reinterpret_cast<const float4*>(as + kk * kLdA + chunk * 4 * kGroupsM + mg * 4);
      a[chunk * 4 + 0] = v.x, a[chunk * 4 + 1] = v.y, a[chunk * 4 + 2] = v.z, a[chunk * 4 + 3] = v.w;
    }
#pragma unroll
    for (int chunk = 0; chunk < TN / 4; ++chunk) {
      const float4 v = *reinterpret_cast<const float4*>(bs + kk * kLdB + chunk * 4 * kGroupsN + ng * 4);
      b[chunk * 4 + 0] = v.x, b[chunk * 4 + 1] = v.y, b[chunk * 4 + 2] = v.z, b[chunk * 4 + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc.v[i][j] = fmaf(a[i], b[j], acc.v[i][j]);
  }
}

__device__ __forceinline__ void store_tile(const Accumulators& acc, float* __restrict__ d,
                                           const float* __restrict__ bias, int m_tile, int n_tile, int tid) {
  const DefinedShape s;
  const int mg = tid % kGroupsM, ng = tid / kGroupsM;
  auto column = [&](int j) { return n_tile + (j / 4) * 4 * kGroupsN + ng * 4 + j % 4; };
  float bias_n[TN];
#pragma unroll
  for (int j = 0; j < TN; ++j) bias_n[j] = column_bias(bias, column(j));
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m_tile + (i / 4) * 4 * kGroupsM + mg * 4 + i % 4;
    if (m >= Gemm::m_size(s)) continue;
    const int d_row = Gemm::d_row(s, m);
#pragma unroll
    for (int j = 0; j < TN; ++j) store_element(d, d_row, column(j), acc.v[i][j], bias_n[j]);
  }
}

#else
// ---- tensor cores: mma.sync m16n8k8 TF32 ---------------------------------------------------------------
// Fragments (PTX ISA, m16n8k8 .tf32), group = lane / 4, tig = lane % 4:
//   A (16x8, row): a0 (group, tig), a1 (group+8, tig), a2 (group, tig+4), a3 (group+8, tig+4)
//   B (8x8, col):  b0 (k tig, n group), b1 (k tig+4, n group)
//   C (16x8):      c0 (group, 2 tig), c1 (group, 2 tig+1), c2 (group+8, 2 tig), c3 (group+8, 2 tig+1)
struct Accumulators {
  float v[kMmaM][kMmaN][4];
};

__device__ __forceinline__ void clear(Accumulators& acc) {
#pragma unroll
  for (int i = 0; i < kMmaM; ++i)
#pragma unroll
    for (int j = 0; j < kMmaN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc.v[i][j][e] = 0.f;
}

// x rounded to TF32 (nearest, ties away from zero). Written out because sm_80/90's cvt.rna.tf32.f32 is
// emulated in four instructions, one of them an infinity test that finite data never needs (an input within
// 2^-11 of FLT_MAX rounds to infinity here; cvt would keep it finite).
__device__ __forceinline__ unsigned to_tf32(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }

// x = big + small, big rounded to TF32; with MATH 2 only big is used. small (|small| <= 2^-11 |x|) is
// passed unrounded: the tensor core reads a TF32 operand's top 19 bits, which truncates small, an error
// of at most 2^-21 |x|, the size of the small*small term that 3xTF32 drops anyway.
__device__ __forceinline__ void split_tf32(float x, unsigned& big, unsigned& small) {
  big = to_tf32(x);
#if MATH == 1
  small = __float_as_uint(x - __uint_as_float(big));
#else
  small = 0u;
#endif
}

__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void warp_origin(int tid, int& wm, int& wn) {
  const int warp = tid / 32;
  wm = (warp % WARPS_M) * kWarpM;
  wn = (warp / WARPS_M) * kWarpN;
}

__device__ __forceinline__ void compute_tile(Accumulators& acc, const float* tile, int tid) {
  constexpr int kSteps = BK / 8;
  const float* as = tile;
  const float* bs = tile + BK * kLdA;
  const int lane = tid % 32, group = lane / 4, tig = lane % 4;
  int wm, wn;
  warp_origin(tid, wm, wn);
  // The B fragments of the whole k-tile stay live; A is split one row of mma tiles at a time (register
  // pressure), within which the kMmaN accumulators are independent.
  unsigned b_big[kSteps][kMmaN][2], b_small[kSteps][kMmaN][2];
#pragma unroll
  for (int ks = 0; ks < kSteps; ++ks) {
    const float* b_lo = bs + (8 * ks + tig) * kLdB + wn + group;  // k = tig
    const float* b_hi = b_lo + 4 * kLdB;                          // k = tig + 4
#pragma unroll
    for (int j = 0; j < kMmaN; ++j) {
      split_tf32(b_lo[j * 8], b_big[ks][j][0], b_small[ks][j][0]);
      split_tf32(b_hi[j * 8], b_big[ks][j][1], b_small[ks][j][1]);
    }
  }
#pragma unroll
  for (int i = 0; i < kMmaM; ++i) {
    // The tensor core's fp32 accumulation is not IEEE: it aligns the addends to the largest exponent and
    // truncates, so a long sum kept in an mma accumulator drifts (3xTF32 failed the strict bound by 1.6x
    // at t = 2304 and by 100x at t = 8.4M). Each k-tile's BK products therefore go into a fresh zero
    // accumulator `part` that is then added to acc with a rounded FADD: the long sum is ordinary
    // round-to-nearest fp32, and truncation only touches sums of BK terms.
    float part[kMmaN][4];
#pragma unroll
    for (int j = 0; j < kMmaN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) part[j][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
      const float* a_lo = as + (8 * ks + tig) * kLdA + wm + group + i * 16;
      const float* a_hi = a_lo + 4 * kLdA;
      unsigned a_big[4], a_small[4];
      split_tf32(a_lo[0], a_big[0], a_small[0]);
      split_tf32(a_lo[8], a_big[1], a_small[1]);
      split_tf32(a_hi[0], a_big[2], a_small[2]);
      split_tf32(a_hi[8], a_big[3], a_small[3]);
#if MATH == 1
      // The small cross terms first, then the big product.
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) mma_tf32(part[j], a_small, b_big[ks][j]);
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) mma_tf32(part[j], a_big, b_small[ks][j]);
#endif
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) mma_tf32(part[j], a_big, b_big[ks][j]);
    }
#pragma unroll
    for (int j = 0; j < kMmaN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc.v[i][j][e] += part[j][e];
  }
}

__device__ __forceinline__ void store_tile(const Accumulators& acc, float* __restrict__ d,
                                           const float* __restrict__ bias, int m_tile, int n_tile, int tid) {
  const DefinedShape s;
  const int lane = tid % 32, group = lane / 4, tig = lane % 4;
  int wm, wn;
  warp_origin(tid, wm, wn);
  float bias_n[kMmaN][2];
#pragma unroll
  for (int j = 0; j < kMmaN; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) bias_n[j][e] = column_bias(bias, n_tile + wn + j * 8 + 2 * tig + e);
#pragma unroll
  for (int i = 0; i < kMmaM; ++i)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = m_tile + wm + i * 16 + group + 8 * half;
      if (m >= Gemm::m_size(s)) continue;
      const int d_row = Gemm::d_row(s, m);
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) {
        const int n = n_tile + wn + j * 8 + 2 * tig;
        store_element(d, d_row, n, acc.v[i][j][2 * half], bias_n[j][0]);
        store_element(d, d_row, n + 1, acc.v[i][j][2 * half + 1], bias_n[j][1]);
      }
    }
}
#endif

// ---- the GEMM ---------------------------------------------------------------------------------------------
// This CTA's k-tiles: all of them, or with SPLITS > 1 its share of them (possibly none: it writes zeros).
__device__ __forceinline__ void k_range(int& begin, int& count) {
  const DefinedShape s;
  const int tiles = (Gemm::t_size(s) + BK - 1) / BK;
  const int per_split = (tiles + SPLITS - 1) / SPLITS;
  begin = blockIdx.z * per_split;
  const int end = min_int(tiles, begin + per_split);
  count = end > begin ? end - begin : 0;
}

__device__ __forceinline__ void gemm(const float* __restrict__ a, const float* __restrict__ b,
                                     const float* __restrict__ bias, float* __restrict__ d) {
  extern __shared__ float4 smem_words[];
  float* smem = reinterpret_cast<float*>(smem_words);
  const int tid = threadIdx.x;
  const int m_tile = blockIdx.x * BM, n_tile = blockIdx.y * BN;
  Gathers g;
  init_gathers(g, m_tile, n_tile, tid);
  Accumulators acc;
  clear(acc);
  int begin, count;
  k_range(begin, count);
#if STAGES == 1
  for (int it = 0; it < count; ++it) {
    load_tile(smem, g, a, b, begin + it, tid);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    compute_tile(acc, smem, tid);
    __syncthreads();
  }
#else
  // Group number i always holds k-tile i (empty groups past the end keep the count), so waiting until
  // STAGES - 2 groups are pending means tile `it` has landed.
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < count) load_tile(smem + st * kStageFloats, g, a, b, begin + st, tid);
    cp_async_commit();
  }
  for (int it = 0; it < count; ++it) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile `it` visible to all; every thread is done with the stage reloaded below
    const int next = it + STAGES - 1;
    if (next < count) load_tile(smem + (next % STAGES) * kStageFloats, g, a, b, begin + next, tid);
    cp_async_commit();
    compute_tile(acc, smem + (it % STAGES) * kStageFloats, tid);
  }
  cp_async_wait<0>();
#endif
  store_tile(acc, d, bias, m_tile, n_tile, tid);
}

// ---- entry points: the operands in the family's order, then the workspace ---------------------------------
// With SPLITS > 1 each z-slice of the grid writes its partial D, laid out as D, to workspace[z].
constexpr int kOutputElements = PASS == 0 ? N * K * P * Q : PASS == 1 ? N * C * H * W : K * C * R * S;

__device__ __forceinline__ float* split_output(float* out, void* workspace) {
  return SPLITS > 1 ? static_cast<float*>(workspace) + blockIdx.z * kOutputElements : out;
}

// out = the splits' partials summed in split order (deterministic, no atomics), then the epilogue.
__device__ __forceinline__ void split_reduce(const float* __restrict__ bias, float* __restrict__ out,
                                             const void* workspace) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= kOutputElements) return;
  const float* partials = static_cast<const float*>(workspace);
  float sum = 0.f;
#pragma unroll 4
  for (int z = 0; z < SPLITS; ++z) sum += partials[z * kOutputElements + e];
  out[e] = PASS == 0 ? layer_epilogue(bias, (e / (P * Q)) % K, sum) : sum;
}

#if PASS == 0
extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
    implicit_gemm_kernel(const float* __restrict__ x, const float* __restrict__ filter, BIAS_PARAM float* __restrict__ y,
                         void* workspace) {
  gemm(x, filter, bias, split_output(y, workspace));
}
extern "C" __global__ void split_reduce_kernel(const float* __restrict__ x, const float* __restrict__ filter,
                                               BIAS_PARAM float* __restrict__ y, void* workspace) {
  split_reduce(bias, y, workspace);
}
#elif PASS == 1
extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
    implicit_gemm_kernel(const float* __restrict__ dy, const float* __restrict__ filter, float* __restrict__ dx,
                         void* workspace) {
  gemm(dy, filter, nullptr, split_output(dx, workspace));
}
extern "C" __global__ void split_reduce_kernel(const float* __restrict__ dy, const float* __restrict__ filter,
                                               float* __restrict__ dx, void* workspace) {
  split_reduce(nullptr, dx, workspace);
}
#else
extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
    implicit_gemm_kernel(const float* __restrict__ x, const float* __restrict__ dy, float* __restrict__ dw,
                         void* workspace) {
  gemm(dy, x, nullptr, split_output(dw, workspace));
}
extern "C" __global__ void split_reduce_kernel(const float* __restrict__ x, const float* __restrict__ dy,
                                               float* __restrict__ dw, void* workspace) {
  split_reduce(nullptr, dw, workspace);
}
#endif
