// Device helpers shared by the conv1d kernels (NVRTC includes it by name; nvcc by path).
#pragma once

// x[i], or 0 outside [0, n): the zero padding of linear convolution.
__device__ __forceinline__ float load_or_zero(const float* __restrict__ x, long long i, long long n) {
  return (i >= 0 && i < n) ? __ldg(x + i) : 0.0f;
}

// Overlap-add: input block b (block_len samples) yields outputs [b*block_len, b*block_len + span) of the full
// convolution (span = block_len + m - 1). Whether this block must ADD at full-convolution index q rather than
// store: with k_steps > 0 (step s runs the blocks b with b % k_steps == s, one launch per step, in order),
// when a block of an earlier step also covers q; with k_steps == 0 (one launch, atomics), when any other block
// covers q (the location was zeroed first).
__device__ __forceinline__ bool overlap_add_accumulates(long long q, long long b, long long block_len, long long span,
                                                        long long blocks, int k_steps) {
  const long long first = q - span + 1 <= 0 ? 0 : (q - span + block_len) / block_len;
  const long long last = q / block_len < blocks - 1 ? q / block_len : blocks - 1;
  if (k_steps == 0) return last > first;
  const long long step = b % k_steps;
  for (long long c = first; c <= last; ++c)
    if (c % k_steps < step) return true;
  return false;
}

// s[0, COUNT) = x[in0, in0 + COUNT), zeros outside [0, n), by BLOCK threads with coalesced loads; a block wholly
// inside the signal (`interior`) skips the bounds checks.
template <int BLOCK, int COUNT>
__device__ __forceinline__ void stage_inputs(float* s, const float* __restrict__ x, long long in0, long long n,
                                             bool interior) {
  if (interior) {
#pragma unroll 4
    for (int i = threadIdx.x; i < COUNT; i += BLOCK) s[i] = __ldg(x + in0 + i);
  } else {
    for (int i = threadIdx.x; i < COUNT; i += BLOCK) s[i] = load_or_zero(x, in0 + i, n);
  }
}
