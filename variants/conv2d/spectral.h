// The spectral conv2d variants' host side (spectral_tiled.cpp, spectral_rows.cpp): the plan that computes the
// filter's spectra in bind, in float64 on the GPU (spectrum_kernels.h: what an application does once per
// filter, Python once per call), and their float64 host reference.
//
// A kernel computes the circular correlation of an N-point line t with g, IFFT(FFT(t) * FFT(g)), whose
// value at p is sum_q t(p - q) g(q). Placing g((-n) mod N) = f(n + r) makes it sum_n t(p + n) f(n + r), the
// problem's cross-correlation, exact (no wrap) for p in [r, N - r): the V = N - 2r valid outputs of a tile.
// So FFT(g)(v) = sum_n f(n + r) exp(+2 pi i v n / N); in 2D the same along each axis.
#pragma once
#include <algorithm>
#include <complex>
#include <memory>
#include <vector>

#include "harness/cuda_raii.h"
#include "harness/jit.h"
#include "harness/variant.h"

namespace convtune {

// The tiles along x of an N-point spectral kernel, as conv2d_spectral_fft.cuh's VX and X_START: V = N - 2r
// valid outputs a tile (< 1: no config), stepped by VX <= V columns aligned to 8, from column x_start <= 0;
// two tiles (a, b) a line.
inline int spectral_valid(int n, int64_t r) { return n - 2 * int(r); }
inline int spectral_step_x(int n, int64_t r) {
  const int v = std::max(1, spectral_valid(n, r));
  return v >= 8 ? v / 8 * 8 : v;
}
inline int spectral_x_start(int n, int64_t r) { return spectral_step_x(n, r) >= 8 && r % 8 != 0 ? int(r % 8) - 8 : 0; }
// float2s a shared row of an N-point line, as conv2d_spectral_fft.cuh's PITCH.
inline int spectral_pitch(int n) { return n + 8; }
inline unsigned spectral_tile_pairs(int n, int64_t r, int64_t w) {
  const int64_t tiles = (w - spectral_x_start(n, r) + spectral_step_x(n, r) - 1) / spectral_step_x(n, r);
  return unsigned((tiles + 1) / 2);
}

// The spectra filter_spectra (spectrum_kernels.h) computes, unscaled, in float64 on the host: the GPU tests'
// reference. two_d false: filter row m transformed along x, [m * n + v]; true: the 2D transform, [u * n + v].
std::vector<std::complex<double>> filter_spectra_reference(const std::vector<float>& f, int r, int n, bool two_d);

// The launch of a spectral kernel `(in, spectrum, out, h, w)` and the spectrum it reads: the filter's n-point
// row spectra (two_d false: (2r + 1) x n values) or its n x n 2D spectrum, times `scale`, made in bind.
class SpectrumPlan : public Plan {
 public:
  SpectrumPlan(std::shared_ptr<Module> module, const char* kernel, dim3 grid, int threads, int smem_bytes,
               int64_t h, int64_t w, int64_t r, int n, bool two_d, double scale);
  void bind(const Operands& ops, cudaStream_t stream) override;
  void run(cudaStream_t stream) override;
  KernelAttributes attributes() const override { return attrs_; }
  size_t workspace_bytes() const override { return spectrum_.bytes() + rows_.bytes(); }
  json details() const override { return {{"math", "fp32"}, {"deterministic", true}}; }

 private:
  std::shared_ptr<Module> module_;
  CUfunction fn_ = nullptr;
  dim3 grid_;
  int threads_, smem_bytes_;
  KernelAttributes attrs_;
  int h_, w_, r_, n_;
  bool two_d_;
  double scale_;
  DeviceArray<float2> spectrum_;
  DeviceArray<double2> rows_;  // filter_spectra's row pass, for the 2D spectrum
  const float* in_ = nullptr;
  float* out_ = nullptr;
};

}  // namespace convtune
