// conv2d_separable in two kernels through a float intermediate t in global memory (h x w):
// separable_rows: t = the row pass of the image; separable_columns: out = the column pass of t. Each stages
// its tile in shared memory with float4 loads where aligned; a thread computes PX outputs of PY rows.
// Twice the global traffic of the fused kernel (t is written and read back), no halo rows computed twice.
// Compile-time: see separable_common.cuh.
#include "separable_common.cuh"

#define COL_IN_H (TH + 2 * RADIUS)

// t(i, j) = sum_n row(n) * in(i, j+n-R) over a TH x TW tile; each thread's PY rows are BLOCK_Y apart.
extern "C" __global__ void __launch_bounds__(THREADS)
separable_rows(const float* __restrict__ in, float* __restrict__ out, int h, int w) {
  extern __shared__ float4 smem_raw[];
  float* tile = reinterpret_cast<float*>(smem_raw);  // TH x ROW_PITCH, image columns from x0 - LEAD
  const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
  const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
  load_tile<TH, ROW_PITCH>(in, tile, y0, x0 - LEAD, h, w, tid);
  __syncthreads();

  const int c0 = threadIdx.x * PX;
  const bool vec = vector_stores(out, w);
#pragma unroll
  for (int j = 0; j < PY; ++j) {
    const int i = threadIdx.y + j * BLOCK_Y;
    float t[PX];
    row_pass(tile + i * ROW_PITCH + c0, t);
    store_row(out, t, y0 + i, x0 + c0, h, w, vec);
  }
}

// out(i, j) = sum_m col(m) * t(i+m-R, j) over a TH x TW tile: the tile's TH + 2R rows of t in shared memory,
// a PY x PX patch per thread.
extern "C" __global__ void __launch_bounds__(THREADS)
separable_columns(const float* __restrict__ in, float* __restrict__ out, int h, int w) {
  extern __shared__ float4 smem_raw[];
  float* tile = reinterpret_cast<float*>(smem_raw);  // COL_IN_H x TW
  const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
  const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
  load_tile<COL_IN_H, TW>(in, tile, y0 - RADIUS, x0, h, w, tid);
  __syncthreads();

  const int c0 = threadIdx.x * PX;
  float acc[PY][PX];
  column_pass<TW>(tile + threadIdx.y * PY * TW + c0, acc);
  const bool vec = vector_stores(out, w);
#pragma unroll
  for (int j = 0; j < PY; ++j) store_row(out, acc[j], y0 + threadIdx.y * PY + j, x0 + c0, h, w, vec);
}
