// conv2d, for batches of small images (and any image): a block stages a band of BAND whole image rows and
// its 2r halo rows in shared memory, then computes the band's outputs from there. Whole rows of one image are
// contiguous, so on sm_90 (rows of 4-float multiples, an aligned image) one thread stages a band with a
// single bulk copy (cp.async.bulk) of its rows inside the image; the rows outside it are never read (the
// sums skip them). Elsewhere every thread issues cp.async copies (16 bytes where rows allow, else 4; zeros
// outside the image). No column halo: a band is the image's full width, so its left and right borders are
// the image's. A thread computes 4 adjacent columns of PY rows (PY + 2r input rows, each read from shared
// memory as the float4s of its columns and of its neighbours' for the halo), taps in registers from the
// filter argument.
// The work is (band, image) items. STAGES 1: one block an item (blockIdx.x the band, blockIdx.z the image),
// the many small blocks resident on an SM keeping the copies in flight. STAGES 2 (bulk copies only; other
// layouts take one stage and wait): blocks as many as fit, each taking items x, x + gridDim.x, ..., with two
// stages, the next item's copy in flight while this one's sums run (where registers limit the resident
// blocks, r >= 2, a block's copy and its sums no longer alternate with idle memory).
// Compile-time: RADIUS (0..4: the halo within one neighbouring float4), BAND (a multiple of PY), PY,
// THREADS (the block, 1-D), STAGES (1 or 2).
#include "async_copy.cuh"

#define FW (2 * RADIUS + 1)
#define STAGED (BAND + 2 * RADIUS)  // shared-memory rows: image rows y0 - r .. y0 + BAND + r - 1
static_assert(RADIUS >= 0 && RADIUS <= 4, "the halo comes from one neighbouring float4");
static_assert(BAND % PY == 0, "a band is whole groups of PY rows");
static_assert(STAGES == 1 || STAGES == 2, "a block a band, or persistent blocks of two stages");

struct Band {
  int y0;                   // its first image row
  long long image_offset;   // of its image, in floats
};

__device__ __forceinline__ Band band_of(int item, int bands, int h, int w) {
  const int image = item / bands;
  return {(item - image * bands) * BAND, (long long)image * h * w};
}

// The band's rows inside the image by one bulk copy into `rows` (shared row t: image row y0 - r + t), counted
// on `bar`. One thread.
__device__ __forceinline__ void bulk_stage(float* rows, unsigned long long* bar, const float* __restrict__ in, Band b,
                                           int h, int w, int pitch) {
  const int first = max(0, RADIUS - b.y0), last = min(STAGED, h - b.y0 + RADIUS);
  const unsigned bytes = last > first ? 4u * unsigned(last - first) * unsigned(w) : 0u;
  bulk_expect(bar, bytes);
  if (bytes) bulk_copy(rows + first * pitch, in + b.image_offset + (long long)(b.y0 - RADIUS + first) * w, bytes, bar);
}

// The band's rows by every thread's cp.async copies, zeros outside the image and past column w; waited for.
__device__ __forceinline__ void copy_stage(float* rows, const float* __restrict__ in, Band b, int h, int w, int pitch,
                                           bool vec, int tid) {
  cp_async_image_rows([&](int t) { return rows + t * pitch; }, in + b.image_offset, b.y0 - RADIUS, 0, STAGED, pitch, h,
                      w, vec, tid, THREADS);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
}

__device__ __forceinline__ float4 row_quad(const float* row, int x, int pitch) {
  return x >= 0 && x < pitch ? *reinterpret_cast<const float4*>(row + x) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

__device__ __forceinline__ void store_quad(float* __restrict__ p, const float (&acc)[4], int x, int w, bool vec) {
  if (vec) {
    *reinterpret_cast<float4*>(p) = make_float4(acc[0], acc[1], acc[2], acc[3]);
  } else {
#pragma unroll
    for (int c = 0; c < 4; ++c)
      if (x + c < w) p[c] = acc[c];
  }
}

// The band's outputs from its staged rows. Rows outside the image count as zeros whatever shared memory holds.
__device__ __forceinline__ void compute_band(const float* rows, Band b, const float (&taps)[FW * FW],
                                             float* __restrict__ out, int h, int w, int pitch, bool vec_out, int tid) {
  const int quads = pitch / 4, band_rows = min(BAND, h - b.y0);
  for (int u = tid; u < (BAND / PY) * quads; u += THREADS) {
    const int g = u / quads, x = 4 * (u - g * quads);
    if (g * PY >= band_rows) break;  // u only grows
    float acc[PY][4];
#pragma unroll
    for (int o = 0; o < PY; ++o)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[o][c] = 0.0f;
#pragma unroll
    for (int j = 0; j < PY + 2 * RADIUS; ++j) {  // shared row g * PY + j serves output rows j - 2r .. j
      const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      const bool inside = unsigned(b.y0 - RADIUS + g * PY + j) < unsigned(h);
      const float* row = rows + (g * PY + j) * pitch;
      const float4 l = RADIUS > 0 && inside ? row_quad(row, x - 4, pitch) : zero;
      const float4 m = inside ? *reinterpret_cast<const float4*>(row + x) : zero;
      const float4 r = RADIUS > 0 && inside ? row_quad(row, x + 4, pitch) : zero;
      const float v[12] = {l.x, l.y, l.z, l.w, m.x, m.y, m.z, m.w, r.x, r.y, r.z, r.w};
#pragma unroll
      for (int o = 0; o < PY; ++o) {
        const int dy = j - o;
        if (dy < 0 || dy > 2 * RADIUS) continue;
#pragma unroll
        for (int dx = 0; dx < FW; ++dx)
#pragma unroll
          for (int c = 0; c < 4; ++c) acc[o][c] = fmaf(taps[dy * FW + dx], v[4 + c - RADIUS + dx], acc[o][c]);
      }
    }
#pragma unroll
    for (int o = 0; o < PY; ++o)
      if (g * PY + o < band_rows)
        store_quad(out + b.image_offset + (long long)(b.y0 + g * PY + o) * w + x, acc[o], x, w, vec_out);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
conv2d_kernel(const float* __restrict__ in, const float* __restrict__ filter, float* __restrict__ out, int h, int w,
              int batch) {
  extern __shared__ __align__(128) float rows[];  // STAGES stages of STAGED * pitch floats
  __shared__ unsigned long long full[2];
  float taps[FW * FW];
#pragma unroll
  for (int i = 0; i < FW * FW; ++i) taps[i] = __ldg(filter + i);
  const int tid = threadIdx.x, pitch = (w + 3) & ~3, bands = (h + BAND - 1) / BAND;
  const bool vec = (w & 3) == 0 && (reinterpret_cast<unsigned long long>(in) & 15) == 0;
  const bool vec_out = (w & 3) == 0 && (reinterpret_cast<unsigned long long>(out) & 15) == 0;
  const bool bulk = kHasBulkCopy && vec;
  if (bulk) {
    if (tid == 0) {
      bulk_init(&full[0]);
      bulk_init(&full[1]);
    }
    __syncthreads();  // the barriers' initialisation before any wait
  }
  if (STAGES == 1) {
    const Band b = band_of(blockIdx.z * bands + blockIdx.x, bands, h, w);
    if (bulk) {
      if (tid == 0) bulk_stage(rows, &full[0], in, b, h, w, pitch);
      bulk_wait(&full[0], 0);
    } else {
      copy_stage(rows, in, b, h, w, pitch, vec, tid);
    }
    compute_band(rows, b, taps, out, h, w, pitch, vec_out, tid);
    return;
  }
  const int items = bands * batch, stride = gridDim.x;
  if (!bulk) {  // one stage, waited for
    for (int item = blockIdx.x; item < items; item += stride) {
      const Band b = band_of(item, bands, h, w);
      copy_stage(rows, in, b, h, w, pitch, vec, tid);
      compute_band(rows, b, taps, out, h, w, pitch, vec_out, tid);
      __syncthreads();  // every read of the stage before the next item's copies
    }
    return;
  }
  float* stage[2] = {rows, rows + STAGED * pitch};
  if (tid == 0)
    for (int s = 0; s < 2; ++s)
      if (blockIdx.x + s * stride < items)
        bulk_stage(stage[s], &full[s], in, band_of(blockIdx.x + s * stride, bands, h, w), h, w, pitch);
  int i = 0;
  for (int item = blockIdx.x; item < items; item += stride, ++i) {
    const int s = i & 1;
    bulk_wait(&full[s], (i >> 1) & 1);  // the stage's (i / 2)-th fill
    compute_band(stage[s], band_of(item, bands, h, w), taps, out, h, w, pitch, vec_out, tid);
    __syncthreads();  // every read of stage s before it is filled again
    if (tid == 0 && item + 2 * stride < items)
      bulk_stage(stage[s], &full[s], in, band_of(item + 2 * stride, bands, h, w), h, w, pitch);
  }
}
