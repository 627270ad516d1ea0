// conv2d, beyond the seeds: no shared memory and no barrier. A thread owns 4 adjacent output columns of PY
// rows; it loads the PY + 2r input rows of its columns at once (one float4 a row), takes the 2r halo columns
// from the neighbouring lanes by shuffles (the columns just past the warp are loaded by 8 lanes, one float
// each), forms its sums, stores and exits. The taps come from the filter argument (the same addresses in
// every lane, loaded with the rows), not from constant memory: a constant-memory copy at each bind cost a
// bound call 5.5 us of host time on an H200 (9.3-10.4 against 4.0-4.7 us) and saved at most 0.6 us of
// kernel at 512^2, about 1% or less from 2048^2 on (docs/PERFORMANCE.md, 2026-11-29 (night)). Blocks are short-
// lived and each thread's loads are all in flight together, so the image streams as a copy kernel of one
// float4 a thread does (on an H200 such a copy matched cudaMemcpy, 4159 GB/s, where a grid-stride float4
// loop reached 3941). Each input row is read by the (PY + 2r) / PY threads that need it; the repeats hit
// L1 or L2.
// Compile-time: RADIUS (0..4: a halo within one neighbouring float4), BLOCK_X (threads along x, a multiple
// of 32), BLOCK_Y (walks one above the other), PY (output rows a thread).
#define FW (2 * RADIUS + 1)
#define ROWS (PY + 2 * RADIUS)  // input rows a thread reads
#define TX (BLOCK_X * 4)
#define FULL 0xffffffffu
static_assert(RADIUS >= 0 && RADIUS <= 4, "the halo comes from one neighbouring float4");
static_assert(BLOCK_X % 32 == 0, "whole warps along x");

struct Walk {
  int x;       // this thread's first column (a multiple of 4)
  int edge_x;  // the column this lane loads for its warp's edges (lanes 0-7), else -1 for none
  int y0;      // image row of input row 0: the first output row minus r
  int h, w;
  bool vec;    // rows of 4-float multiples and an aligned image: a float4 is wholly in or out
};

// Input row t's own 4 floats and edge float (zeros outside the image); `row` is the image row's start.
__device__ __forceinline__ void load_row(const Walk& k, const float* row, int t, float4& own, float& edge) {
  const int y = k.y0 + t;
  own = make_float4(0.0f, 0.0f, 0.0f, 0.0f), edge = 0.0f;
  if (y < 0 || y >= k.h) return;
  if (k.edge_x >= 0 && k.edge_x < k.w) edge = __ldg(row + k.edge_x);
  const float* p = row + k.x;
  if (k.vec) {
    if (k.x < k.w) own = __ldg(reinterpret_cast<const float4*>(p));
  } else {
    if (k.x < k.w) own.x = __ldg(p);
    if (k.x + 1 < k.w) own.y = __ldg(p + 1);
    if (k.x + 2 < k.w) own.z = __ldg(p + 2);
    if (k.x + 3 < k.w) own.w = __ldg(p + 3);
  }
}

// An input row's window: columns x - r .. x + 3 + r. Lane 0's left halo is the warp's left edge (lanes
// 0-3 hold columns x_warp - 4 .. x_warp - 1), lane 31's right halo the right edge (lanes 4-7).
__device__ __forceinline__ void window(float4 own, float edge, int lane, float (&win)[4 + 2 * RADIUS]) {
  const float m[4] = {own.x, own.y, own.z, own.w};
#pragma unroll
  for (int k = 0; k < RADIUS; ++k) {
    const float left = __shfl_up_sync(FULL, m[4 - RADIUS + k], 1);
    const float left_edge = __shfl_sync(FULL, edge, 4 - RADIUS + k);
    win[k] = lane == 0 ? left_edge : left;
    const float right = __shfl_down_sync(FULL, m[k], 1);
    const float right_edge = __shfl_sync(FULL, edge, 4 + k);
    win[RADIUS + 4 + k] = lane == 31 ? right_edge : right;
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) win[RADIUS + q] = m[q];
}

__device__ __forceinline__ void store_row(float* __restrict__ out, const float (&acc)[4], int y, int x, int h, int w,
                                          bool vec) {
  if (y >= h) return;
  float* p = out + (long long)y * w + x;
  if (vec) {
    if (x < w) *reinterpret_cast<float4*>(p) = make_float4(acc[0], acc[1], acc[2], acc[3]);
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (x + q < w) p[q] = acc[q];
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
conv2d_kernel(const float* __restrict__ in, const float* __restrict__ filter, float* __restrict__ out, int h, int w) {
  float taps[FW * FW];
#pragma unroll
  for (int i = 0; i < FW * FW; ++i) taps[i] = __ldg(filter + i);
  in += (long long)blockIdx.z * h * w;  // image blockIdx.z of a batch (grid.z = b)
  out += (long long)blockIdx.z * h * w;
  const int lane = threadIdx.x % 32;
  const int x = blockIdx.x * TX + threadIdx.x * 4;
  const int x_warp = x - 4 * lane;
  const int edge_x = lane < 4 ? x_warp - 4 + lane : lane < 8 ? x_warp + 128 + lane - 4 : -1;
  const bool vec = w % 4 == 0 && reinterpret_cast<unsigned long long>(in) % 16 == 0 &&
                   reinterpret_cast<unsigned long long>(out) % 16 == 0;
  const Walk k{x, edge_x, int(blockIdx.y * BLOCK_Y + threadIdx.y) * PY - RADIUS, h, w, vec};

  float4 own[ROWS];
  float edge[ROWS];
  const float* row = in + (long long)k.y0 * w;
#pragma unroll
  for (int t = 0; t < ROWS; ++t) {
    load_row(k, row, t, own[t], edge[t]);
    row += w;
  }
  float acc[PY][4];
#pragma unroll
  for (int o = 0; o < PY; ++o)
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[o][q] = 0.0f;
  // Input row t serves output row o through filter row t - o.
#pragma unroll
  for (int t = 0; t < ROWS; ++t) {
    float win[4 + 2 * RADIUS];
    window(own[t], edge[t], lane, win);
#pragma unroll
    for (int m = 0; m < FW; ++m) {
      const int o = t - m;
      if (o < 0 || o >= PY) continue;
#pragma unroll
      for (int n = 0; n < FW; ++n) {
        const float f = taps[m * FW + n];
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[o][q] = fmaf(f, win[q + n], acc[o][q]);
      }
    }
  }
#pragma unroll
  for (int o = 0; o < PY; ++o) store_row(out, acc[o], k.y0 + RADIUS + o, x, h, w, vec);
}
