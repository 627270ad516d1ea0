// conv2d, beyond the seeds: a block walks down a column strip of the image, TY output rows a step, and
// stages input rows STAGES - 1 steps ahead with cp.async into a ring of shared-memory rows. The global
// loads of later steps overlap this step's FMAs (register_tiled loads a tile, waits, then computes), and
// each input row is fetched once per strip segment rather than once per tile with a 2r-row halo.
// The FMAs are register_tiled's: a PY x PX patch a thread, taps from constant memory as FMA operands,
// each input row read from shared memory as float4s and serving up to PY output rows.
// Staging: on sm_90 with rows of 4-float multiples, one thread issues a bulk copy per row (cp.async.bulk)
// completing on the step's mbarrier, so the other threads issue no copies (only zero fills of rows outside
// the image); elsewhere every thread issues cp.async copies (16 bytes where rows allow, else 4).
// Compile-time: RADIUS, BLOCK_X, BLOCK_Y, PX (a multiple of 4), PY, STAGES (>= 2). The rows a block
// walks follow from gridDim.y, so the segment length is a launch choice, not a recompile.
#include "async_copy.cuh"

#define FW (2 * RADIUS + 1)
#define TX (BLOCK_X * PX)
#define TY (BLOCK_Y * PY)
#define THREADS (BLOCK_X * BLOCK_Y)
#define LEAD (((RADIUS + 3) / 4) * 4)  // staged columns start this far left of the strip: 16-byte aligned
#define SKEW (LEAD - RADIUS)           // floats of a window before its first tap
#define WIN (((SKEW + PX + 2 * RADIUS) + 3) / 4 * 4)  // a window, read as float4s from an aligned column
#define VEC_COLS ((TX - PX + WIN) / 4)  // float4s in a staged row: the last thread's window ends there
#define PITCH (4 * VEC_COLS)
#define RING (STAGES * TY + 2 * RADIUS)  // live rows: this step's TY + 2r and STAGES - 1 steps ahead
__constant__ float c_filter[FW * FW];

// What staging needs of a block: its strip and the image. Staged row t is image row ybase + t; staged
// column c is image column xa + c. Image columns lie in staged columns [lo, hi).
struct Strip {
  const float* in;
  float* ring;
  unsigned long long* bars;  // bulk: one mbarrier per stage
  int ybase, xa, lo, hi, h, w;
  bool vec, bulk;  // vec: 16-byte copies (4-float rows, aligned input); bulk: bulk copies (and vec)
};

// Stages `count` rows from staged row t0 into their ring slots (zeros outside the image): the rows of
// chunk `chunk`. Bulk: rows outside the image are zero-filled by all threads (their columns outside the
// image are zero from the start), one thread copies the rest and arrives on the chunk's mbarrier, even
// with nothing to copy, so that its phases count chunks.
__device__ __forceinline__ void stage_rows(const Strip& s, int t0, int count, int chunk, int tid) {
  if (s.bulk) {
    const int first = max(t0, -s.ybase), last = min(t0 + count, s.h - s.ybase);  // rows inside the image
    if (first > t0 || last < t0 + count) {
      for (int t = t0; t < t0 + count; ++t)
        if (t < first || t >= last)
          for (int c = s.lo + tid; c < s.hi; c += THREADS) s.ring[t % RING * PITCH + c] = 0.0f;
      bulk_fence();
    }
    if (tid != 0) return;
    unsigned long long* bar = s.bars + chunk % STAGES;
    const unsigned bytes = 4u * unsigned(s.hi - s.lo);
    bulk_expect(bar, last > first ? unsigned(last - first) * bytes : 0u);
    for (int t = first; t < last; ++t)
      bulk_copy(s.ring + t % RING * PITCH + s.lo, s.in + (long long)(s.ybase + t) * s.w + s.xa + s.lo, bytes, bar);
    return;
  }
  cp_async_image_rows([&](int k) { return s.ring + (t0 + k) % RING * PITCH; }, s.in, s.ybase + t0, s.xa, count, PITCH,
                      s.h, s.w, s.vec, tid, THREADS);
  cp_async_commit();
}

// This thread's PY x PX outputs of one step: input row i of its patch sits in ring slot `slot + i`
// (wrapped), and serves output row j through filter row i - j.
__device__ __forceinline__ void compute_patch(const float* ring, int slot, int sx, float (&acc)[PY][PX]) {
#pragma unroll
  for (int j = 0; j < PY; ++j)
#pragma unroll
    for (int q = 0; q < PX; ++q) acc[j][q] = 0.0f;
#pragma unroll
  for (int i = 0; i < PY + 2 * RADIUS; ++i) {
    const int s = slot + i < RING ? slot + i : slot + i - RING;
    const float* row = ring + s * PITCH + sx;
    float win[WIN];
#pragma unroll
    for (int k = 0; k < WIN / 4; ++k) {
      const float4 t = *reinterpret_cast<const float4*>(row + 4 * k);
      win[4 * k] = t.x, win[4 * k + 1] = t.y, win[4 * k + 2] = t.z, win[4 * k + 3] = t.w;
    }
#pragma unroll
    for (int j = 0; j < PY; ++j) {
      const int m = i - j;
      if (m >= 0 && m < FW) {
#pragma unroll
        for (int n = 0; n < FW; ++n) {
          const float f = c_filter[m * FW + n];
#pragma unroll
          for (int q = 0; q < PX; ++q) acc[j][q] += f * win[SKEW + q + n];
        }
      }
    }
  }
}

__device__ __forceinline__ void store_patch(float* __restrict__ out, const float (&acc)[PY][PX], int row0, int col0,
                                            int h, int w, bool vec) {
#pragma unroll
  for (int j = 0; j < PY; ++j) {
    if (row0 + j >= h) break;
    float* dst = out + (long long)(row0 + j) * w + col0;
    if (vec && col0 + PX <= w) {
#pragma unroll
      for (int k = 0; k < PX / 4; ++k)
        *reinterpret_cast<float4*>(dst + 4 * k) =
            make_float4(acc[j][4 * k], acc[j][4 * k + 1], acc[j][4 * k + 2], acc[j][4 * k + 3]);
    } else {
#pragma unroll
      for (int q = 0; q < PX; ++q)
        if (col0 + q < w) dst[q] = acc[j][q];
    }
  }
}

// Bulk staging's setup: the ring's columns outside the image zeroed (the copies never write them, so they
// stay zero) and the mbarriers made. A strip inside the image zeroes nothing: zeroing its whole ring cost
// a short segment about as many shared-memory writes as its copies. (lo and hi are multiples of 4 here.)
__device__ __forceinline__ void bulk_setup(const Strip& s, int tid) {
  if (s.lo > 0 || s.hi < PITCH) {
    for (int e = tid; e < RING * VEC_COLS; e += THREADS) {
      const int c = 4 * (e % VEC_COLS);
      if (c < s.lo || c >= s.hi) reinterpret_cast<float4*>(s.ring)[e] = make_float4(0, 0, 0, 0);
    }
    bulk_fence();
  }
  if (tid == 0)
    for (int b = 0; b < STAGES; ++b) bulk_init(s.bars + b);
  __syncthreads();
}

extern "C" __global__ void __launch_bounds__(THREADS)
conv2d_kernel(const float* __restrict__ in, const float* __restrict__, float* __restrict__ out, int h, int w) {
  in += (long long)blockIdx.z * h * w;  // image blockIdx.z of a batch (grid.z = b)
  out += (long long)blockIdx.z * h * w;
  extern __shared__ float4 smem_f4[];  // 16-byte aligned, as 16-byte and bulk copies need; the ring, then
  float* ring = reinterpret_cast<float*>(smem_f4);  // STAGES mbarriers
  const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
  const int all_steps = (h + TY - 1) / TY;
  const int seg_steps = (all_steps + gridDim.y - 1) / gridDim.y;
  const int first_step = blockIdx.y * seg_steps;
  const int steps = min(seg_steps, all_steps - first_step);
  if (steps <= 0) return;
  const int y_first = first_step * TY;  // this block's first output row
  const int xa = blockIdx.x * TX - LEAD;
  const bool vec_in = w % 4 == 0 && reinterpret_cast<unsigned long long>(in) % 16 == 0;
  const bool vec_out = w % 4 == 0 && reinterpret_cast<unsigned long long>(out) % 16 == 0;
  const Strip strip{in, ring, reinterpret_cast<unsigned long long*>(ring + RING * PITCH), y_first - RADIUS, xa,
                    max(0, -xa), min(PITCH, w - xa), h, w, vec_in, kHasBulkCopy && vec_in};
  if (strip.bulk) bulk_setup(strip, tid);

  // Prologue: step 0's whole window (its TY rows and r on each side), then the new rows of steps 1 .. STAGES - 2
  // (empty chunks past the last step keep the cp.async groups and mbarrier phases in step).
  stage_rows(strip, 0, TY + 2 * RADIUS, 0, tid);
#pragma unroll
  for (int c = 1; c < STAGES - 1; ++c) stage_rows(strip, c * TY + 2 * RADIUS, c < steps ? TY : 0, c, tid);

  const int sx = threadIdx.x * PX, sy = threadIdx.y * PY;
  int slot = 0;  // ring slot of this step's first staged row
#pragma unroll 1
  for (int s = 0; s < steps; ++s) {
    if (strip.bulk)
      bulk_wait(strip.bars + s % STAGES, unsigned(s / STAGES) & 1u);
    else
      cp_async_wait<STAGES - 2>();
    // Step s's rows are visible to all, and every thread is past step s - 1, whose rows the next copies
    // overwrite (the ring holds STAGES * TY + 2r rows: step s's window begins right after them).
    __syncthreads();
    const int ahead = s + STAGES - 1;
    stage_rows(strip, ahead * TY + 2 * RADIUS, ahead < steps ? TY : 0, ahead, tid);
    float acc[PY][PX];
    compute_patch(ring, slot + sy < RING ? slot + sy : slot + sy - RING, sx, acc);
    store_patch(out, acc, y_first + s * TY + sy, blockIdx.x * TX + sx, h, w, vec_out);
    slot = slot + TY < RING ? slot + TY : slot + TY - RING;
  }
}
