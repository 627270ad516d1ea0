// Ahead-of-time helper kernels of conv2d.fft: zero-padding, filter placement, the spectral product and
// the crop. Each launcher checks its launch (CT_CHECK_LAUNCH) and uses 64-bit indices.
#pragma once
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstdint>

namespace convtune {

// Each of `images` pads (ph x pw, one after another) = its h x w image at the origin, zeros elsewhere.
void fft_pad_image(const float* image, float* pad, int64_t h, int64_t w, int64_t ph, int64_t pw, int64_t images,
                   cudaStream_t s);
// pad (ph x pw) = zeros, with the filter tap f(m+r, n+r) at ((-m) mod ph, (-n) mod pw); needs ph, pw >= 2r+1.
void fft_place_filter(const float* filter, float* pad, int64_t r, int64_t ph, int64_t pw, cudaStream_t s);
// Each of `images` spectra of n complex values, one after another, times filter_spec (n values).
void fft_multiply(cufftComplex* spec, const cufftComplex* filter_spec, int64_t n, int64_t images, cudaStream_t s);
// Each of `images` outputs (h x w) = scale * its pad (ph x pw) restricted to the top-left h x w corner.
void fft_crop(const float* pad, float* out, int64_t h, int64_t w, int64_t ph, int64_t pw, int64_t images, float scale,
              cudaStream_t s);

}  // namespace convtune
