#include "variants/conv2d/spectrum_kernels.h"

#include "harness/error.h"

namespace convtune {
namespace {

constexpr int kThreads = 256;

// twiddle[j] = exp(+2 pi i j / n), made once a block, so that each term is a table read.
__device__ void make_twiddles(double2* twiddle, int n) {
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    double s, c;
    sincospi(2.0 * j / n, &s, &c);
    twiddle[j] = make_double2(c, s);
  }
  __syncthreads();
}

// Each filter row m transformed along x: sum_k f(m, k + r) exp(+2 pi i v k / n) for [m * n + v], one a thread.
// Final (the rows variant's spectra): times scale, as float2 into `out`; else in float64 into `rows`.
__global__ void row_spectra_kernel(const float* __restrict__ f, int r, int n, double scale, float2* __restrict__ out,
                                   double2* __restrict__ rows) {
  extern __shared__ double2 twiddle[];
  make_twiddles(twiddle, n);
  const int index = blockIdx.x * blockDim.x + threadIdx.x, fw = 2 * r + 1;
  if (index >= fw * n) return;
  const int m = index / n, v = index % n;
  double re = 0.0, im = 0.0;
  int phase = (n - (v * r) % n) % n;  // v * k mod n at k = -r, then stepped by v
  for (int k = 0; k < fw; ++k) {
    const double tap = f[m * fw + k];
    re += tap * twiddle[phase].x;
    im += tap * twiddle[phase].y;
    phase = (phase + v) % n;
  }
  if (out) out[index] = make_float2(float(re * scale), float(im * scale));
  else rows[index] = make_double2(re, im);
}

// The row spectra transformed along y: out[u * n + v] = scale * sum_m rows[(m + r) * n + v] exp(+2 pi i u m / n).
__global__ void column_spectra_kernel(const double2* __restrict__ rows, int r, int n, double scale,
                                      float2* __restrict__ out) {
  extern __shared__ double2 twiddle[];
  make_twiddles(twiddle, n);
  const int index = blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= n * n) return;
  const int u = index / n, v = index % n;
  double re = 0.0, im = 0.0;
  int phase = (n - (u * r) % n) % n;
  for (int m = 0; m < 2 * r + 1; ++m) {
    const double2 a = rows[m * n + v], t = twiddle[phase];
    re += a.x * t.x - a.y * t.y;
    im += a.x * t.y + a.y * t.x;
    phase = (phase + u) % n;
  }
  out[index] = make_float2(float(re * scale), float(im * scale));
}

unsigned blocks_for(int outputs) { return unsigned((outputs + kThreads - 1) / kThreads); }

}  // namespace

void filter_spectra(const float* filter, int r, int n, bool two_d, double scale, float2* out, double2* rows,
                    cudaStream_t s) {
  const int row_outputs = (2 * r + 1) * n;
  const size_t smem = size_t(n) * sizeof(double2);
  row_spectra_kernel<<<blocks_for(row_outputs), kThreads, smem, s>>>(filter, r, n, scale, two_d ? nullptr : out, rows);
  CT_CHECK_LAUNCH();
  if (!two_d) return;
  column_spectra_kernel<<<blocks_for(n * n), kThreads, smem, s>>>(rows, r, n, scale, out);
  CT_CHECK_LAUNCH();
}

}  // namespace convtune
