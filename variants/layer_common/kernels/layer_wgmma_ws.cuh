// Warp-specialized implicit GEMM of the forward, backward-data and backward-filter passes on wgmma (sm_90a).
// Same defines, entry points and workspace as layer_wgmma_gemm.cuh (read it first), plus SMEM_BYTES (the
// launch's dynamic shared memory), PASS 2 (backward-filter: dw's transpose, dy split like a filter; see
// FilterGradGemm) and SPLITS (its t sum in that many parts, the partials after the split dy in the
// workspace, added by split_sum_kernel). It differs in:
//   - blockDim.x = 128 * (WGS + 1): warpgroup 0 produces, warpgroups 1..WGS consume; BM = 64 * WGS.
//   - where C (forward) or K (backward-data) is a multiple of 32, the GEMM's t runs filter-tap major
//     (t = rs * C + c) in the split filter and the gather alike, so a 32-tap tile is one filter tap.
// Roles (split after one __syncthreads; no CTA-wide barrier after it):
//   producer (setmaxnreg.dec): per k-tile waits on empty[st]; thread 0 arrives with expect_tx on full[st] and
//     issues the B bulk copy; every thread gathers its A elements by 4-byte cp.async, then
//     cp.async.mbarrier.arrive.noinc on full[st] (expected count 128 + 1).
//   consumers (setmaxnreg.inc): wait on full, read the A fragments, split, issue the 3xTF32 wgmma's, read the
//     next tile's A (LDS) while they run, drain (wait_group 0), arrive on empty[st] (every consumer thread),
//     sum += part. Every wgmma is drained before the loop's back edge: ptxas protects an in-flight wgmma's
//     A registers only within one iteration.
#include "async_copy.cuh"
#include "layer_wgmma_common.cuh"

// WS_UNROLL 2: the consumer loop takes two tiles through two named fragment buffers, straight-line; 1: one
// tile, the next tile's raw A prefetched by LDS while this one's wgmma's run. 2 spills at WGS 2, BN 128.
#define WS_UNROLL (BN == 64 ? 2 : 1)
static_assert(WGS == 1 || WGS == 2, "WGS: 1 or 2 consumer warpgroups");
constexpr int kConsumerThreads = 128 * WGS, kThreads = kConsumerThreads + 128;
// A's stage layout. Forward and backward-data: As[k][m], a row stride of 8 mod 32 words (conflict-free
// fragment reads, lanes along m in the gather). Backward-filter: As[m][k], a row stride of 36 words (4 mod 32:
// conflict-free fragment reads; the gather runs lanes along t, consecutive q, so its global reads coalesce).
constexpr bool kARowMajor = PASS == 2;
constexpr int kLdA = kARowMajor ? BK + 4 : BM + 8;
constexpr int kAStageFloats = kARowMajor ? BM * kLdA : BK * kLdA;
constexpr bool kMasked = PASS == 0   ? kRS <= igemm::kMaskTaps
                         : PASS == 1 ? (U == 1 && V == 1 && kRS <= igemm::kMaskTaps)
                                     : false;  // backward-filter: the per-tap decode
// The splits of the t sum: split z takes k-tiles [z * kKTiles / SPLITS, (z + 1) * kKTiles / SPLITS), sizes
// differing by at most one.
static_assert(SPLITS == 1 || PASS == 2, "only backward-filter splits its sum");
static_assert(SPLITS <= kKTiles, "every split needs at least one k-tile");
constexpr int kFilterElements = K * C * R * S;  // one split's partial dw (backward-filter)
constexpr int kMSize = PASS == 0 ? N * P * Q : PASS == 1 ? N * H * W : C * R * S;  // the GEMM's rows (Gemm::m_size)
constexpr int kCStride = PASS == 0 ? H * W : P * Q;  // tap offset of one more c (forward) or k (backward-data)
// The producer: lanes along m (coalesced global reads, conflict-free cp.async writes), warp w on taps 8w..8w+7.
constexpr int kTapsPerWarp = BK / 4, kCountF = BM / 32;
// Where the channel extent is a multiple of BK, the GEMM's t runs filter tap (rs) major, channel minor,
// t = rs * kCInner + c, in A and in the split filter alike. A 32-tap tile then has one rs and 32 consecutive
// channels: one mask bit (one predicate) a row and no tap decode; element (row, ki) is base_row + ki *
// kCStride (a 64-bit add: LDGSTS's global immediate only reaches +-2 KB). Else the original order
// t = c * RS + rs with the tap table.
constexpr bool kRsMajor = kMasked && kCInner % BK == 0;
constexpr int kTabEntries = kMasked && !kRsMajor ? kRS + BK - 1 : 0;
// Backward-filter: a table of the tile's BM rows (c, i, j): x offset c*H*W + (i - pad_h)*W + (j - pad_w),
// i - pad_h and j - pad_w (a row past C*R*S gets an i - pad_h that fails every bounds check).
constexpr int kRowEntries = kARowMajor ? BM : 0;
// Shared memory from the 1024-aligned base: B stages (swizzled tiles need 1024-byte alignment), A stages,
// full[STAGES], empty[STAGES], the tap table (int off, unsigned bit), the tile's biases (forward).
constexpr int kBOffset = 0, kAOffset = STAGES * kBCopyBytes, kBarOffset = kAOffset + STAGES * kAStageFloats * 4;
constexpr int kTabOffset = kBarOffset + 16 * STAGES;
constexpr int kBiasOffset = kTabOffset + 8 * kTabEntries + 16 * kRowEntries;
constexpr int kSmemBytes = 1024 + kBiasOffset + kBiasBytes;
static_assert(kSmemBytes <= SMEM_BYTES, "the launch's shared memory does not cover the kernel's carve-up");
static_assert(kBTileBytes % 1024 == 0 && kBCopyBytes % 1024 == 0, "swizzled B tiles must stay 1024-aligned");
static_assert(kBarOffset % 8 == 0, "mbarriers are 8-byte aligned");
static_assert(kTabOffset % 16 == 0, "the row table is read as int4");
// Occupancy and registers. WGS 1: two CTAs a SM where shared memory allows (128 registers at launch);
// WGS 2: one (168). setmaxnreg moves registers within the CTA's pool: kProducerRegs * 128 +
// kConsumerRegs * 128 * WGS <= kLaunchRegs * kThreads; both multiples of 8 in [24, 256].
constexpr int kSmemPerSm = 228 * 1024, kSmemReservedPerCta = 1024;
constexpr int kBlocksBySmem = kSmemPerSm / (SMEM_BYTES + kSmemReservedPerCta);
constexpr int kMinBlocks = WGS == 1 && kBlocksBySmem >= 2 ? 2 : 1;
static_assert(kBlocksBySmem >= 1, "shared memory");
constexpr int kLaunchRegs = (65536 / (kThreads * kMinBlocks) > 255 ? 255 : 65536 / (kThreads * kMinBlocks)) / 8 * 8;
constexpr int kProducerRegs = kMasked ? 40 : 56;  // the per-tap decode keeps whole Gemm::Row's
constexpr int kConsumerRegsRaw = ((WGS + 1) * kLaunchRegs - kProducerRegs) / WGS / 8 * 8;
constexpr int kConsumerRegs = kConsumerRegsRaw > 240 ? 240 : kConsumerRegsRaw;
static_assert(kProducerRegs * 128 + kConsumerRegs * kConsumerThreads <= kLaunchRegs * kThreads, "register pool");
// One CTA of 256 threads (WGS 1, BN 128 at 3-4 stages) launches at the 255 cap already: no increase there.
constexpr bool kConsumerInc = kConsumerRegs > kLaunchRegs;
static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0, "setmaxnreg counts are multiples of 8");

// ---- the gather's own copies, setmaxnreg (mbarriers and bulk copies: async_copy.cuh) ----------------------
// p + off (floats) as one IMAD.WIDE: written in C++, ptxas re-associates it into a 4-instruction LEA chain.
__device__ __forceinline__ const float* offset_ptr(const float* p, int off) {
  const float* r;
  asm("mad.wide.s32 %0, %1, 4, %2;\n" : "=l"(r) : "r"(off), "l"(p));
  return r;
}
// 4 bytes from src to the shared address dst, zeros where (mask & bit) == 0 (src is then not read).
__device__ __forceinline__ void cp_async4_masked(unsigned dst, const float* src, unsigned mask, unsigned bit) {
  asm volatile(
      "{\n .reg .pred skip;\n .reg .b32 t;\n and.b32 t, %2, %3;\n setp.eq.u32 skip, t, 0;\n"
      " cp.async.ca.shared.global [%0], [%1], 4, skip;\n}\n" ::"r"(dst),
      "l"(src), "r"(mask), "r"(bit));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// The k-tiles of split z: all of them, or its part.
__device__ __forceinline__ int first_tile(int z) { return SPLITS == 1 ? 0 : int((long long)z * kKTiles / SPLITS); }
__device__ __forceinline__ int end_tile(int z) {
  return SPLITS == 1 ? kKTiles : int((long long)(z + 1) * kKTiles / SPLITS);
}
// Persistent CTAs: the work is (row tile, split) pairs, w = z * kMTiles + row tile, of the CTA's column tile
// blockIdx.y; CTA x takes w = x, x + gridDim.x, ... (the host launches fewer CTAs than items only where each
// gets two or more), so the next item's first k-tiles are in flight while the consumers finish and store this
// one. (A CTA's own prologue and epilogue took 40% of the consumers' samples on the C64 3x3 layers, 18 k-tiles
// an item. An atomic counter handing out the items measured no better than this round robin.)
constexpr int kMTiles = (kMSize + BM - 1) / BM, kWork = kMTiles * SPLITS;
struct Work {
  int m_first, z;
};
__device__ __forceinline__ Work work(int w) { return {(w % kMTiles) * BM, w / kMTiles}; }

// ---- producer: warpgroup 0 ----------------------------------------------------------------------------------
// Waits until the consumers released stage st (tile kt - STAGES; free at once in round 0), then thread 0
// brings tile kt's B block into it, counted on the stage's full barrier.
__device__ __forceinline__ void claim_stage(unsigned smem_base, unsigned full0, unsigned empty0, const float* b_block,
                                            int st, unsigned ph, int ptid) {
  mbar_wait(empty0 + 8 * st, ph ^ 1);
  if (ptid == 0) {
    mbar_expect_tx(full0 + 8 * st, kBCopyBytes);
    bulk_copy_to(smem_base + kBOffset + st * kBCopyBytes, b_block, kBCopyBytes, full0 + 8 * st);
  }
}
#if PASS == 2
// Backward-filter: the table of the tile's BM rows (kRowEntries), built by the producer for each of its tiles;
// the producer's own barrier puts its reads of the previous tile's table before the writes, and the writes
// before the reads.
__device__ __forceinline__ void build_row_table(int2* tab, int m_first, int ptid) {
  asm volatile("bar.sync 1, 128;\n" ::: "memory");
  for (int r = ptid; r < BM; r += 128) {
    const int m = m_first + r, j = m % S, i = (m / S) % R, c = m / (R * S);
    const int off = c * H * W + (i - PAD_H) * W + (j - PAD_W);
    if constexpr (kRS <= 32)  // (offset, the bit of tap (i, j)); a row past C*R*S has no bit
      tab[r] = make_int2(m < C * R * S ? off : 0, m < C * R * S ? int(1u << (i * S + j)) : 0);
    else  // (offset, i - pad_h, j - pad_w); a row past C*R*S fails every bounds check
      reinterpret_cast<int4*>(tab)[r] = m < C * R * S ? make_int4(off, i - PAD_H, j - PAD_W, 0)
                                                      : make_int4(0, -(1 << 28), 0, 0);
  }
  asm volatile("bar.sync 1, 128;\n" ::: "memory");
}
#endif
// The k-tiles of split z of the GEMM tile at row m_first into the stage ring, from stage st in phase ph
// (advanced past them).
__device__ __forceinline__ void produce_tile(const float* __restrict__ a, const float* __restrict__ b_src,
                                             unsigned smem_base, int2* tab, int m_first, int z, int& st,
                                             unsigned& ph) {
  const DefinedShape s;
  const int ptid = threadIdx.x, lane = ptid % 32, pw = ptid / 32;
  const unsigned full0 = smem_base + kBarOffset, empty0 = full0 + 8 * STAGES;
  // This thread's element (kk = 8 pw + ki, m = lane + 32 fi) of stage 0.
  const unsigned a_dst0 = smem_base + kAOffset + 4 * (kTapsPerWarp * pw * kLdA + lane);
#if PASS != 2  // the masked gathers read Row::off and Row::mask, which backward-filter rows lack
  if constexpr (kRsMajor) {
    const float* base[kCountF];  // a + the row's offset + the offset of channel 8 pw
    unsigned mask[kCountF];
#pragma unroll
    for (int fi = 0; fi < kCountF; ++fi) {
      const Gemm::Row r = Gemm::row(s, m_first + lane + 32 * fi);
      base[fi] = offset_ptr(a, r.off + kTapsPerWarp * pw * kCStride);  // invalid rows: mask 0, never read
      mask[fi] = r.mask;
    }
    int c0 = 0, rs = 0, i = 0, j = 0;  // tile kt: filter tap rs = (i, j), channels c0 .. c0 + 31
#pragma unroll 1
    for (int kt = 0; kt < kKTiles; ++kt) {
      claim_stage(smem_base, full0, empty0, b_src + kt * kBBlockFloats, st, ph, ptid);
      const unsigned dst = a_dst0 + st * (kAStageFloats * 4);
      const int tap_off = c0 * kCStride + (PASS == 0 ? i * W + j : -(i * Q + j));  // = Gemm::tap(c0, i, j).off
      const unsigned bit = 1u << rs;
#pragma unroll
      for (int fi = 0; fi < kCountF; ++fi) {
        const float* p = offset_ptr(base[fi], tap_off);
        const bool valid = (mask[fi] & bit) != 0;
#pragma unroll
        for (int ki = 0; ki < kTapsPerWarp; ++ki)
          cp_async_to<4>(dst + 4 * (ki * kLdA + 32 * fi), p + ki * kCStride, valid);  // channel c0 + 8 pw + ki
      }
      cp_async_arrive_noinc(full0 + 8 * st);
      c0 += BK;
      if (c0 == kCInner) {
        c0 = 0, ++rs;
        if (++j == S) j = 0, ++i;
      }
      if (++st == STAGES) st = 0, ph ^= 1;
    }
  } else if constexpr (kMasked) {
    const float* base[kCountF];  // a + the row's offset + the tile's c0 * kCStride
    unsigned mask[kCountF];
#pragma unroll
    for (int fi = 0; fi < kCountF; ++fi) {
      const Gemm::Row r = Gemm::row(s, m_first + lane + 32 * fi);
      base[fi] = offset_ptr(a, r.off);  // the invalid rows have mask 0 and are never read
      mask[fi] = r.mask;
    }
    int rs0 = 0;  // the tile's first tap is t = c0 * RS + rs0
    const int2* tab_w = tab + kTapsPerWarp * pw;
#pragma unroll 1
    for (int kt = 0; kt < kKTiles; ++kt) {
      claim_stage(smem_base, full0, empty0, b_src + kt * kBBlockFloats, st, ph, ptid);
      const unsigned dst = a_dst0 + st * (kAStageFloats * 4);
      const int2* tab_t = tab_w + rs0;
#pragma unroll
      for (int ki = 0; ki < kTapsPerWarp; ++ki) {
        const int2 e = tab_t[ki];  // warp-uniform: a broadcast LDS.64
        unsigned bit = unsigned(e.y);
        if constexpr (kTSize % BK != 0)
          if (kt * BK + kTapsPerWarp * pw + ki >= kTSize) bit = 0;  // past the end of t (last tile only)
#pragma unroll
        for (int fi = 0; fi < kCountF; ++fi)
          cp_async4_masked(dst + 4 * (ki * kLdA + 32 * fi), offset_ptr(base[fi], e.x), mask[fi], bit);
      }
      cp_async_arrive_noinc(full0 + 8 * st);
      int step = (BK / kRS) * kCStride;
      rs0 += BK % kRS;
      if (rs0 >= kRS) rs0 -= kRS, step += kCStride;
#pragma unroll
      for (int fi = 0; fi < kCountF; ++fi) base[fi] = offset_ptr(base[fi], step);
      if (++st == STAGES) st = 0, ph ^= 1;
    }
  } else
#endif
#if PASS == 2
  {
    // Lanes along t (tap kt*32 + lane), warp pw on rows pw, pw + 4, ...: a warp's 32 copies read consecutive
    // q of one x row (coalesced) and write one As row (conflict-free).
    if constexpr (!Gemm::kTapMajorRows) build_row_table(tab, m_first, ptid);
    const int4* row_tab = reinterpret_cast<const int4*>(tab);
    const unsigned a_dst = smem_base + kAOffset + 4 * (pw * kLdA + lane);
#pragma unroll 1
    for (int kt = first_tile(z); kt < end_tile(z); ++kt) {
      claim_stage(smem_base, full0, empty0, b_src + kt * kBBlockFloats, st, ph, ptid);
      const int t = kt * BK + lane, img = t / (P * Q), pq = t % (P * Q), py = (pq / Q) * U, x0 = (pq % Q) * V;
      const int y0 = t < kTSize ? py : -(1 << 28);  // a tap past the sum is never valid
      const float* tap = offset_ptr(a, t < kTSize ? img * (C * H * W) + py * W + x0 : 0);
      const unsigned dst = a_dst + st * (kAStageFloats * 4);
      if constexpr (Gemm::kTapMajorRows) {
        // One filter tap (i, j) for the whole tile, rows = channels c0 + r: one bounds check a lane, then
        // each row is the lane's x element of the next channel (stride 4 * H * W for this warp's rows).
        const int rs = m_first / C, c0 = m_first % C, i = rs / S, j = rs % S;
        const bool ok = unsigned(y0 + i - PAD_H) < unsigned(H) && unsigned(x0 + j - PAD_W) < unsigned(W);
        const float* src = offset_ptr(tap, (c0 + pw) * (H * W) + (i - PAD_H) * W + (j - PAD_W));
#pragma unroll
        for (int rr = 0; rr < BM / 4; ++rr) cp_async_to<4>(dst + 4 * (4 * rr) * kLdA, src + rr * (4 * H * W), ok);
      } else if constexpr (kRS <= 32) {
        // This lane's taps (i, j) that land inside x, as bit i*S + j; a row's entry is (offset, its bit).
        unsigned y_ok = 0, x_ok = 0, mask = 0;
#pragma unroll
        for (int i = 0; i < R; ++i) y_ok |= unsigned(unsigned(y0 + i - PAD_H) < unsigned(H)) << i;
#pragma unroll
        for (int j = 0; j < S; ++j) x_ok |= unsigned(unsigned(x0 + j - PAD_W) < unsigned(W)) << j;
#pragma unroll
        for (int i = 0; i < R; ++i) mask |= (y_ok >> i & 1u) ? x_ok << (i * S) : 0u;
        const int2* row_bits = reinterpret_cast<const int2*>(tab);
#pragma unroll
        for (int rr = 0; rr < BM / 4; ++rr) {
          const int2 row = row_bits[pw + 4 * rr];  // warp-uniform: a broadcast LDS.64
          cp_async4_masked(dst + 4 * (4 * rr) * kLdA, offset_ptr(tap, row.x), mask, unsigned(row.y));
        }
      } else {
#pragma unroll
        for (int rr = 0; rr < BM / 4; ++rr) {
          const int4 row = row_tab[pw + 4 * rr];  // warp-uniform: a broadcast LDS.128
          const int y = y0 + row.y, x = x0 + row.z;
          cp_async_to<4>(dst + 4 * (4 * rr) * kLdA, offset_ptr(tap, row.x),
                    unsigned(y) < unsigned(H) && unsigned(x) < unsigned(W));
        }
      }
      cp_async_arrive_noinc(full0 + 8 * st);
      if (++st == STAGES) st = 0, ph ^= 1;
    }
  }
#else
  {
    Gemm::Row rows[kCountF];
#pragma unroll
    for (int fi = 0; fi < kCountF; ++fi) rows[fi] = Gemm::row(s, m_first + lane + 32 * fi);
#pragma unroll 1
    for (int kt = first_tile(z); kt < end_tile(z); ++kt) {
      claim_stage(smem_base, full0, empty0, b_src + kt * kBBlockFloats, st, ph, ptid);
      const unsigned dst = a_dst0 + st * (kAStageFloats * 4);
#pragma unroll
      for (int ki = 0; ki < kTapsPerWarp; ++ki) {
        const Gemm::Tap tap = Gemm::tap(s, kt * BK + kTapsPerWarp * pw + ki);
#pragma unroll
        for (int fi = 0; fi < kCountF; ++fi) {
          int off;
          const bool valid = Gemm::a_at(s, rows[fi], tap, off);
          cp_async_to<4>(dst + 4 * (ki * kLdA + 32 * fi), a + off, valid);
        }
      }
      cp_async_arrive_noinc(full0 + 8 * st);
      if (++st == STAGES) st = 0, ph ^= 1;
    }
  }
#endif
}
__device__ __forceinline__ void producer(const float* __restrict__ a, const float* __restrict__ b_blocks,
                                         const float* __restrict__ bias, unsigned smem_base, int2* tab, int n_tile) {
  // Counted by this thread's first arrive on full[0], which every consumer waits for before its first tile.
  copy_tile_bias(smem_base + kBiasOffset, bias, n_tile * BN, threadIdx.x);
  const float* b_src = b_blocks + n_tile * kKTiles * kBBlockFloats;
  int st = 0;
  unsigned ph = 0;
#pragma unroll 1
  for (int w = blockIdx.x; w < kWork; w += gridDim.x) {
    const Work t = work(w);
    produce_tile(a, b_src, smem_base, tab, t.m_first, t.z, st, ph);
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");  // exit with no copy of this thread in flight
}

// ---- consumers: warpgroups 1..WGS ---------------------------------------------------------------------------
struct Frag {
  unsigned big[4][4], small[4][4];
};
struct Raw {
  float v[4][4];
};

// The A elements of one k-tile (four k8 steps) for this thread: rows frag_m (+8), k = q (+4).
__device__ __forceinline__ void read_tile(const float* a, Raw& r) {
  constexpr int kStepM = kARowMajor ? kLdA : 1, kStepK = kARowMajor ? 1 : kLdA;  // element (m, k) at m*kStepM + k*kStepK
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    r.v[ks][0] = a[8 * ks * kStepK];
    r.v[ks][1] = a[8 * ks * kStepK + 8 * kStepM];
    r.v[ks][2] = a[(8 * ks + 4) * kStepK];
    r.v[ks][3] = a[(8 * ks + 4) * kStepK + 8 * kStepM];
  }
}
__device__ __forceinline__ void split(const Raw& r, Frag& f) {
#pragma unroll
  for (int ks = 0; ks < 4; ++ks)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      f.big[ks][j] = round_tf32(r.v[ks][j]);
      f.small[ks][j] = __float_as_uint(r.v[ks][j] - __uint_as_float(f.big[ks][j]));
      // Pins the split ahead of the next asm volatile: without it NVVM sinks the rounding past wgmma.fence,
      // in between the wgmma's, and ptxas injects warpgroup.arrive's (C7519).
      asm volatile("" : "+r"(f.big[ks][j]), "+r"(f.small[ks][j])::"memory");
    }
}

// One GEMM tile's k-tiles of split z from stage st in phase ph (advanced past them), summed into `sum`.
__device__ __forceinline__ void consume_tile(float (&sum)[kAcc], unsigned smem_base, const float* a_frag, int z,
                                             int& st, unsigned& ph) {
  const unsigned full0 = smem_base + kBarOffset, empty0 = full0 + 8 * STAGES;
  const unsigned long long desc0 = tile_descriptor(smem_base + kBOffset);
  float part[kAcc];
#pragma unroll
  for (int e = 0; e < kAcc; ++e) sum[e] = 0.f;
  auto advance = [](int& st, unsigned& ph) {
    if (++st == STAGES) st = 0, ph ^= 1;
  };
  auto issue = [&](const Frag& f, int st) { multiply_tile(part, f.big, f.small, desc0 + st * (kBCopyBytes >> 4)); };
  // Drains the wgmma's, adds the tile to the sum and releases stage st (every consumer thread). In this source
  // order ptxas 13.0 puts the arrive right after the WARPGROUP.DEPBAR; with the arrive first in the source
  // it sank it below the split, ~80 instructions later.
  auto drain_release = [&](int st) {
    wg::wait<0>();
#pragma unroll
    for (int e = 0; e < kAcc; ++e) asm volatile("" : "+f"(part[e])::"memory");  // no read of part before the wait
#pragma unroll
    for (int e = 0; e < kAcc; ++e) sum[e] += part[e];
    // Every thread arrives (mbarrier.arrive releases only the arriving thread's own reads; one arrive a warp
    // after __syncwarp drew racecheck hazards against the producer's next copies into the stage).
    mbar_arrive(empty0 + 8 * st);
  };
  // Waits for tile (st1, ph1) and reads it, while the wgmma's issued before run.
  auto fetch = [&](Raw& r, int st1, unsigned ph1) {
    mbar_wait(full0 + 8 * st1, ph1);
    read_tile(a_frag + st1 * kAStageFloats, r);
  };
  Raw raw;
  fetch(raw, st, ph);
#if WS_UNROLL == 2
  // Tile k: issue from f_cur, fetch and split k+1 into f_next, drain k; two tiles a trip, nothing in flight
  // at the back edge. (ptxas 13.0 gives f0 and f1 the same registers and sinks the split below the
  // WARPGROUP.DEPBAR: what overlaps is the barrier wait and the LDS, and the sum's FADDs with the next tile.)
  Frag f0, f1;
  split(raw, f0);
  auto step = [&](const Frag& f_cur, Frag& f_next, int st, int st1, unsigned ph1) {
    issue(f_cur, st);
    Raw r;
    fetch(r, st1, ph1);
    split(r, f_next);
    drain_release(st);
  };
  const int tiles = end_tile(z) - first_tile(z);
  const int pairs = (tiles - 1) / 2;  // pairs while a tile remains after the pair
#pragma unroll 1
  for (int i = 0; i < pairs; ++i) {
    int st1 = st, st2;
    unsigned ph1 = ph, ph2;
    advance(st1, ph1);
    st2 = st1, ph2 = ph1;
    advance(st2, ph2);
    step(f0, f1, st, st1, ph1);
    step(f1, f0, st1, st2, ph2);
    st = st2, ph = ph2;
  }
  if (tiles - 2 * pairs == 2) {
    int st1 = st;
    unsigned ph1 = ph;
    advance(st1, ph1);
    step(f0, f1, st, st1, ph1);
    issue(f1, st1);
    drain_release(st1);
    st = st1, ph = ph1;
  } else {
    issue(f0, st);
    drain_release(st);
  }
#else
  // Tile k: split (its A registers are free: the previous tile drained), issue, fetch k+1's raw elements,
  // drain. The in-flight window writes no wgmma operand at all.
  Frag f;
#pragma unroll 1
  for (int kt = first_tile(z); kt < end_tile(z) - 1; ++kt) {
    int st1 = st;
    unsigned ph1 = ph;
    advance(st1, ph1);
    split(raw, f);
    issue(f, st);
    fetch(raw, st1, ph1);
    drain_release(st);
    st = st1, ph = ph1;
  }
  split(raw, f);
  issue(f, st);
  drain_release(st);
#endif
  advance(st, ph);
}

// d: the output, or with SPLITS > 1 the first split's partial, the others after it.
__device__ __forceinline__ void consumer(const float* tile_bias, float* __restrict__ d, unsigned smem_base,
                                         const float* as, int n_tile) {
  const int ctid = threadIdx.x - 128, lane = ctid % 32;
  // Warp w of consumer warpgroup g owns rows 64 g + 16 w .. + 15 of the tile.
  const int frag_m = 64 * (ctid / 128) + 16 * (ctid / 32 % 4) + lane / 4, q = lane % 4;
  const float* a_frag = kARowMajor ? as + frag_m * kLdA + q : as + q * kLdA + frag_m;  // stage 0
  int st = 0;
  unsigned ph = 0;
#pragma unroll 1
  for (int w = blockIdx.x; w < kWork; w += gridDim.x) {  // as the producer's
    const Work t = work(w);
    float sum[kAcc];
    consume_tile(sum, smem_base, a_frag, t.z, st, ph);
    store_tile(sum, d + (long long)t.z * kFilterElements, tile_bias, t.m_first + frag_m, n_tile * BN, q);
  }
}

__device__ __forceinline__ void gemm(const float* __restrict__ a, const float* __restrict__ b_blocks,
                                     const float* __restrict__ bias, float* __restrict__ d) {
  // Dynamic shared memory is only promised 16-byte alignment; the swizzled tiles need 1024 (kSmemBytes
  // includes 1024 bytes of slack).
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (shared_address(smem_raw) & 1023)) & 1023);
  const unsigned smem_base = shared_address(smem);
  const int tid = threadIdx.x, n_tile = blockIdx.y;
  int2* tab = reinterpret_cast<int2*>(smem + kTabOffset);
#if PASS != 2
  if constexpr (kMasked) {
    const DefinedShape s;
    // Entry e: tap e of c (or k) = 0, as Gemm::tap computes it (linear in c, so valid for e >= RS too).
    for (int e = tid; e < kTabEntries; e += kThreads) tab[e] = make_int2(Gemm::tap(s, e).off, int(1u << (e % kRS)));
  }
#endif
  if (tid == 0) {
    for (int st = 0; st < STAGES; ++st) {
      mbar_init(smem_base + kBarOffset + 8 * st, 128 + 1);                   // full: 128 noinc + expect_tx
      mbar_init(smem_base + kBarOffset + 8 * (STAGES + st), kConsumerThreads);  // empty: every consumer
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (tid < 128) {
    setmaxnreg_dec<kProducerRegs>();
    producer(a, b_blocks, bias, smem_base, tab, n_tile);
  } else {
    if constexpr (kConsumerInc) setmaxnreg_inc<kConsumerRegs>();
    consumer(reinterpret_cast<const float*>(smem + kBiasOffset), d, smem_base,
             reinterpret_cast<const float*>(smem + kAOffset), n_tile);
  }
}

// ---- entry points (as layer_wgmma_gemm.cuh) -----------------------------------------------------------------
#if PASS == 0
extern "C" __global__ void split_filter_kernel(const float* __restrict__ x, const float* __restrict__ filter,
                                               BIAS_PARAM float* __restrict__ y, float* __restrict__ workspace) {
  split_filter<kRsMajor>(filter, workspace);
}
extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
    wgmma_gemm_kernel(const float* __restrict__ x, const float* __restrict__ filter, BIAS_PARAM float* __restrict__ y,
                      const float* __restrict__ workspace) {
  gemm(x, workspace, bias, y);
}
#elif PASS == 1
extern "C" __global__ void split_filter_kernel(const float* __restrict__ dy, const float* __restrict__ filter,
                                               float* __restrict__ dx, float* __restrict__ workspace) {
  split_filter<kRsMajor>(filter, workspace);
}
extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
    wgmma_gemm_kernel(const float* __restrict__ dy, const float* __restrict__ filter, float* __restrict__ dx,
                      const float* __restrict__ workspace) {
  gemm(dy, workspace, nullptr, dx);
}
#else
// Backward-filter: dy is split like a filter; the workspace holds its blocks, then SPLITS partial dw's.
constexpr long long kSplitDyFloats = (long long)kNTiles * kKTiles * kBBlockFloats;
extern "C" __global__ void split_filter_kernel(const float* __restrict__ x, const float* __restrict__ dy,
                                               float* __restrict__ dw, float* __restrict__ workspace) {
  split_filter<kRsMajor>(dy, workspace);
}
extern "C" __global__ void __launch_bounds__(kThreads, kMinBlocks)
    wgmma_gemm_kernel(const float* __restrict__ x, const float* __restrict__ dy, float* __restrict__ dw,
                      float* __restrict__ workspace) {
  float* out = SPLITS > 1 ? workspace + kSplitDyFloats : dw;
  gemm(x, workspace, nullptr, out);
}
// dw = the splits' partials added in split order: deterministic, no atomics.
extern "C" __global__ void split_sum_kernel(const float* __restrict__ x, const float* __restrict__ dy,
                                            float* __restrict__ dw, const float* __restrict__ workspace) {
  const float* partial = workspace + kSplitDyFloats;
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < kFilterElements; e += gridDim.x * blockDim.x) {
    float sum = 0.f;
    for (int split = 0; split < SPLITS; ++split) sum += partial[(long long)split * kFilterElements + e];
    dw[e] = sum;
  }
}
#endif
