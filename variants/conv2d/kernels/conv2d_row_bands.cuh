// conv2d, for batches of small images (and any image): a block stages a band of BAND whole image rows and
// its 2r halo rows in shared memory, then computes the band's outputs from there. On sm_90 (rows of 4-float
// multiples, an aligned image, 64 columns or more) the lanes of one warp stage the band's rows inside the
// image by bulk copies (cp.async.bulk), a row each; elsewhere every thread issues cp.async copies (16 bytes
// where rows allow, else 4). Stage rows outside the image are zeros, and each row has 4 zeros either side,
// so the sums read any row without a test. No column halo: a band is the image's full width, so its left and
// right borders are the image's. A thread computes 4 adjacent columns of PY rows (PY + 2r input rows, each
// read from shared memory as the float4s of its columns and of its neighbours' for the halo), taps in
// registers from the filter argument.
// The work is (band, image) items. STAGES 1: one block an item (blockIdx.x the band, blockIdx.z the image),
// the many small blocks resident on an SM keeping the copies in flight. STAGES 2 (bulk copies only; other
// layouts take one stage and wait): persistent blocks, each taking items x, x + gridDim.x, ..., with two
// stages, the next item's copy in flight while this one's sums run (where registers limit the resident
// blocks, r >= 2, a block's copy and its sums no longer alternate with idle memory).
// Compile-time: RADIUS (0..4: the halo within one neighbouring float4), BAND (a multiple of PY), PY,
// THREADS (the block, 1-D), STAGES (1 or 2).
#include "async_copy.cuh"

#define FW (2 * RADIUS + 1)
#define STAGED (BAND + 2 * RADIUS)  // shared-memory rows: image rows y0 - r .. y0 + BAND + r - 1
// Bulk copies from rows this wide. On an H200 at r = 3, a bulk copy a row against cp.async: 32 columns 0.063
// against 0.057 ms (16384 images), 128 columns 0.050 against 0.051, 512 columns 0.048 against 0.062 (two stages).
constexpr int kBulkMinWidth = 64;
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

// A stage in shared memory: 4 zeros, then STAGED rows of spitch = pitch + 4 floats, each its pitch floats and
// 4 zeros that are also the next row's left border. Rows outside the image are zeros too, so a thread reads its
// columns and both neighbouring float4s of any row without a test (the SASS of a test a row: about 30
// instructions to the row's 28 multiply-adds a thread at r = 3, PY = 4).
__device__ __forceinline__ int stage_floats(int spitch) { return 4 + STAGED * spitch; }
__device__ __forceinline__ float* stage_row(float* stage, int t, int spitch) { return stage + 4 + t * spitch; }

// The stage rows of image rows [0, h): t in [first, last).
__device__ __forceinline__ int first_inside(Band b) { return max(0, RADIUS - b.y0); }
__device__ __forceinline__ int last_inside(Band b, int h) { return min(STAGED, h - b.y0 + RADIUS); }

// The borders: 4 zeros before each row and after the last. Once a stage (copies never write them).
__device__ __forceinline__ void zero_borders(float* stage, int spitch, int tid) {
  for (int t = tid; t <= STAGED; t += THREADS)
    *reinterpret_cast<float4*>(stage + t * spitch) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

// The band's stage rows outside the image as zeros (bulk copies write only the rows inside).
__device__ __forceinline__ void zero_outside(float* stage, Band b, int h, int spitch, int tid) {
  const int quads = (spitch - 4) / 4, first = first_inside(b), last = last_inside(b, h);
  const int outside = first + (STAGED - last);
  for (int e = tid; e < outside * quads; e += THREADS) {
    const int k = e / quads, t = k < first ? k : last + (k - first);
    *reinterpret_cast<float4*>(stage_row(stage, t, spitch) + 4 * (e - k * quads)) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
}

// The band's rows inside the image, a bulk copy a row (rows of 4-float multiples), counted on `bar`. The 32
// lanes of one warp, lane 0 arriving with the bytes expected before any copy is issued.
__device__ __forceinline__ void bulk_stage(float* stage, unsigned long long* bar, const float* __restrict__ in, Band b,
                                           int h, int w, int spitch, int lane) {
  const int first = first_inside(b), last = last_inside(b, h);
  if (lane == 0) bulk_expect(bar, 4u * unsigned(last - first) * unsigned(w));
  __syncwarp();
  bulk_fence();  // each issuing lane orders the block's earlier reads of the stage (after a barrier) before its copies
  for (int t = first + lane; t < last; t += 32)
    bulk_copy(stage_row(stage, t, spitch), in + b.image_offset + (long long)(b.y0 - RADIUS + t) * w, 4u * unsigned(w), bar);
}

// The band's rows by every thread's cp.async copies, zeros outside the image and past column w; waited for.
__device__ __forceinline__ void copy_stage(float* stage, const float* __restrict__ in, Band b, int h, int w, int spitch,
                                           bool vec, int tid) {
  cp_async_image_rows([&](int t) { return stage_row(stage, t, spitch); }, in + b.image_offset, b.y0 - RADIUS, 0,
                      STAGED, spitch - 4, h, w, vec, tid, THREADS);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
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

// The band's outputs from its staged rows.
__device__ __forceinline__ void compute_band(const float* stage, Band b, const float (&taps)[FW * FW],
                                             float* __restrict__ out, int h, int w, int spitch, bool vec_out, int tid) {
  const int quads = (spitch - 4) / 4, band_rows = min(BAND, h - b.y0);
  for (int u = tid; u < (BAND / PY) * quads; u += THREADS) {
    const int g = u / quads, x = 4 * (u - g * quads);
    if (g * PY >= band_rows) break;  // u only grows
    float acc[PY][4];
#pragma unroll
    for (int o = 0; o < PY; ++o)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[o][c] = 0.0f;
    const float* row = stage + 4 + g * PY * spitch + x;
#pragma unroll
    for (int j = 0; j < PY + 2 * RADIUS; ++j, row += spitch) {  // stage row g * PY + j serves output rows j - 2r .. j
      const float4 l = *reinterpret_cast<const float4*>(row - 4);
      const float4 m = *reinterpret_cast<const float4*>(row);
      const float4 r = *reinterpret_cast<const float4*>(row + 4);
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

// STAGES 1: the block's one band.
__device__ __forceinline__ void one_band(float* stage, unsigned long long* full, const float* __restrict__ in,
                                         const float (&taps)[FW * FW], float* __restrict__ out, int h, int w,
                                         int spitch, bool bulk, bool vec, bool vec_out, int tid) {
  const int bands = (h + BAND - 1) / BAND;
  const Band b = band_of(blockIdx.z * bands + blockIdx.x, bands, h, w);
  if (bulk) {
    if (tid < 32) bulk_stage(stage, full, in, b, h, w, spitch, tid);
    zero_outside(stage, b, h, spitch, tid);
    __syncthreads();  // the zeros written before any thread reads them
    bulk_wait(full, 0);
  } else {
    copy_stage(stage, in, b, h, w, spitch, vec, tid);
  }
  compute_band(stage, b, taps, out, h, w, spitch, vec_out, tid);
}

// STAGES 2: items blockIdx.x, + gridDim.x, ..., two stages in turn (one, waited for, without bulk copies).
__device__ __forceinline__ void many_bands(float* rows, unsigned long long* full,
                                           const float* __restrict__ in, const float (&taps)[FW * FW],
                                           float* __restrict__ out, int h, int w, int batch, int spitch, bool bulk,
                                           bool vec, bool vec_out, int tid) {
  const int bands = (h + BAND - 1) / BAND, items = bands * batch, stride = gridDim.x;
  const auto stage = [&](int s) { return rows + s * stage_floats(spitch); };  // arithmetic: no array in local memory
  if (!bulk) {
    for (int item = blockIdx.x; item < items; item += stride) {
      const Band b = band_of(item, bands, h, w);
      copy_stage(rows, in, b, h, w, spitch, vec, tid);
      compute_band(rows, b, taps, out, h, w, spitch, vec_out, tid);
      __syncthreads();  // every read of the stage before the next item's copies
    }
    return;
  }
  for (int s = 0; s < 2; ++s)
    if (blockIdx.x + s * stride < items) {
      const Band b = band_of(blockIdx.x + s * stride, bands, h, w);
      if (tid < 32) bulk_stage(stage(s), &full[s], in, b, h, w, spitch, tid);
      zero_outside(stage(s), b, h, spitch, tid);
    }
  __syncthreads();  // the zeros written before any thread reads them
  int i = 0;
  for (int item = blockIdx.x; item < items; item += stride, ++i) {
    const int s = i & 1;
    bulk_wait(&full[s], (i >> 1) & 1);  // the stage's (i / 2)-th fill
    compute_band(stage(s), band_of(item, bands, h, w), taps, out, h, w, spitch, vec_out, tid);
    __syncthreads();  // every read of stage s before it is filled again
    if (item + 2 * stride < items) {
      const Band b = band_of(item + 2 * stride, bands, h, w);
      if (tid < 32) bulk_stage(stage(s), &full[s], in, b, h, w, spitch, tid);
      zero_outside(stage(s), b, h, spitch, tid);  // read after the next item's barrier
    }
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
conv2d_kernel(const float* __restrict__ in, const float* __restrict__ filter, float* __restrict__ out, int h, int w,
              int batch) {
  extern __shared__ __align__(128) float rows[];  // STAGES stages of stage_floats(spitch)
  __shared__ unsigned long long full[2];
  float taps[FW * FW];
#pragma unroll
  for (int i = 0; i < FW * FW; ++i) taps[i] = __ldg(filter + i);
  const int tid = threadIdx.x, spitch = ((w + 3) & ~3) + 4;
  const bool vec = (w & 3) == 0 && (reinterpret_cast<unsigned long long>(in) & 15) == 0;
  const bool vec_out = (w & 3) == 0 && (reinterpret_cast<unsigned long long>(out) & 15) == 0;
  const bool bulk = kHasBulkCopy && vec && w >= kBulkMinWidth;
  for (int s = 0; s < (STAGES == 2 && bulk ? 2 : 1); ++s) zero_borders(rows + s * stage_floats(spitch), spitch, tid);
  if (bulk) {
    if (tid == 0) {
      bulk_init(&full[0]);
      bulk_init(&full[1]);
    }
    __syncthreads();  // the barriers' initialisation before any copy or wait
  }
  if (STAGES == 1)
    one_band(rows, &full[0], in, taps, out, h, w, spitch, bulk, vec, vec_out, tid);
  else
    many_bands(rows, full, in, taps, out, h, w, batch, spitch, bulk, vec, vec_out, tid);
}
