// Fixed helper kernels compiled ahead of time: ceilings, random inputs, float64 references, error
// reduction. The variants' kernels are not here: they are compiled at sweep time through NVRTC.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace convtune {

// Uniform values in [-1, 1) from a counter-based hash of (seed, index): fresh per seed, never zero-filled.
void fill_uniform(float* data, int64_t n, uint64_t seed, cudaStream_t s);
// Every byte 0xFF: each float is a NaN, so an unwritten output element fails verification.
void poison_nan(float* data, int64_t n, cudaStream_t s);

// conv2d reference in float64: out(i,j) = sum_{m,n} in(i+m, j+n) * f(m+r, n+r), zero outside.
void reference_conv2d(const float* image, const float* filter, double* out, int64_t h, int64_t w, int r,
                      cudaStream_t s);

struct ErrorSums {
  double sq_err = 0;       // sum (out - ref)^2
  double sq_ref = 0;       // sum ref^2
  double max_abs_err = 0;  // max |out - ref| (infinite where out is not finite)
  double max_abs_ref = 0;  // max |ref|
  unsigned long long nonfinite = 0;  // outputs that are NaN or infinite
};
ErrorSums compare_to_reference(const float* out, const double* ref, int64_t n, cudaStream_t s);

// Ceilings. Both return elapsed milliseconds of one timed run after a warm-up.
double time_copy(float* dst, const float* src, int64_t n, int repeats, cudaStream_t s);
double time_fma(float* sink, int blocks, int threads, int iterations, int repeats, cudaStream_t s);
constexpr int kFmaChains = 12;  // independent FMA chains per thread in the FMA ceiling kernel

}  // namespace convtune
