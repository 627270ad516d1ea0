// The spectral conv2d variants' filter spectra, computed on the GPU in bind: no host round trip, so a bind
// (once per call from Python, once per filter in an application) stays asynchronous on the caller's stream.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace convtune {

// The spectra of spectral.h's FFT(g), in float64 on the device, each value times `scale`, stored as float2:
//   rows (two_d false): out[m * n + v] = sum_k f(m, k + r) exp(+2 pi i v k / n), for filter rows m < 2r + 1;
//   two_d (true):       out[u * n + v] = sum_{m, k} f(m + r, k + r) exp(+2 pi i (u m + v k) / n), u < n;
// k and m run over [-r, r]; f is the (2r + 1)^2 filter, row-major, in device memory.
void filter_spectra(const float* filter, int r, int n, bool two_d, double scale, float2* out, cudaStream_t s);

}  // namespace convtune
