// Float64 references for one-dimensional linear convolution, shared by conv1d and conv1d_parts: any
// slice [start, end) of the full convolution of a (n_a samples) and b (n_b samples),
//   out[i - start] = sum_j a[j] * b[i - j].
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace convtune {

std::vector<double> cpu_convolution_slice(const std::vector<float>& a, const std::vector<float>& b, int64_t start,
                                          int64_t end);

// Direct summation in float64 for modest work, else a float64 cuFFT convolution (its rounding, ~1e-15 of
// the output's norm, is far below any fp32 tolerance). `direct_limit` (multiply-adds) picks; tests lower it.
void gpu_convolution_slice(const float* a, int64_t n_a, const float* b, int64_t n_b, int64_t start, int64_t end,
                           double* out, cudaStream_t s, double direct_limit = 2e11);

}  // namespace convtune
