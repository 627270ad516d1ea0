// Ahead-of-time helpers of the conv1d_parts variants: the schedule on the device, block packing, the
// per-interval spectral accumulation, the gather that assembles the slice from the intervals, and the small
// kernels of the whole-transform baseline. Each launcher checks its launch and indexes with 64 bits.
#pragma once
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstdint>
#include <vector>

#include "harness/cuda_raii.h"
#include "variants/conv1d_parts/parts_common.h"

namespace convtune::parts {

// A schedule's intervals on the device: per interval its pairs (CSR), per pair two row or block indices
// (whatever the consuming kernel indexes a and b by), and the slot table the gather looks intervals up in.
struct DeviceIntervals {
  DeviceArray<int64_t> pair_offset;  // intervals + 1
  DeviceArray<int32_t> pair_a, pair_b;
  DeviceArray<int32_t> slot_index;
  int64_t intervals = 0, slot_base = 0, unit = 0;
  int64_t length = 0;  // l_a + l_b - 1: the values of one interval
  size_t bytes() const { return pair_offset.bytes() + pair_a.bytes() + pair_b.bytes() + slot_index.bytes(); }
};
DeviceIntervals upload_intervals(const PartsSchedule& s, const std::vector<int32_t>& pair_a,
                                 const std::vector<int32_t>& pair_b);

// Makes `plan` a batched 1D real transform (CUFFT_R2C or CUFFT_C2R) of `length` points over `batch` rows,
// packed: rows `length` reals and length/2 + 1 complex values apart. The plan gets no work area of its own;
// returns the size it needs (cufftSetWorkArea it before use).
size_t make_real_batch_plan(cufftHandle plan, cufftType type, int64_t length, int64_t batch);

// dst row r (padded floats long) = block blocks[r] of src (block_len samples, zeros past src_len), then zeros.
// blocks == nullptr: row r holds block r.
void pack_blocks(const float* src, int64_t src_len, int64_t block_len, const int32_t* blocks, int64_t rows,
                 int64_t padded, float* dst, cudaStream_t s);

// out row t = sum over pairs p of interval t of spectra row pair_a[p] * spectra row pair_b[p] (rows `bins`
// complex values long), in a fixed order.
void accumulate_pairs(const cufftComplex* spectra, int64_t bins, const DeviceIntervals& iv, cufftComplex* out,
                      cudaStream_t s);

// out[k] = scale * gather_output(start + k, ...) for k < outputs: each output written once.
void gather_intervals(const DeviceIntervals& iv, const float* values, int64_t stride, int64_t start, int64_t outputs,
                      float scale, float* out, cudaStream_t s);

// x[i] *= y[i] for i < n (complex).
void multiply_spectra(cufftComplex* x, const cufftComplex* y, int64_t n, cudaStream_t s);
// dst[i] = scale * src[i] for i < n.
void copy_scaled(const float* src, float* dst, int64_t n, float scale, cudaStream_t s);

}  // namespace convtune::parts
