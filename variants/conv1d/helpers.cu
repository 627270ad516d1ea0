#include "variants/conv1d/helpers.h"

#include "harness/error.h"
#include "harness/gpu_kernels.h"
#include "variants/conv1d/kernels/conv1d_common.cuh"

namespace convtune {
namespace {

#define GRID_STRIDE(i, count) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (count); i += int64_t(gridDim.x) * blockDim.x)

__global__ void reverse_filter_kernel(const float* h, int64_t m, float* out, int64_t padded) {
  GRID_STRIDE(k, padded) out[k] = k < m ? h[m - 1 - k] : 0.0f;
}

__global__ void filter_as_complex_kernel(const float* h, int64_t m, cufftComplex* out, int64_t n) {
  GRID_STRIDE(i, n) out[i] = make_float2(i < m ? h[i] : 0.0f, 0.0f);
}

__global__ void pack_overlapping_kernel(const float* x, int64_t n, int64_t shift, int64_t valid, int64_t size,
                                        int64_t total, float* batch) {
  GRID_STRIDE(t, total) {
    const int64_t w = t / size, i = t % size;
    batch[t] = load_or_zero(x, w * valid + shift + i, n);
  }
}

__global__ void pack_disjoint_kernel(const float* x, int64_t n, int64_t block, int64_t size, int64_t total,
                                     float* batch) {
  GRID_STRIDE(t, total) {
    const int64_t b = t / size, i = t % size;
    batch[t] = i < block ? load_or_zero(x, b * block + i, n) : 0.0f;
  }
}

__global__ void multiply_spectra_kernel(cufftComplex* spectra, const cufftComplex* filter, int64_t bins,
                                        int64_t total) {
  GRID_STRIDE(t, total) {
    const cufftComplex a = spectra[t], b = filter[t % bins];
    spectra[t] = make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
  }
}

__global__ void unpack_valid_kernel(const float* batch, int64_t size, int64_t skip, int64_t valid, int64_t outputs,
                                    float scale, float* y) {
  GRID_STRIDE(o, outputs) y[o] = scale * batch[(o / valid) * size + skip + o % valid];
}

__global__ void scatter_overlapping_kernel(const float* batch, int64_t size, int64_t block, int64_t span,
                                           int64_t blocks, int64_t first, int64_t outputs, int step, int k_steps,
                                           int64_t total, float scale, float* y) {
  GRID_STRIDE(t, total) {
    const int64_t b = k_steps > 0 ? step + k_steps * (t / span) : t / span, u = t % span;
    if (b >= blocks) continue;
    const int64_t q = b * block + u, o = q - first;
    if (o < 0 || o >= outputs) continue;
    const float v = scale * batch[b * size + u];
    if (!overlap_add_accumulates(q, b, block, span, blocks, k_steps))
      y[o] = v;
    else if (k_steps > 0)
      y[o] += v;
    else
      atomicAdd(y + o, v);
  }
}

__global__ void zero_overlaps_kernel(float* y, int64_t block, int64_t strip, int64_t total, int64_t first,
                                     int64_t outputs) {
  GRID_STRIDE(i, total) {
    const int64_t o = (1 + i / strip) * block + i % strip - first;
    if (o >= 0 && o < outputs) y[o] = 0.0f;
  }
}

}  // namespace

void reverse_filter(const float* h, int64_t m, float* out, int64_t padded, cudaStream_t s) {
  reverse_filter_kernel<<<grid_for(padded, 256), 256, 0, s>>>(h, m, out, padded);
  CT_CHECK_LAUNCH();
}

void filter_as_complex(const float* h, int64_t m, cufftComplex* out, int64_t n, cudaStream_t s) {
  filter_as_complex_kernel<<<grid_for(n, 256), 256, 0, s>>>(h, m, out, n);
  CT_CHECK_LAUNCH();
}

void pack_overlapping(const float* x, int64_t n, int64_t shift, int64_t valid, int64_t size, int64_t windows,
                      float* batch, cudaStream_t s) {
  const int64_t total = size * windows;
  pack_overlapping_kernel<<<grid_for(total, 256), 256, 0, s>>>(x, n, shift, valid, size, total, batch);
  CT_CHECK_LAUNCH();
}

void pack_disjoint(const float* x, int64_t n, int64_t block, int64_t size, int64_t blocks, float* batch,
                   cudaStream_t s) {
  const int64_t total = size * blocks;
  pack_disjoint_kernel<<<grid_for(total, 256), 256, 0, s>>>(x, n, block, size, total, batch);
  CT_CHECK_LAUNCH();
}

void multiply_spectra(cufftComplex* spectra, const cufftComplex* filter, int64_t bins, int64_t batch, cudaStream_t s) {
  const int64_t total = bins * batch;
  multiply_spectra_kernel<<<grid_for(total, 256), 256, 0, s>>>(spectra, filter, bins, total);
  CT_CHECK_LAUNCH();
}

void unpack_valid(const float* batch, int64_t size, int64_t skip, int64_t valid, int64_t outputs, float scale,
                  float* y, cudaStream_t s) {
  unpack_valid_kernel<<<grid_for(outputs, 256), 256, 0, s>>>(batch, size, skip, valid, outputs, scale, y);
  CT_CHECK_LAUNCH();
}

void scatter_overlapping(const float* batch, int64_t size, int64_t block, int64_t span, int64_t blocks,
                         int64_t first, int64_t outputs, int step, int k_steps, float scale, float* y,
                         cudaStream_t s) {
  const int64_t in_step = k_steps > 0 ? (blocks - step + k_steps - 1) / k_steps : blocks;
  const int64_t total = in_step * span;
  if (total <= 0) return;
  scatter_overlapping_kernel<<<grid_for(total, 256), 256, 0, s>>>(batch, size, block, span, blocks, first, outputs,
                                                                  step, k_steps, total, scale, y);
  CT_CHECK_LAUNCH();
}

void zero_overlaps(float* y, int64_t block, int64_t span, int64_t blocks, int64_t first, int64_t outputs,
                   cudaStream_t s) {
  const int64_t strip = span - block, total = (blocks - 1) * strip;
  if (total <= 0) return;
  zero_overlaps_kernel<<<grid_for(total, 256), 256, 0, s>>>(y, block, strip, total, first, outputs);
  CT_CHECK_LAUNCH();
}

}  // namespace convtune
