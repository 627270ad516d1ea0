// conv2d, for batches of small images (and any image): a block stages a band of BAND whole image rows and
// its 2r halo rows in shared memory, then computes the band's outputs from there. Whole rows of one image are
// contiguous, so on sm_90 (rows of 4-float multiples, an aligned image) one thread stages the band with a
// single bulk copy (cp.async.bulk) and the others only zero the halo rows outside the image; elsewhere every
// thread issues cp.async copies (16 bytes where rows allow, else 4; zeros outside the image). No column
// halo: a band is the image's full width, so its left and right borders are the image's. One block a band,
// blockIdx.x the band and blockIdx.z the image: a 32 x 32 image is one band of one small block, and the
// many blocks resident on an SM keep enough bulk copies in flight to stream the batch (a tiled kernel's
// blocks read a 2r-column halo and, on such images, mostly edge tiles).
// A thread computes 4 adjacent columns of PY rows (PY + 2r input rows, each read from shared memory as the
// float4s of its columns and of its neighbours' for the halo), taps in registers from the filter argument.
// Compile-time: RADIUS (0..4: the halo within one neighbouring float4), BAND (a multiple of PY), PY,
// THREADS (the block, 1-D).
#include "async_copy.cuh"

#define FW (2 * RADIUS + 1)
#define STAGED (BAND + 2 * RADIUS)  // shared-memory rows: image rows y0 - r .. y0 + BAND + r - 1
static_assert(RADIUS >= 0 && RADIUS <= 4, "the halo comes from one neighbouring float4");
static_assert(BAND % PY == 0, "a band is whole groups of PY rows");

// Stages the band: shared row t is image row y0 - r + t of `image`, rows outside the image zero, columns
// past w zero (pitch: w rounded up to 4 floats).
__device__ __forceinline__ void stage_band(float* rows, unsigned long long* bar, const float* __restrict__ image,
                                           int y0, int h, int w, int pitch, bool bulk, bool vec, int tid) {
  const int first = max(0, RADIUS - y0), last = min(STAGED, h - y0 + RADIUS);  // shared rows inside the image
  if (bulk) {
    if (tid == 0) bulk_init(bar);
    for (int t = 0; t < STAGED; ++t)  // at most 2r rows outside the image
      if (t < first || t >= last)
        for (int c = tid; c < pitch; c += THREADS) rows[t * pitch + c] = 0.0f;
    bulk_fence();
    __syncthreads();  // the barrier's initialisation and the zeros before the copy
    if (tid == 0) {
      const unsigned bytes = last > first ? 4u * unsigned(last - first) * unsigned(w) : 0u;
      bulk_expect(bar, bytes);
      if (bytes) bulk_copy(rows + first * pitch, image + (long long)(y0 - RADIUS + first) * w, bytes, bar);
    }
    bulk_wait(bar, 0);
    return;
  }
  cp_async_image_rows([&](int t) { return rows + t * pitch; }, image, y0 - RADIUS, 0, STAGED, pitch, h, w, vec, tid,
                      THREADS);
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

extern "C" __global__ void __launch_bounds__(THREADS)
conv2d_kernel(const float* __restrict__ in, const float* __restrict__ filter, float* __restrict__ out, int h, int w) {
  extern __shared__ __align__(128) float rows[];
  __shared__ unsigned long long bar;
  float taps[FW * FW];
#pragma unroll
  for (int i = 0; i < FW * FW; ++i) taps[i] = __ldg(filter + i);
  const int tid = threadIdx.x, y0 = blockIdx.x * BAND, pitch = (w + 3) & ~3;
  const long long image_offset = (long long)blockIdx.z * h * w;
  const bool vec = (w & 3) == 0 && (reinterpret_cast<unsigned long long>(in) & 15) == 0;
  stage_band(rows, &bar, in + image_offset, y0, h, w, pitch, kHasBulkCopy && vec, vec, tid);

  const bool vec_out = (w & 3) == 0 && (reinterpret_cast<unsigned long long>(out) & 15) == 0;
  const int quads = pitch / 4, band_rows = min(BAND, h - y0);
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
      const float* row = rows + (g * PY + j) * pitch;
      const float4 l = RADIUS > 0 ? row_quad(row, x - 4, pitch) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      const float4 m = *reinterpret_cast<const float4*>(row + x);
      const float4 r = RADIUS > 0 ? row_quad(row, x + 4, pitch) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
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
      if (g * PY + o < band_rows) store_quad(out + image_offset + (long long)(y0 + g * PY + o) * w + x, acc[o], x, w, vec_out);
  }
}
