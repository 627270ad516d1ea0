#include "variants/conv2d/spectral.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "harness/error.h"
#include "variants/conv2d/spectrum_kernels.h"

namespace convtune {

std::vector<std::complex<double>> filter_spectra_reference(const std::vector<float>& f, int r, int n, bool two_d) {
  const int fw = 2 * r + 1;
  const double step = 2.0 * M_PI / n;
  std::vector<std::complex<double>> rows(size_t(fw) * n);
  for (int m = 0; m < fw; ++m)
    for (int v = 0; v < n; ++v) {
      std::complex<double> s = 0;
      for (int k = -r; k <= r; ++k) s += double(f[m * fw + k + r]) * std::polar(1.0, step * double((v * k) % n));
      rows[size_t(m) * n + v] = s;
    }
  if (!two_d) return rows;
  std::vector<std::complex<double>> out(size_t(n) * n);
  for (int u = 0; u < n; ++u)
    for (int v = 0; v < n; ++v) {
      std::complex<double> s = 0;
      for (int m = -r; m <= r; ++m) s += rows[size_t(m + r) * n + v] * std::polar(1.0, step * double((u * m) % n));
      out[size_t(u) * n + v] = s;
    }
  return out;
}

SpectrumPlan::SpectrumPlan(std::shared_ptr<Module> module, const char* kernel, dim3 grid, int threads,
                           int smem_bytes, int64_t h, int64_t w, int64_t r, int n, bool two_d, double scale)
    : module_(std::move(module)), grid_(grid), threads_(threads), smem_bytes_(smem_bytes), h_(int(h)), w_(int(w)),
      r_(int(r)), n_(n), two_d_(two_d), scale_(scale), spectrum_(size_t(two_d ? n : 2 * r + 1) * n),
      rows_(filter_spectra_rows(int(r), n, two_d)) {
  fn_ = module_->function(kernel);
  attrs_ = kernel_attributes(fn_, threads, smem_bytes);
}

void SpectrumPlan::bind(const Operands& ops, cudaStream_t stream) {
  in_ = ops.data.at(0);
  out_ = ops.output();
  filter_spectra(ops.data.at(1), r_, n_, two_d_, scale_, spectrum_.get(), rows_.get(), stream);
}

void SpectrumPlan::run(cudaStream_t stream) {
  const float2* spectrum = spectrum_.get();
  void* args[] = {&in_, &spectrum, &out_, &h_, &w_};
  launch(fn_, grid_, dim3(threads_), smem_bytes_, stream, args);
}

}  // namespace convtune
