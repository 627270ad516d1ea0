#include "variants/conv2d/spectral.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "harness/error.h"

namespace convtune {

std::vector<std::complex<double>> filter_row_spectra(const std::vector<float>& f, int r, int n) {
  const int fw = 2 * r + 1;
  const double step = 2.0 * M_PI / n;
  std::vector<std::complex<double>> rows(size_t(fw) * n);
  for (int m = 0; m < fw; ++m)
    for (int v = 0; v < n; ++v) {
      std::complex<double> s = 0;
      for (int k = -r; k <= r; ++k) s += double(f[m * fw + k + r]) * std::polar(1.0, step * double((v * k) % n));
      rows[size_t(m) * n + v] = s;
    }
  return rows;
}

SpectrumPlan::SpectrumPlan(std::shared_ptr<Module> module, const char* kernel, dim3 grid, int threads,
                           int smem_bytes, int64_t h, int64_t w, int64_t r, size_t spectrum_count,
                           MakeSpectrum make_spectrum)
    : module_(std::move(module)), grid_(grid), threads_(threads), smem_bytes_(smem_bytes), h_(int(h)), w_(int(w)),
      r_(int(r)), make_spectrum_(std::move(make_spectrum)), spectrum_(spectrum_count) {
  fn_ = module_->function(kernel);
  attrs_ = kernel_attributes(fn_, threads, smem_bytes);
}

void SpectrumPlan::bind(const Operands& ops, cudaStream_t stream) {
  in_ = ops.data.at(0);
  out_ = ops.output();
  const int fw = 2 * r_ + 1;
  std::vector<float> filter(size_t(fw) * fw);
  CT_CUDA(cudaMemcpyAsync(filter.data(), ops.data.at(1), filter.size() * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CT_CUDA(cudaStreamSynchronize(stream));
  const std::vector<float2> spectrum = make_spectrum_(filter);
  if (spectrum.size() != spectrum_.size())
    throw std::logic_error("spectrum of " + std::to_string(spectrum.size()) + " values, the plan holds " +
                           std::to_string(spectrum_.size()));
  CT_CUDA(cudaMemcpyAsync(spectrum_.get(), spectrum.data(), spectrum_.bytes(), cudaMemcpyHostToDevice, stream));
  CT_CUDA(cudaStreamSynchronize(stream));  // before `spectrum` goes out of scope
}

void SpectrumPlan::run(cudaStream_t stream) {
  const float2* spectrum = spectrum_.get();
  void* args[] = {&in_, &spectrum, &out_, &h_, &w_};
  launch(fn_, grid_, dim3(threads_), smem_bytes_, stream, args);
}

}  // namespace convtune
