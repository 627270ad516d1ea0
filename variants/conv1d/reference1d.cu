#include "variants/conv1d/reference1d.h"

#include <algorithm>

#include "harness/cuda_raii.h"
#include "harness/cufft.h"
#include "harness/error.h"
#include "harness/gpu_kernels.h"

namespace convtune {

std::vector<double> cpu_convolution_slice(const std::vector<float>& a, const std::vector<float>& b, int64_t start,
                                          int64_t end) {
  const int64_t n_a = int64_t(a.size()), n_b = int64_t(b.size());
  std::vector<double> out(size_t(std::max<int64_t>(end - start, 0)));
  for (int64_t i = start; i < end; ++i) {
    double acc = 0;
    for (int64_t j = std::max<int64_t>(0, i - n_b + 1); j <= std::min<int64_t>(n_a - 1, i); ++j)
      acc += double(a[j]) * double(b[i - j]);
    out[i - start] = acc;
  }
  return out;
}

namespace {

__global__ void direct_slice_kernel(const float* __restrict__ a, int64_t n_a, const float* __restrict__ b,
                                    int64_t n_b, int64_t start, int64_t end, double* __restrict__ out) {
  for (int64_t i = start + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < end;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t lo = i - n_b + 1 > 0 ? i - n_b + 1 : 0, hi = i < n_a - 1 ? i : n_a - 1;
    double acc = 0;
    for (int64_t j = lo; j <= hi; ++j) acc += double(a[j]) * double(b[i - j]);
    out[i - start] = acc;
  }
}

__global__ void widen_kernel(const float* __restrict__ in, int64_t n, double* __restrict__ out, int64_t padded) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < padded; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = i < n ? double(in[i]) : 0.0;
}

__global__ void multiply_kernel(cufftDoubleComplex* __restrict__ x, const cufftDoubleComplex* __restrict__ y,
                                int64_t n, double scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const cufftDoubleComplex p = x[i], q = y[i];
    x[i] = {(p.x * q.x - p.y * q.y) * scale, (p.x * q.y + p.y * q.x) * scale};
  }
}

__global__ void copy_slice_kernel(const double* __restrict__ full, int64_t start, int64_t count, double* __restrict__ out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = full[start + i];
}

// Zero-padded to a power of two >= n_a + n_b - 1, so the circular convolution is the linear one.
void fft_slice(const float* a, int64_t n_a, const float* b, int64_t n_b, int64_t start, int64_t end, double* out,
               cudaStream_t s) {
  const int64_t size = next_pow2(n_a + n_b - 1), bins = size / 2 + 1;
  DeviceArray<double> ra{size_t(size)}, rb{size_t(size)};
  DeviceArray<cufftDoubleComplex> fa{size_t(bins)}, fb{size_t(bins)};
  widen_kernel<<<grid_for(size, 256), 256, 0, s>>>(a, n_a, ra.get(), size);
  widen_kernel<<<grid_for(size, 256), 256, 0, s>>>(b, n_b, rb.get(), size);
  CT_CHECK_LAUNCH();
  CufftHandle fwd, inv;
  size_t work = 0;
  CT_CUFFT(cufftMakePlan1d(fwd.get(), int(size), CUFFT_D2Z, 1, &work));
  CT_CUFFT(cufftMakePlan1d(inv.get(), int(size), CUFFT_Z2D, 1, &work));
  CT_CUFFT(cufftSetStream(fwd.get(), s));
  CT_CUFFT(cufftSetStream(inv.get(), s));
  CT_CUFFT(cufftExecD2Z(fwd.get(), ra.get(), fa.get()));
  CT_CUFFT(cufftExecD2Z(fwd.get(), rb.get(), fb.get()));
  multiply_kernel<<<grid_for(bins, 256), 256, 0, s>>>(fa.get(), fb.get(), bins, 1.0 / double(size));
  CT_CHECK_LAUNCH();
  CT_CUFFT(cufftExecZ2D(inv.get(), fa.get(), ra.get()));
  copy_slice_kernel<<<grid_for(end - start, 256), 256, 0, s>>>(ra.get(), start, end - start, out);
  CT_CHECK_LAUNCH();
  CT_CUDA(cudaStreamSynchronize(s));  // the buffers above are freed on return
}

}  // namespace

void gpu_convolution_slice(const float* a, int64_t n_a, const float* b, int64_t n_b, int64_t start, int64_t end,
                           double* out, cudaStream_t s, double direct_limit) {
  if (end <= start) return;
  const double work = double(end - start) * double(std::min(n_a, n_b));
  if (work <= direct_limit) {
    direct_slice_kernel<<<grid_for(end - start, 256), 256, 0, s>>>(a, n_a, b, n_b, start, end, out);
    CT_CHECK_LAUNCH();
    return;
  }
  fft_slice(a, n_a, b, n_b, start, end, out, s);
}

}  // namespace convtune
