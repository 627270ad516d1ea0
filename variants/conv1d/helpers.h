// Fixed (ahead-of-time) kernels of the conv1d variants: filter preparation in bind, and the pack, multiply and
// unpack steps around cuFFT's batched transforms in the unfused spectral overlap methods.
#pragma once
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstdint>

namespace convtune {

// out[k] = h[m-1-k] for k < m, 0 up to `padded`: the reversed filter the spatial kernels correlate with.
void reverse_filter(const float* h, int64_t m, float* out, int64_t padded, cudaStream_t s);
// out[i] = (h[i], 0) for i < m, 0 up to n: input of the filter's complex spectrum.
void filter_as_complex(const float* h, int64_t m, cufftComplex* out, int64_t n, cudaStream_t s);

// Overlap-discard: window w of the batch is x[w*valid + shift + i], i < size, zero outside x.
void pack_overlapping(const float* x, int64_t n, int64_t shift, int64_t valid, int64_t size, int64_t windows,
                      float* batch, cudaStream_t s);
// Overlap-add: block b of the batch is x[b*block + i] for i < block (zero past n), then zeros up to size.
void pack_disjoint(const float* x, int64_t n, int64_t block, int64_t size, int64_t blocks, float* batch,
                   cudaStream_t s);
// spectra[b][k] *= filter[k] for every batch entry b, bins spectra of length `bins` each.
void multiply_spectra(cufftComplex* spectra, const cufftComplex* filter, int64_t bins, int64_t batch, cudaStream_t s);
// Overlap-discard: y[o] = scale * batch[w][skip + o - w*valid], w = o / valid: the valid tail of each window.
void unpack_valid(const float* batch, int64_t size, int64_t skip, int64_t valid, int64_t outputs, float scale,
                  float* y, cudaStream_t s);
// Overlap-add, one step: block b (of this step) adds or stores scale * batch[b][u] at full index b*block + u,
// u < span, as overlap_add_accumulates() decides (conv1d_common.cuh). k_steps = 0: all blocks, atomics.
void scatter_overlapping(const float* batch, int64_t size, int64_t block, int64_t span, int64_t blocks,
                         int64_t first, int64_t outputs, int step, int k_steps, float scale, float* y,
                         cudaStream_t s);
// Before an atomic overlap-add: zero the outputs that several blocks add into.
void zero_overlaps(float* y, int64_t block, int64_t span, int64_t blocks, int64_t first, int64_t outputs,
                   cudaStream_t s);

}  // namespace convtune
