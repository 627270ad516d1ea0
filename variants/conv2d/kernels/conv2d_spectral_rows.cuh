// conv2d with fewer multiply-adds than direct for mid-size filters: FFTs along x, direct along y. A block
// walks down a strip two tiles wide, TY rows a step. Each input row of the strip is transformed once (an
// N-point line FFT, the two tiles as its real and imaginary parts) into a ring of spectrum rows; output
// row j's spectrum is sum_m X_(j+m)[k] W_m[k] over the filter's 2r + 1 rows, W_m the spectrum of filter
// row m (computed once on the host in bind, scaled by 1/N); an inverse line FFT writes VX of the
// V = N - 2r valid outputs of each tile (VX: V rounded down to 8, so that tiles start on 32-byte sectors).
// Per output that is 2 (2r + 1) N / VX multiply-adds plus two line FFTs' share, against the direct
// (2r + 1)^2; no column transforms, so no block-wide exchange in the FFTs.
// Compile-time: RADIUS, N (power of 2), P (points per thread of a line FFT, P >= N / P), TY (rows a
// step: TY lines of G = N / P threads make the block), PY (output rows a thread sums per bin, dividing
// P and TY), REGS (about the registers a thread may use: fewer let more blocks share an SM).
// The rows a block walks follow from gridDim.y, so the segment length is a launch choice.
#include "conv2d_spectral_fft.cuh"

#define FW (2 * RADIUS + 1)
#define THREADS (TY * G)
#define BINS (P / PY)                // bins a thread sums along y: the block covers N bins x TY rows
#define BIN_STRIDE (N / BINS)
#define RING (TY + 2 * RADIUS)       // spectrum rows live at once: a step's TY outputs read TY + 2r rows
#define MIN_BLOCKS (65536 / (THREADS * REGS) > 0 ? 65536 / (THREADS * REGS) : 1)  // at most about REGS registers
static_assert(P % PY == 0 && TY % PY == 0, "PY divides P and TY");

// This thread's P points of tile a and of tile b in image row y (zeros outside the image). `inside`: both
// tiles lie inside the image's columns, so only the row is checked, and the loads are one base plus
// constant offsets.
__device__ __forceinline__ void load_line(float (&raw)[2][P], const float* __restrict__ in, int y, int x0, int n1,
                                          bool has_b, bool inside, int h, int w) {
  const bool in_rows = y >= 0 && y < h;
  const float* src = in + (long long)(in_rows ? y : 0) * w + x0 + n1;
  if (inside && in_rows) {
#pragma unroll
    for (int m = 0; m < P; ++m) raw[0][m] = __ldg(src + G * m), raw[1][m] = __ldg(src + VX + G * m);
  } else {
#pragma unroll
    for (int m = 0; m < P; ++m) {
      const int xa = x0 + n1 + G * m, xb = xa + VX;
      raw[0][m] = in_rows && xa >= 0 && xa < w ? __ldg(src + G * m) : 0.0f;
      raw[1][m] = in_rows && has_b && xb >= 0 && xb < w ? __ldg(src + VX + G * m) : 0.0f;
    }
  }
}

// The line's spectrum into its ring row (natural order); `active` false: reach the syncs, write nothing.
__device__ __forceinline__ void stage_line(const float (&raw)[2][P], float2* row, int n1, bool active,
                                           const float2* twiddle) {
  float2 x[P];
#pragma unroll
  for (int m = 0; m < P; ++m) x[m] = make_float2(raw[0][m], raw[1][m]);
  fft_line<false>(x, row, 1, n1, active, twiddle, [] { __syncwarp(); });
  __syncwarp();  // the line's threads are done reading the exchange before the results overwrite it
  if (active) {
#pragma unroll
    for (int m = 0; m < P; ++m) row[n1 + G * m] = x[m];
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) conv2d_spectral_rows_kernel(const float* __restrict__ in,
                                                                                  const float2* __restrict__ spectrum,
                                                                                  float* __restrict__ out, int h, int w) {
  in += (long long)blockIdx.z * h * w;  // image blockIdx.z of a batch (grid.z = b)
  out += (long long)blockIdx.z * h * w;
  extern __shared__ float2 smem[];
  float2* ring = smem;                     // RING rows of PITCH: spectra of staged rows, slot t % RING
  float2* sums = ring + RING * PITCH;      // TY rows of PITCH: this step's output spectra
  float2* twiddle = sums + TY * PITCH;     // [k2 * G + n1] = exp(-2 pi i n1 k2 / N)
  const int tid = threadIdx.x;
  const int all_steps = (h + TY - 1) / TY;
  const int seg_steps = (all_steps + gridDim.y - 1) / gridDim.y;
  const int first_step = blockIdx.y * seg_steps;
  const int steps = min(seg_steps, all_steps - first_step);
  if (steps <= 0) return;
  init_twiddles(twiddle, tid, THREADS);
  const auto [x0, has_b] = tile_pair(w);
  const bool inside = has_b && x0 >= 0 && x0 + VX + N <= w;     // both tiles' columns in the image
  const int ybase = first_step * TY - RADIUS;                   // staged row t is image row ybase + t
  const int line = tid / G, n1 = tid % G;                       // line passes: a row, G threads
  const int bin0 = tid % BIN_STRIDE, j0 = tid / BIN_STRIDE * PY;  // the y pass: bins bin0 + b N / BINS, rows j0 ..
  float2 taps[FW][BINS];
#pragma unroll
  for (int m = 0; m < FW; ++m)
#pragma unroll
    for (int b = 0; b < BINS; ++b) taps[m][b] = __ldg(spectrum + m * N + bin0 + b * BIN_STRIDE);
  __syncthreads();  // the twiddles

  // Staged rows 0 .. 2r - 1: the rows above the first step's outputs.
  float raw[2][P];
  for (int t0 = 0; t0 < 2 * RADIUS; t0 += TY) {
    const int t = t0 + line;
    load_line(raw, in, ybase + t, x0, n1, has_b, inside, h, w);
    stage_line(raw, ring + t % RING * PITCH, n1, t < 2 * RADIUS, twiddle);
  }
  load_line(raw, in, ybase + 2 * RADIUS + line, x0, n1, has_b, inside, h, w);
#pragma unroll 1
  for (int s = 0; s < steps; ++s) {
    // Step s stages rows 2r + s TY + line, then loads the next step's rows (their latency hides behind the
    // y pass); the ring then holds rows s TY .. s TY + TY + 2r - 1, the step's window.
    stage_line(raw, ring + (2 * RADIUS + s * TY + line) % RING * PITCH, n1, true, twiddle);
    if (s + 1 < steps) load_line(raw, in, ybase + 2 * RADIUS + (s + 1) * TY + line, x0, n1, has_b, inside, h, w);
    __syncthreads();
    {
      float2 acc[PY][BINS];
#pragma unroll
      for (int j = 0; j < PY; ++j)
#pragma unroll
        for (int b = 0; b < BINS; ++b) acc[j][b] = make_float2(0.0f, 0.0f);
      const int slot0 = (s * TY + j0) % RING;
#pragma unroll
      for (int i = 0; i < PY + 2 * RADIUS; ++i) {
        const int slot = slot0 + i < RING ? slot0 + i : slot0 + i - RING;
#pragma unroll
        for (int b = 0; b < BINS; ++b) {
          const float2 v = ring[slot * PITCH + bin0 + b * BIN_STRIDE];
#pragma unroll
          for (int j = 0; j < PY; ++j) {
            const int m = i - j;
            if (m >= 0 && m < FW) {
              acc[j][b].x = fmaf(v.x, taps[m][b].x, fmaf(-v.y, taps[m][b].y, acc[j][b].x));
              acc[j][b].y = fmaf(v.x, taps[m][b].y, fmaf(v.y, taps[m][b].x, acc[j][b].y));
            }
          }
        }
      }
#pragma unroll
      for (int j = 0; j < PY; ++j)
#pragma unroll
        for (int b = 0; b < BINS; ++b) sums[(j0 + j) * PITCH + bin0 + b * BIN_STRIDE] = acc[j][b];
    }
    // The sums are complete, and every thread is past reading the ring rows the next step overwrites.
    __syncthreads();
    float2* row = sums + line * PITCH;
    float2 x[P];
#pragma unroll
    for (int m = 0; m < P; ++m) x[m] = row[n1 + G * m];
    fft_line<true>(x, row, 1, n1, true, twiddle, [] { __syncwarp(); });
    const int y = (first_step + s) * TY + line;
    if (y < h) {  // the valid columns k in [r, r + VX) of tile a, and of tile b VX further
      float* dst = out + (long long)y * w;
#pragma unroll
      for (int m = 0; m < P; ++m) {
        const int k = n1 + G * m, xa = x0 + k, xb = xa + VX;
        if (k < RADIUS || k >= RADIUS + VX) continue;
        if (inside) {
          dst[xa] = x[m].x;
          dst[xb] = x[m].y;
        } else {
          if (xa >= 0 && xa < w) dst[xa] = x[m].x;
          if (has_b && xb < w) dst[xb] = x[m].y;
        }
      }
    }
  }
}
