// Implicit-GEMM kernel of the forward and backward-data passes on Hopper's warpgroup MMA (wgmma, sm_90a):
// D[m][n] = sum_t A(m,t) B(t,n), A gathered from the image (x or dy), B the filter.
//   split_filter_kernel: B once per call into tf32 "big" (rounded) and "small" (the remainder) tiles, in
//     the K-major 128-byte-swizzled layout wgmma reads, one block (big, then small for 3xTF32; 8 KB a
//     tile per 64 columns) per (n-tile, k-tile): tf32 wgmma reads B only from shared memory, K-major.
//   wgmma_gemm_kernel: WGS warpgroups, each 64 rows of the BM = 64*WGS tile and all BN (64 or 128)
//     columns. A is gathered by 4-byte cp.async (zero fill) into As[k][m], read as wgmma register
//     fragments and split; the B block of each k-tile comes by one bulk copy on an mbarrier. Per k8 step, MATH 1 (3xTF32)
//     issues a_small*B_big, a_big*B_small, a_big*B_big; MATH 2 (TF32) a_big*B_big. Each k-tile's wgmma's
//     start from a fresh accumulator that is added to the fp32 sum once the tile drains: the tensor
//     core truncates as it accumulates (measured: as mma.sync does), so long chains drift.
// Defines: the shape (N C H W K R S PAD_H PAD_W U V P Q), PASS (0 forward, 1 backward-data), MATH (1, 2),
// WGS (1, 2, 4), BN (64, 128), STAGES (2..4), SMEM_BYTES (the launch's dynamic shared memory), BIAS and
// ACT (forward: layer_epilogue.cuh).
#include "async_copy.cuh"
#include "layer_wgmma_common.cuh"

static_assert(PASS == 0 || PASS == 1, "forward and backward-data");
constexpr int kThreads = 128 * WGS;
constexpr int kLdA = BM + 8;  // As[k][m]: a row stride of 8 mod 32 words makes the fragment reads conflict-free
constexpr int kAStageFloats = BK * kLdA;
// The gather: lanes along m (consecutive m are consecutive pixels: coalesced), warps along k.
constexpr int kSpanK = kThreads / 32, kCountF = BM / 32, kCountK = BK / kSpanK;
static_assert(BK % kSpanK == 0, "the warps must split BK evenly");
// gemm()'s carve-up: up to 1008 bytes to reach 1024-byte alignment, the B blocks, the A tiles, the mbarriers,
// the tile's biases (forward).
static_assert(1008 + STAGES * 4 * (kBBlockFloats + kAStageFloats) + 8 * STAGES + kBiasBytes <= SMEM_BYTES,
              "the launch's shared memory does not cover the kernel's tiles");
// Registers: 128 a thread with BN 64 (one 512-thread CTA, or more smaller ones, per SM); BN 128 needs
// two accumulators of 64.
constexpr int kMinBlocks = BN == 64 ? 4 / WGS : WGS == 1 ? 2 : 1;

// ---- A: gathered ----------------------------------------------------------------------------------------
struct Rows {
  Gemm::Row r[kCountF];
};

__device__ __forceinline__ void gather_a(float* as, const Rows& g, const float* __restrict__ a, int kt, int tid) {
  const DefinedShape s;
#pragma unroll
  for (int ki = 0; ki < kCountK; ++ki) {
    const int kk = tid / 32 + ki * kSpanK;
    const Gemm::Tap tap = Gemm::tap(s, kt * BK + kk);
#pragma unroll
    for (int fi = 0; fi < kCountF; ++fi) {
      int off;
      const bool valid = Gemm::a_at(s, g.r[fi], tap, off);
      cp_async<4>(as + kk * kLdA + tid % 32 + 32 * fi, a + off, valid);
    }
  }
}

// The A fragments of one k-tile (four k8 steps) for this thread, split: rows frag_m (+8), k = q (+4).
__device__ __forceinline__ void load_fragments(const float* as, int frag_m, int q, unsigned (&big)[4][4],
                                               unsigned (&small)[4][4]) {
  const float* a = as + q * kLdA + frag_m;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const float v[4] = {a[8 * ks * kLdA], a[8 * ks * kLdA + 8], a[(8 * ks + 4) * kLdA], a[(8 * ks + 4) * kLdA + 8]};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      big[ks][j] = round_tf32(v[j]);
      small[ks][j] = __float_as_uint(v[j] - __uint_as_float(big[ks][j]));
    }
  }
}

__device__ __forceinline__ void gemm(const float* __restrict__ a, const float* __restrict__ b_blocks,
                                     const float* __restrict__ bias, float* __restrict__ d) {
  // Dynamic shared memory is only promised 16-byte alignment; the swizzled tiles need 1024 (SMEM_BYTES
  // includes the slack).
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (shared_address(smem_raw) & 1023)) & 1023);
  float* bs = reinterpret_cast<float*>(smem);  // STAGES B blocks of kBTiles x BN x BK tf32
  float* as = bs + STAGES * kBBlockFloats;     // STAGES A tiles
  unsigned long long* bars = reinterpret_cast<unsigned long long*>(as + STAGES * kAStageFloats);
  float* tile_bias = reinterpret_cast<float*>(bars + STAGES);
  const DefinedShape s;
  const int tid = threadIdx.x, lane = tid % 32, m_first = blockIdx.x * BM, n_tile = blockIdx.y;
  Rows g;
#pragma unroll
  for (int fi = 0; fi < kCountF; ++fi) g.r[fi] = Gemm::row(s, m_first + tid % 32 + 32 * fi);
  if (tid == 0)
    for (int st = 0; st < STAGES; ++st) bulk_init(&bars[st]);
  __syncthreads();
  auto load_tile = [&](int kt) {
    const int st = kt % STAGES;
    gather_a(as + st * kAStageFloats, g, a, kt, tid);
    if (tid == 0) {
      bulk_expect(&bars[st], kBCopyBytes);
      bulk_copy(bs + st * kBBlockFloats, b_blocks + (n_tile * kKTiles + kt) * kBBlockFloats, kBCopyBytes, &bars[st]);
    }
  };
  float sum[kAcc], part[kAcc];
#pragma unroll
  for (int e = 0; e < kAcc; ++e) sum[e] = 0.f;
  // This thread's fragment rows: warp w of the warpgroup owns rows 16w..16w+15 of the warpgroup's 64.
  const int frag_m = 64 * (tid / 128) + 16 * (tid / 32 % 4) + lane / 4, q = lane % 4;
  // Group number i holds k-tile i (empty groups past the end keep the count); group 0 the biases too.
  copy_tile_bias(shared_address(tile_bias), bias, n_tile * BN, tid);
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < kKTiles) load_tile(st);
    cp_async_commit();
  }
  for (int kt = 0; kt < kKTiles; ++kt) {
    const int st = kt % STAGES;
    cp_async_wait<STAGES - 2>();
    bulk_wait(&bars[st], (kt / STAGES) & 1);
    __syncthreads();  // tile kt visible; every warpgroup has drained tile kt-1, whose stage is reloaded below
    unsigned big[4][4], small[4][4];
    load_fragments(as + st * kAStageFloats, frag_m, q, big, small);
    multiply_tile(part, big, small, tile_descriptor(shared_address(bs + st * kBBlockFloats)));
    // The gather of tile kt + STAGES - 1 runs while the tensor cores work on tile kt. The products are
    // drained within the iteration: ptxas keeps the A registers of an in-flight wgmma only while no loop
    // back edge lies between it and its wait (an overlapped schedule gave wrong sums once its split moved
    // ahead of the wait).
    if (kt + STAGES - 1 < kKTiles) load_tile(kt + STAGES - 1);
    cp_async_commit();
    wg::wait<0>();
#pragma unroll
    for (int e = 0; e < kAcc; ++e) sum[e] += part[e];
  }
  cp_async_wait<0>();
  store_tile(sum, d, tile_bias, m_first + frag_m, n_tile * BN, q);
}

// ---- entry points: the operands in the family's order, then the workspace (the split B blocks) ------------
#if PASS == 0
extern "C" __global__ void split_filter_kernel(const float* __restrict__ x, const float* __restrict__ filter,
                                               BIAS_PARAM float* __restrict__ y, float* __restrict__ workspace) {
  split_filter<false>(filter, workspace);
}
extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
    wgmma_gemm_kernel(const float* __restrict__ x, const float* __restrict__ filter, BIAS_PARAM float* __restrict__ y,
                      const float* __restrict__ workspace) {
  gemm(x, workspace, bias, y);
}
#else
extern "C" __global__ void split_filter_kernel(const float* __restrict__ dy, const float* __restrict__ filter,
                                               float* __restrict__ dx, float* __restrict__ workspace) {
  split_filter<false>(filter, workspace);
}
extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
    wgmma_gemm_kernel(const float* __restrict__ dy, const float* __restrict__ filter, float* __restrict__ dx,
                      const float* __restrict__ workspace) {
  gemm(dy, workspace, nullptr, dx);
}
#endif
