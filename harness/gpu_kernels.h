// Fixed helper kernels compiled ahead of time: ceilings, random inputs, error reduction. The families'
// float64 references live in their folders; the variants' kernels are compiled at sweep time (NVRTC).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>

namespace convtune {

// Uniform values in [-amplitude, amplitude) from a counter-based hash of (seed, index): fresh per seed,
// never zero-filled.
void fill_uniform(float* data, int64_t n, uint64_t seed, cudaStream_t s, double amplitude = 1.0);
// Every byte 0xFF: each float is a NaN, so an unwritten output element fails verification.
void poison_nan(float* data, int64_t n, cudaStream_t s);

struct ErrorSums {
  double sq_err = 0;       // sum (out - ref)^2
  double sq_ref = 0;       // sum ref^2
  double max_abs_err = 0;  // max |out - ref| (infinite where out is not finite)
  double max_abs_ref = 0;  // max |ref|
  unsigned long long nonfinite = 0;  // outputs that are NaN or infinite
};
ErrorSums compare_to_reference(const float* out, const double* ref, int64_t n, cudaStream_t s);

// Milliseconds per call of `launch` (work queued on `s`), averaged over `repeats` calls after one warm-up call.
double time_launches(const std::function<void()>& launch, int repeats, cudaStream_t s);

// Ceilings. Both return elapsed milliseconds per launch, averaged over `repeats` after a warm-up.
// loads_in_flight 0: cudaMemcpyAsync device-to-device; 1, 2, 4, 8: the copy kernel with that many float4
// loads per thread issued before its stores, on sms * blocks_per_sm blocks of `threads`.
struct CopyMethod {
  int loads_in_flight = 0, threads = 256, blocks_per_sm = 8;
};
double time_copy(const CopyMethod& m, float* dst, const float* src, int64_t n, int repeats, cudaStream_t s);
// chains: independent FMA chains per thread (8, 12 or 16), each FMA two flops.
double time_fma(int chains, float* sink, int blocks, int threads, int iterations, int repeats, cudaStream_t s);
// A grid-stride launch size for n elements: enough blocks to fill the device, at most 65536.
int grid_for(int64_t n, int threads);

}  // namespace convtune
