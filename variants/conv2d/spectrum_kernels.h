// The spectral conv2d variants' filter spectra, computed on the GPU in bind: no host round trip, so a bind
// (once per call from Python, once per filter in an application) stays asynchronous on the caller's stream.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace convtune {

// The spectra of spectral.h's FFT(g), in float64 on the device, each value times `scale`, stored as float2:
//   rows (two_d false): out[m * n + v] = sum_k f(m, k + r) exp(+2 pi i v k / n), for filter rows m < 2r + 1;
//   two_d (true):       out[u * n + v] = sum_{m, k} f(m + r, k + r) exp(+2 pi i (u m + v k) / n), u < n;
// k and m run over [-r, r]; f is the (2r + 1)^2 filter, row-major, in device memory. The 2D spectrum is made
// in two passes, the rows' spectra then each column's, through `rows` (filter_spectra_rows(r, n, true)
// values; unused for two_d false), a (2r + 1)-th of the work of summing every tap for every value.
inline size_t filter_spectra_rows(int r, int n, bool two_d) { return two_d ? size_t(2 * r + 1) * size_t(n) : 0; }
void filter_spectra(const float* filter, int r, int n, bool two_d, double scale, float2* out, double2* rows,
                    cudaStream_t s);

}  // namespace convtune
