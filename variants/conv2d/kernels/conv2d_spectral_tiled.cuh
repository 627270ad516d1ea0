// conv2d past the direct floor for large filters: 2D overlap-save in one kernel. Each block loads two
// neighbouring N x N input tiles (halo included) as the real and imaginary parts of one complex tile,
// transforms it in shared memory (row FFTs, then column FFTs), multiplies by the filter's spectrum
// (computed once on the host in bind, scaled by 1/N^2), transforms back and writes the V x V valid
// outputs of each tile, V = N - 2 RADIUS. The filter is real, so the two tiles' results stay apart in the
// real and imaginary parts. Per output this costs O(log N) flops instead of the direct (2r+1)^2.
//
// The line FFTs: conv2d_spectral_fft.cuh.
// Compile-time: RADIUS, N (power of 2), P (points per thread, P >= N / P), THREADS.
#include "conv2d_spectral_fft.cuh"

#define LINES_PER_CHUNK (THREADS / G)  // lines transformed at once by the block
static_assert(THREADS % G == 0 && N % LINES_PER_CHUNK == 0, "the block transforms whole chunks of lines");

extern "C" __global__ void __launch_bounds__(THREADS) conv2d_spectral_kernel(const float* __restrict__ in,
                                                                             const float2* __restrict__ spectrum,
                                                                             float* __restrict__ out, int h, int w) {
  in += (long long)blockIdx.z * h * w;  // image blockIdx.z of a batch (grid.z = b)
  out += (long long)blockIdx.z * h * w;
  extern __shared__ float2 smem[];
  float2* tile = smem;                // N rows of PITCH
  float2* twiddle = smem + N * PITCH;  // [k2 * G + n1] = exp(-2 pi i n1 k2 / N): conflict-free in the row pass
  const int tid = threadIdx.x;
  init_twiddles(twiddle, tid, THREADS);
  __syncthreads();
  const auto warp_sync = [] { __syncwarp(); };
  const auto block_sync = [] { __syncthreads(); };
  // Tile a's outputs start at (x0 + RADIUS, y0 + RADIUS); tile b is a's right neighbour.
  const auto [x0, has_b] = tile_pair(w);
  const int y0 = int(blockIdx.y) * V - RADIUS;
  // Rows: a line's G threads are neighbours in one warp; columns: a warp spans 32 columns.
  const int row_n1 = tid % G, row_lane = tid / G;
  const int col_n1 = tid / LINES_PER_CHUNK, col_lane = tid % LINES_PER_CHUNK;
  float2 x[P];

  // Forward row FFTs, straight from the image: tile a in the real parts, tile b in the imaginary parts.
  for (int chunk = 0; chunk < N; chunk += LINES_PER_CHUNK) {
    const int row = chunk + row_lane, y = y0 + row;
    const float* src = in + (long long)y * w;
    const bool in_rows = y >= 0 && y < h;
#pragma unroll
    for (int m = 0; m < P; ++m) {
      const int xa = x0 + row_n1 + G * m, xb = xa + VX;
      x[m] = make_float2(in_rows && xa >= 0 && xa < w ? __ldg(src + xa) : 0.0f,
                         in_rows && has_b && xb >= 0 && xb < w ? __ldg(src + xb) : 0.0f);
    }
    float2* base = tile + row * PITCH;
    fft_line<false>(x, base, 1, row_n1, true, twiddle, warp_sync);
    __syncwarp();  // the line's threads are done reading the exchange before the results overwrite it
#pragma unroll
    for (int m = 0; m < P; ++m) base[row_n1 + G * m] = x[m];
  }
  __syncthreads();
  // Column FFTs, the filter's spectrum, inverse column FFTs: one chain in registers per column.
  for (int chunk = 0; chunk < N; chunk += LINES_PER_CHUNK) {
    const int col = chunk + col_lane;
    float2* base = tile + col;
#pragma unroll
    for (int m = 0; m < P; ++m) x[m] = base[(col_n1 + G * m) * PITCH];
    fft_line<false>(x, base, PITCH, col_n1, true, twiddle, block_sync);
#pragma unroll
    for (int m = 0; m < P; ++m) x[m] = cmul(x[m], __ldg(spectrum + (col_n1 + G * m) * N + col));
    fft_line<true>(x, base, PITCH, col_n1, true, twiddle, block_sync);
    __syncthreads();  // the exchange's readers are done before the results overwrite it
#pragma unroll
    for (int m = 0; m < P; ++m) base[(col_n1 + G * m) * PITCH] = x[m];
  }
  __syncthreads();
  // Inverse row FFTs of the rows that hold valid outputs, straight to the output.
  for (int chunk = RADIUS; chunk < RADIUS + V; chunk += LINES_PER_CHUNK) {
    const int row = chunk + row_lane, y = y0 + row;
    const bool active = row < RADIUS + V;
    float2* base = tile + row * PITCH;
    if (active) {
#pragma unroll
      for (int m = 0; m < P; ++m) x[m] = base[row_n1 + G * m];
    }
    fft_line<true>(x, base, 1, row_n1, active, twiddle, warp_sync);
    if (!active || y >= h) continue;
    float* dst = out + (long long)y * w;
#pragma unroll
    for (int m = 0; m < P; ++m) {
      const int k = row_n1 + G * m, xa = x0 + k, xb = xa + VX;
      if (k < RADIUS || k >= RADIUS + VX) continue;
      if (xa >= 0 && xa < w) dst[xa] = x[m].x;
      if (has_b && xb < w) dst[xb] = x[m].y;
    }
  }
}
