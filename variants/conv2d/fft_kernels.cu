#include "variants/conv2d/fft_kernels.h"

#include <algorithm>

#include "harness/error.h"

namespace convtune {
namespace {

constexpr int kThreads = 256;

// 2D launches: x covers a row's columns, y strides over rows (rows can exceed gridDim.y's 65535).
dim3 rows_grid(int64_t rows, int64_t cols, int64_t images = 1) {
  return dim3(unsigned((cols + kThreads - 1) / kThreads), unsigned(std::min<int64_t>(rows, 65535)), unsigned(images));
}

__global__ void pad_kernel(const float* __restrict__ image, float* __restrict__ pad, int64_t h, int64_t w,
                           int64_t ph, int64_t pw) {
  const int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (x >= pw) return;
  image += blockIdx.z * h * w;  // image blockIdx.z of the batch
  pad += blockIdx.z * ph * pw;
  for (int64_t y = blockIdx.y; y < ph; y += gridDim.y)
    pad[y * pw + x] = (y < h && x < w) ? image[y * w + x] : 0.0f;
}

__global__ void place_filter_kernel(const float* __restrict__ filter, float* __restrict__ pad, int64_t r,
                                    int64_t ph, int64_t pw) {
  const int64_t fw = 2 * r + 1;
  const int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t >= fw * fw) return;
  const int64_t m = t / fw - r, n = t % fw - r;  // tap offsets in [-r, r]
  const int64_t y = m > 0 ? ph - m : -m;          // (-m) mod ph
  const int64_t x = n > 0 ? pw - n : -n;          // (-n) mod pw
  pad[y * pw + x] = filter[t];
}

__global__ void multiply_kernel(cufftComplex* __restrict__ spec, const cufftComplex* __restrict__ filter_spec,
                                int64_t n, int64_t images) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * images; i += int64_t(gridDim.x) * blockDim.x) {
    const cufftComplex a = spec[i], b = filter_spec[i % n];
    spec[i] = make_cuComplex(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
  }
}

__global__ void crop_kernel(const float* __restrict__ pad, float* __restrict__ out, int64_t h, int64_t w,
                            int64_t ph, int64_t pw, float scale) {
  const int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (x >= w) return;
  pad += blockIdx.z * ph * pw;  // image blockIdx.z of the batch
  out += blockIdx.z * h * w;
  for (int64_t y = blockIdx.y; y < h; y += gridDim.y) out[y * w + x] = scale * pad[y * pw + x];
}

}  // namespace

void fft_pad_image(const float* image, float* pad, int64_t h, int64_t w, int64_t ph, int64_t pw, int64_t images,
                   cudaStream_t s) {
  pad_kernel<<<rows_grid(ph, pw, images), kThreads, 0, s>>>(image, pad, h, w, ph, pw);
  CT_CHECK_LAUNCH();
}

void fft_place_filter(const float* filter, float* pad, int64_t r, int64_t ph, int64_t pw, cudaStream_t s) {
  CT_CUDA(cudaMemsetAsync(pad, 0, size_t(ph * pw) * sizeof(float), s));
  const int64_t taps = (2 * r + 1) * (2 * r + 1);
  place_filter_kernel<<<unsigned((taps + kThreads - 1) / kThreads), kThreads, 0, s>>>(filter, pad, r, ph, pw);
  CT_CHECK_LAUNCH();
}

void fft_multiply(cufftComplex* spec, const cufftComplex* filter_spec, int64_t n, int64_t images, cudaStream_t s) {
  // Grid-stride: enough blocks to fill any current GPU, capped so that the grid size fits.
  const int64_t blocks = std::min<int64_t>((n * images + kThreads - 1) / kThreads, 65536);
  multiply_kernel<<<unsigned(blocks), kThreads, 0, s>>>(spec, filter_spec, n, images);
  CT_CHECK_LAUNCH();
}

void fft_crop(const float* pad, float* out, int64_t h, int64_t w, int64_t ph, int64_t pw, int64_t images, float scale,
              cudaStream_t s) {
  crop_kernel<<<rows_grid(h, w, images), kThreads, 0, s>>>(pad, out, h, w, ph, pw, scale);
  CT_CHECK_LAUNCH();
}

}  // namespace convtune
