#include "variants/conv2d/spectrum_kernels.h"

#include "harness/error.h"

namespace convtune {
namespace {

constexpr int kThreads = 256;

// One output a thread. twiddle[j] = exp(+2 pi i j / n) once a block, so that each term is a table read.
__global__ void filter_spectra_kernel(const float* __restrict__ f, int r, int n, int two_d, double scale,
                                      float2* __restrict__ out, int outputs) {
  extern __shared__ double2 twiddle[];
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    double s, c;
    sincospi(2.0 * j / n, &s, &c);
    twiddle[j] = make_double2(c, s);
  }
  __syncthreads();
  const int index = blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= outputs) return;
  const int u = index / n, v = index % n, fw = 2 * r + 1;
  const int m_first = two_d ? -r : u - r, m_last = two_d ? r : u - r;  // rows: filter row u alone
  double re = 0.0, im = 0.0;
  for (int m = m_first; m <= m_last; ++m)
    for (int k = -r; k <= r; ++k) {
      int phase = ((two_d ? u * m : 0) + v * k) % n;
      if (phase < 0) phase += n;
      const double tap = f[(m + r) * fw + k + r];
      re += tap * twiddle[phase].x;
      im += tap * twiddle[phase].y;
    }
  out[index] = make_float2(float(re * scale), float(im * scale));
}

}  // namespace

void filter_spectra(const float* filter, int r, int n, bool two_d, double scale, float2* out, cudaStream_t s) {
  const int outputs = (two_d ? n : 2 * r + 1) * n;
  const unsigned blocks = unsigned((outputs + kThreads - 1) / kThreads);
  filter_spectra_kernel<<<blocks, kThreads, n * sizeof(double2), s>>>(filter, r, n, two_d ? 1 : 0, scale, out,
                                                                      outputs);
  CT_CHECK_LAUNCH();
}

}  // namespace convtune
