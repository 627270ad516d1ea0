#include "variants/conv1d_parts/parts_kernels.h"

#include <algorithm>

#include "harness/cufft.h"
#include "harness/error.h"

namespace convtune::parts {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxGridY = 65535;
// accumulate_pairs: a block is kBins consecutive bins (one warp, coalesced) x kLanes lanes of pairs, so
// that an interval with many pairs keeps 8 warps busy, reduced through shared memory in a fixed order.
constexpr int kBins = 32;
constexpr int kLanes = 8;

// A grid-stride launch size for n elements, at most 65536 blocks (enough to fill any current GPU).
unsigned stride_grid(int64_t n) { return unsigned(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 65536)); }

template <class T>
DeviceArray<T> upload(const std::vector<T>& host) {
  DeviceArray<T> d(host.size());
  if (!host.empty()) CT_CUDA(cudaMemcpy(d.get(), host.data(), d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

__global__ void pack_kernel(const float* __restrict__ src, int64_t src_len, int64_t block_len,
                            const int32_t* __restrict__ blocks, int64_t rows, int64_t padded, float* __restrict__ dst) {
  const int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (x >= padded) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int64_t at = (blocks ? int64_t(blocks[r]) : r) * block_len + x;
    dst[r * padded + x] = (x < block_len && at < src_len) ? src[at] : 0.0f;
  }
}

__global__ void __launch_bounds__(kBins* kLanes)
    accumulate_kernel(const cufftComplex* __restrict__ spectra, int64_t bins, const int64_t* __restrict__ pair_offset,
                      const int32_t* __restrict__ pair_a, const int32_t* __restrict__ pair_b, int64_t intervals,
                      cufftComplex* __restrict__ out) {
  __shared__ float2 partial[kLanes][kBins];
  const int64_t f = blockIdx.x * int64_t(kBins) + threadIdx.x;
  for (int64_t t = blockIdx.y; t < intervals; t += gridDim.y) {
    float re = 0.0f, im = 0.0f;
    if (f < bins)
      for (int64_t p = pair_offset[t] + threadIdx.y; p < pair_offset[t + 1]; p += kLanes) {
        const float2 x = spectra[int64_t(pair_a[p]) * bins + f];
        const float2 y = spectra[int64_t(pair_b[p]) * bins + f];
        re = fmaf(x.x, y.x, fmaf(-x.y, y.y, re));
        im = fmaf(x.x, y.y, fmaf(x.y, y.x, im));
      }
    partial[threadIdx.y][threadIdx.x] = make_float2(re, im);
    __syncthreads();
    if (threadIdx.y == 0 && f < bins) {
      float2 sum = partial[0][threadIdx.x];
      for (int lane = 1; lane < kLanes; ++lane) {
        sum.x += partial[lane][threadIdx.x].x;
        sum.y += partial[lane][threadIdx.x].y;
      }
      out[t * bins + f] = sum;
    }
    __syncthreads();  // partial is reused by the next interval
  }
}

__global__ void gather_kernel(const float* __restrict__ values, int64_t stride, const int32_t* __restrict__ slot_index,
                              int64_t slot_base, int64_t slot_count, int64_t unit, int64_t length, int64_t start,
                              int64_t outputs, float scale, float* __restrict__ out) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < outputs; k += int64_t(gridDim.x) * blockDim.x)
    out[k] = scale * gather_output(start + k, values, stride, slot_index, slot_base, slot_count, unit, length);
}

__global__ void multiply_kernel(cufftComplex* __restrict__ x, const cufftComplex* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float2 a = x[i], b = y[i];
    x[i] = make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
  }
}

__global__ void copy_scaled_kernel(const float* __restrict__ src, float* __restrict__ dst, int64_t n, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = scale * src[i];
}

}  // namespace

DeviceIntervals upload_intervals(const PartsSchedule& s, const std::vector<int32_t>& pair_a,
                                 const std::vector<int32_t>& pair_b) {
  const SlotTable table = make_slot_table(s);
  DeviceIntervals d;
  d.pair_offset = upload(s.pair_offset);
  d.pair_a = upload(pair_a);
  d.pair_b = upload(pair_b);
  d.slot_index = upload(table.index);
  d.intervals = int64_t(s.intervals());
  d.slot_base = table.base;
  d.unit = table.unit;
  d.length = s.interval_length();
  return d;
}

size_t make_real_batch_plan(cufftHandle plan, cufftType type, int64_t length, int64_t batch) {
  long long n[1] = {length}, real_embed[1] = {length}, complex_embed[1] = {length / 2 + 1};
  const bool forward = type == CUFFT_R2C;
  long long* in_embed = forward ? real_embed : complex_embed;
  long long* out_embed = forward ? complex_embed : real_embed;
  size_t work = 0;
  CT_CUFFT(cufftSetAutoAllocation(plan, 0));
  CT_CUFFT(cufftMakePlanMany64(plan, 1, n, in_embed, 1, in_embed[0], out_embed, 1, out_embed[0], type, batch, &work));
  return work;
}

void pack_blocks(const float* src, int64_t src_len, int64_t block_len, const int32_t* blocks, int64_t rows,
                 int64_t padded, float* dst, cudaStream_t s) {
  const dim3 grid(unsigned((padded + kThreads - 1) / kThreads), unsigned(std::min<int64_t>(rows, kMaxGridY)));
  pack_kernel<<<grid, kThreads, 0, s>>>(src, src_len, block_len, blocks, rows, padded, dst);
  CT_CHECK_LAUNCH();
}

void accumulate_pairs(const cufftComplex* spectra, int64_t bins, const DeviceIntervals& iv, cufftComplex* out,
                      cudaStream_t s) {
  const dim3 grid(unsigned((bins + kBins - 1) / kBins), unsigned(std::min<int64_t>(iv.intervals, kMaxGridY)));
  accumulate_kernel<<<grid, dim3(kBins, kLanes), 0, s>>>(spectra, bins, iv.pair_offset.get(), iv.pair_a.get(),
                                                         iv.pair_b.get(), iv.intervals, out);
  CT_CHECK_LAUNCH();
}

void gather_intervals(const DeviceIntervals& iv, const float* values, int64_t stride, int64_t start, int64_t outputs,
                      float scale, float* out, cudaStream_t s) {
  gather_kernel<<<stride_grid(outputs), kThreads, 0, s>>>(values, stride, iv.slot_index.get(), iv.slot_base,
                                                          int64_t(iv.slot_index.size()), iv.unit, iv.length, start,
                                                          outputs, scale, out);
  CT_CHECK_LAUNCH();
}

void multiply_spectra(cufftComplex* x, const cufftComplex* y, int64_t n, cudaStream_t s) {
  multiply_kernel<<<stride_grid(n), kThreads, 0, s>>>(x, y, n);
  CT_CHECK_LAUNCH();
}

void copy_scaled(const float* src, float* dst, int64_t n, float scale, cudaStream_t s) {
  copy_scaled_kernel<<<stride_grid(n), kThreads, 0, s>>>(src, dst, n, scale);
  CT_CHECK_LAUNCH();
}

}  // namespace convtune::parts
