// conv1d for short filters, overlap-discard with a sliding window per thread. A block stages TILE_IN inputs
// in shared memory (coalesced); thread t computes the P consecutive outputs t*P .. t*P + P - 1 from the P + M - 1
// inputs they span, each read from shared memory once (P odd: the 32 lanes' reads, P apart, fall in 32
// different banks). The tiled kernel reads one shared value per multiply-add when M <= 32, which leaves it
// bound by the shared-memory pipe (ncu on the H100: L1 at 83% of peak, mio_throttle stalls); here a thread
// reads (P + M - 1) / P values per output. The outputs go back through shared memory for coalesced stores.
// y[o] = sum_k x[o + shift + k] g[k], g the reversed filter in constant memory; shift = 0 (valid), -(M-1) (full).
// Compile-time: M (filter length), THREADS, P (outputs per thread, odd), ASYNC (1: interior tiles staged by
// cp.async, see stage_inputs_async; the tile then starts OFF = in0 % 4 floats into s).
#include "conv1d_common.cuh"

#define TILE_OUT (THREADS * P)
#define TILE_IN (TILE_OUT + M - 1)

__constant__ float c_filter[M];

extern "C" __global__ void __launch_bounds__(THREADS)
conv1d_window(const float* __restrict__ x, float* __restrict__ y, long long n, long long outputs, long long shift) {
  extern __shared__ __align__(16) float s[];  // cp.async writes 16-byte chunks
  const long long o0 = (long long)blockIdx.x * TILE_OUT, in0 = o0 + shift;
  const bool interior = in0 >= 0 && in0 + TILE_IN <= n && o0 + TILE_OUT <= outputs;
  int off = 0;
  bool staged = false;
#if ASYNC
  if (interior) {
    staged = stage_inputs_async<THREADS, TILE_IN>(s, x, in0, n);
    if (staged) off = int(in0 & 3);
  }
#endif
  if (!staged) stage_inputs<THREADS, TILE_IN>(s, x, in0, n, interior);
  __syncthreads();
  float acc[P];
#pragma unroll
  for (int c = 0; c < P; ++c) acc[c] = 0.0f;
  const float* w = s + off + threadIdx.x * P;
  // Input j of the window serves output c through tap j - c: fully unrolled, one input live at a time.
#pragma unroll
  for (int j = 0; j < P + M - 1; ++j) {
    const float v = w[j];
#pragma unroll
    for (int c = 0; c < P; ++c)
      if (j - c >= 0 && j - c < M) acc[c] = fmaf(v, c_filter[j - c], acc[c]);
  }
  __syncthreads();  // every window read: the tile's memory now holds the outputs
#pragma unroll
  for (int c = 0; c < P; ++c) s[threadIdx.x * P + c] = acc[c];
  __syncthreads();
  if (interior) {
#pragma unroll 4
    for (int i = threadIdx.x; i < TILE_OUT; i += THREADS) y[o0 + i] = s[i];
  } else {
    for (int i = threadIdx.x; i < TILE_OUT && o0 + i < outputs; i += THREADS) y[o0 + i] = s[i];
  }
}
