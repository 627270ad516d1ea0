// The spectral conv2d variants' filter spectra, made on the GPU in bind, against their float64 host reference
// (the variants' own GPU verification checks the convolution they give; this names a wrong spectrum directly).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "harness/cuda_raii.h"
#include "harness/error.h"
#include "tests/gpu/gpu_test_support.h"
#include "variants/conv2d/spectral.h"
#include "variants/conv2d/spectrum_kernels.h"

using namespace convtune;

TEST(GpuSpectra, FilterSpectraMatchTheirFloat64Reference) {
  if (!test_gpu::have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  std::mt19937 rng(35);
  std::uniform_real_distribution<float> tap(-1.0f, 1.0f);
  for (const bool two_d : {false, true})
    for (const int n : {32, 64})
      for (const int r : {1, 4, 13}) {
        SCOPED_TRACE("two_d " + std::to_string(two_d) + ", n " + std::to_string(n) + ", r " + std::to_string(r));
        const int fw = 2 * r + 1;
        std::vector<float> f(size_t(fw) * fw);
        for (float& x : f) x = tap(rng);
        DeviceArray<float> filter(f.size());
        CT_CUDA(cudaMemcpy(filter.get(), f.data(), filter.bytes(), cudaMemcpyHostToDevice));
        const double scale = two_d ? 1.0 / (n * n) : 1.0 / n;
        const auto expected = filter_spectra_reference(f, r, n, two_d);
        DeviceArray<float2> spectrum(expected.size());
        DeviceArray<double2> rows(filter_spectra_rows(r, n, two_d));
        filter_spectra(filter.get(), r, n, two_d, scale, spectrum.get(), rows.get(), nullptr);
        std::vector<float2> got(expected.size());
        CT_CUDA(cudaMemcpy(got.data(), spectrum.get(), spectrum.bytes(), cudaMemcpyDeviceToHost));
        double largest = 0;
        for (const auto& e : expected) largest = std::max(largest, std::abs(e) * scale);
        for (size_t i = 0; i < got.size(); ++i) {  // float32 rounding of float64 sums: 1e-6 of the largest value
          ASSERT_NEAR(got[i].x, expected[i].real() * scale, 1e-6 * largest) << "value " << i;
          ASSERT_NEAR(got[i].y, expected[i].imag() * scale, 1e-6 * largest) << "value " << i;
        }
      }
}
