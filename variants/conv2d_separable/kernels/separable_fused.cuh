// conv2d_separable in one kernel: a block loads its input tile with the halo (TH + 2R rows, TW + 2R columns
// and then some, float4 loads where aligned) into shared memory once, runs the row pass over every tile row
// (the halo rows too: the column pass needs them) into a shared intermediate of TH + 2R rows x TW, syncs,
// and runs the column pass from shared memory into registers (a PY x PX patch per thread), writing each
// output once. Global traffic: the image (plus halo re-reads, mostly L2 hits) and the output, nothing else.
// Compile-time: see separable_common.cuh.
#include "separable_common.cuh"

#define IN_H (TH + 2 * RADIUS)

extern "C" __global__ void __launch_bounds__(THREADS)
separable_fused(const float* __restrict__ in, float* __restrict__ out, int h, int w) {
  extern __shared__ float4 smem_raw[];  // 16-byte aligned
  float* tile = reinterpret_cast<float*>(smem_raw);  // IN_H x ROW_PITCH, image columns from x0 - LEAD
  float* mid = tile + IN_H * ROW_PITCH;                 // IN_H x TW, the row pass's results
  const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
  const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
  load_tile<IN_H, ROW_PITCH>(in, tile, y0 - RADIUS, x0 - LEAD, h, w, tid);
  __syncthreads();

  const int c0 = threadIdx.x * PX;
#pragma unroll 2
  for (int i = threadIdx.y; i < IN_H; i += BLOCK_Y) {
    float t[PX];
    row_pass(tile + i * ROW_PITCH + c0, t);
    Vec<PX> v;
#pragma unroll
    for (int q = 0; q < PX; ++q) v.v[q] = t[q];
    *reinterpret_cast<Vec<PX>*>(mid + i * TW + c0) = v;
  }
  __syncthreads();

  float acc[PY][PX];
  column_pass<TW>(mid + threadIdx.y * PY * TW + c0, acc);
  const bool vec = vector_stores(out, w);
#pragma unroll
  for (int j = 0; j < PY; ++j) store_row(out, acc[j], y0 + threadIdx.y * PY + j, x0 + c0, h, w, vec);
}
