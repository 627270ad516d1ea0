// Direct backward-filter: dw[k,c,i,j] = sum over (image, p, q) of x[image, c, p*U-PAD_H+i, q*V-PAD_W+j] *
// dy[image, k, p, q]. A warp owns MAPS_PER_THREAD maps x S taps of one (c, i) pair; its 32 lanes take 32
// consecutive output columns of a row, so both loads are coalesced and each dy value feeds S multiply-adds,
// each x value MAPS_PER_THREAD. A block holds the R warps of C_PER_BLOCK input maps for one map group: they
// read the same dy rows at once, and x row p*U+i again at the next row, so both come from L1, not L2.
// The (image, row, 32-column block) segments are cut into SPLITS contiguous ranges (grid.x); each block
// writes its warp-reduced partial sums to the workspace [SPLITS][K*C*R*S], and a second kernel adds the
// splits in a fixed order: deterministic, no atomics.
// Defines: the shape (N C H W K R S PAD_H PAD_W U V P Q), MAPS_PER_THREAD, C_PER_BLOCK, SPLITS.

#define MAP_GROUPS ((K + MAPS_PER_THREAD - 1) / MAPS_PER_THREAD)
#define COLUMN_BLOCKS ((Q + 31) / 32)
#define SEGMENTS (N * P * COLUMN_BLOCKS)
#define FILTER_ELEMENTS (K * C * R * S)
#define WARPS (R * C_PER_BLOCK)
#define SEGMENTS_PER_SPLIT ((SEGMENTS + SPLITS - 1) / SPLITS)

extern "C" __global__ void __launch_bounds__(32 * WARPS)
    layer_bwd_filter_direct_kernel(const float* __restrict__ x, const float* __restrict__ dy, float*, void* workspace) {
  const int lane = threadIdx.x;
  const int c_groups = (C + C_PER_BLOCK - 1) / C_PER_BLOCK;  // blockIdx.y = (map group, c group)
  const int i = threadIdx.y % R, c = (blockIdx.y % c_groups) * C_PER_BLOCK + threadIdx.y / R;
  const int k0 = (blockIdx.y / c_groups) * MAPS_PER_THREAD;
  if (c >= C) return;  // uniform across the warp

  float acc[MAPS_PER_THREAD][S];
#pragma unroll
  for (int m = 0; m < MAPS_PER_THREAD; ++m)
#pragma unroll
    for (int j = 0; j < S; ++j) acc[m][j] = 0.f;

  const int first = blockIdx.x * SEGMENTS_PER_SPLIT;
  const int last = first + SEGMENTS_PER_SPLIT < SEGMENTS ? first + SEGMENTS_PER_SPLIT : SEGMENTS;
  for (int segment = first; segment < last; ++segment) {
    const int q = (segment % COLUMN_BLOCKS) * 32 + lane, p = (segment / COLUMN_BLOCKS) % P;
    const int image = segment / (COLUMN_BLOCKS * P);
    const int row = p * U - PAD_H + i;
    if (q >= Q || row < 0 || row >= H) continue;
    float g[MAPS_PER_THREAD];
#pragma unroll
    for (int m = 0; m < MAPS_PER_THREAD; ++m)
      g[m] = k0 + m < K ? dy[((size_t(image) * K + k0 + m) * P + p) * Q + q] : 0.f;
    const float* x_row = x + ((size_t(image) * C + c) * H + row) * W;
#pragma unroll
    for (int j = 0; j < S; ++j) {
      const int col = q * V - PAD_W + j;
      const float v = col >= 0 && col < W ? x_row[col] : 0.f;
#pragma unroll
      for (int m = 0; m < MAPS_PER_THREAD; ++m) acc[m][j] = fmaf(v, g[m], acc[m][j]);
    }
  }

  // Butterfly: every lane ends with the warp's sums; lane e % 32 stores entry e.
  float* partial = static_cast<float*>(workspace) + size_t(blockIdx.x) * FILTER_ELEMENTS;
#pragma unroll
  for (int m = 0; m < MAPS_PER_THREAD; ++m)
#pragma unroll
    for (int j = 0; j < S; ++j) {
      float v = acc[m][j];
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
      if ((m * S + j) % 32 == lane && k0 + m < K) partial[(((k0 + m) * C + c) * R + i) * S + j] = v;
    }
}

#include "layer_bwd_filter_sum_splits.cuh"
