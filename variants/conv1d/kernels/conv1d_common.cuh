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

// s[OFF, OFF + COUNT) = x[in0, in0 + COUNT) for a block wholly inside the signal, by 16-byte cp.async copies of
// the aligned span around it (OFF = in0 % 4; s holds COUNT + 8 floats and is 16-byte aligned). Each thread issues
// all its copies before it waits once: the register path waits a memory latency per unrolled round of loads,
// which left the window kernel stalled on them (ncu on the H200: long_scoreboard 57% of stalls, DRAM at 68%).
// False where it cannot (before sm_80, x not 16-byte aligned, the span past n): the caller stages otherwise.
template <int BLOCK, int COUNT>
__device__ __forceinline__ bool stage_inputs_async(float* s, const float* __restrict__ x, long long in0, long long n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const long long first = in0 & ~3LL;
  const int vectors = int((in0 - first + COUNT + 3) / 4);
  if ((reinterpret_cast<unsigned long long>(x) & 15) != 0 || first + 4LL * vectors > n) return false;
  const unsigned base = unsigned(__cvta_generic_to_shared(s));
  for (int v = threadIdx.x; v < vectors; v += BLOCK)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(base + 16u * v), "l"(x + first + 4LL * v));
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
  return true;
#else
  return false;
#endif
}
