// Direct tiled convolution of a layer. A block computes one image's TILE_H x TILE_W output tile for MAPS
// output maps; IN_CHUNK input maps at a time, it stages the input tile with its halo and the group's filter
// taps in shared memory; each thread computes MAPS_PER_THREAD maps x PIX_PER_THREAD consecutive pixels of
// one row from a register window of its input row, so that every filter value read from shared memory
// (a broadcast, MAPS_PER_THREAD at a time) feeds PIX_PER_THREAD multiply-adds per map.
//
// The same kernel runs backward-data: dE/dX is the forward correlation of dy dilated by the stride (zeros
// between its pixels), padded by r-1-pad, with the filter flipped and its two map axes swapped (FLIP_SWAP).
// Defines (variants/layer_fwd/direct_tiled.cpp): OUT_MAPS IN_MAPS IN_H IN_W OUT_H OUT_W STRIDE_H STRIDE_W
// DIL_H DIL_W PAD_TOP PAD_LEFT R S FLIP_SWAP BIAS RELU TILE_W TILE_H MAPS MAPS_PER_THREAD PIX_PER_THREAD
// IN_CHUNK.

#define THREADS_X (TILE_W / PIX_PER_THREAD)
#define GROUPS (MAPS / MAPS_PER_THREAD)
#define THREADS (THREADS_X * TILE_H * GROUPS)
#define TILE_IN_H ((TILE_H - 1) * STRIDE_H + R)
#define TILE_IN_W ((TILE_W - 1) * STRIDE_W + S)
#define WINDOW ((PIX_PER_THREAD - 1) * STRIDE_W + S)
#define TILES_X ((OUT_W + TILE_W - 1) / TILE_W)
// At stride 1 with PIX_PER_THREAD a multiple of 4, tile rows are padded to an odd number of float4s so
// that a thread reads its window as float4s (a quarter of the shared-memory loads) and, at 4 threads a row
// (TILE_W 32, 8 pixels a thread), a quarter-warp's two rows start on different bank quads. A window's last
// float4 may read up to 3 padding floats of its own row (never written; loaded, never used); the 4 floats
// after the tile are a margin only.
#define VEC_WINDOW (STRIDE_W == 1 && PIX_PER_THREAD % 4 == 0)
#define TILE_IN_STRIDE (VEC_WINDOW ? ((TILE_IN_W + 3) / 4 | 1) * 4 : TILE_IN_W)
#define TAPS_FLOATS ((IN_CHUNK * R * S * MAPS + 3) / 4 * 4)

// Input map m at dilated coordinates (y, x): a pixel where both are multiples of the dilation, else zero.
__device__ __forceinline__ float input_at(const float* __restrict__ image, int m, int y, int x) {
  if (y < 0 || x < 0 || y % DIL_H != 0 || x % DIL_W != 0) return 0.f;
  y /= DIL_H;
  x /= DIL_W;
  if (y >= IN_H || x >= IN_W) return 0.f;
  return image[(m * IN_H + y) * IN_W + x];
}

// Tap (i, j) between output map o and input map m: w[o][m][i][j] forward, w[m][o][R-1-i][S-1-j] backward.
__device__ __forceinline__ float tap_at(const float* __restrict__ w, int o, int m, int i, int j) {
#if FLIP_SWAP
  return w[((m * OUT_MAPS + o) * R + (R - 1 - i)) * S + (S - 1 - j)];
#else
  return w[((o * IN_MAPS + m) * R + i) * S + j];
#endif
}

__device__ __forceinline__ void load_taps(const float* __restrict__ taps, float (&f)[MAPS_PER_THREAD]) {
#if MAPS_PER_THREAD % 4 == 0
#pragma unroll
  for (int m = 0; m < MAPS_PER_THREAD; m += 4) {
    const float4 v = *reinterpret_cast<const float4*>(taps + m);
    f[m] = v.x;
    f[m + 1] = v.y;
    f[m + 2] = v.z;
    f[m + 3] = v.w;
  }
#else
#pragma unroll
  for (int m = 0; m < MAPS_PER_THREAD; ++m) f[m] = taps[m];
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS) layer_direct_tiled_kernel(const float* __restrict__ in,
                                                                                const float* __restrict__ w,
#if BIAS
                                                                                const float* __restrict__ bias,
#endif
                                                                                float* __restrict__ out, void*) {
  extern __shared__ __align__(16) float smem[];
  float* taps = smem;                 // [IN_CHUNK][R][S][MAPS]: MAPS fastest, for float4 reads
  float* tile = smem + TAPS_FLOATS;   // [IN_CHUNK][TILE_IN_H][TILE_IN_STRIDE], 16-byte aligned
  const int tx = threadIdx.x, ty = threadIdx.y, group = threadIdx.z;
  const int tid = (group * TILE_H + ty) * THREADS_X + tx;
  const int out_y0 = (blockIdx.x / TILES_X) * TILE_H, out_x0 = (blockIdx.x % TILES_X) * TILE_W;
  const int map0 = blockIdx.y * MAPS;
  const float* image = in + size_t(blockIdx.z) * IN_MAPS * IN_H * IN_W;
  const int in_y0 = out_y0 * STRIDE_H - PAD_TOP, in_x0 = out_x0 * STRIDE_W - PAD_LEFT;

  float acc[MAPS_PER_THREAD][PIX_PER_THREAD];
#pragma unroll
  for (int m = 0; m < MAPS_PER_THREAD; ++m)
#pragma unroll
    for (int t = 0; t < PIX_PER_THREAD; ++t) acc[m][t] = 0.f;

  for (int m0 = 0; m0 < IN_MAPS; m0 += IN_CHUNK) {
    for (int e = tid; e < IN_CHUNK * TILE_IN_H * TILE_IN_W; e += THREADS) {
      const int x = e % TILE_IN_W, y = (e / TILE_IN_W) % TILE_IN_H, m = e / (TILE_IN_W * TILE_IN_H);
      tile[(m * TILE_IN_H + y) * TILE_IN_STRIDE + x] = m0 + m < IN_MAPS ? input_at(image, m0 + m, in_y0 + y, in_x0 + x) : 0.f;
    }
    for (int e = tid; e < IN_CHUNK * R * S * MAPS; e += THREADS) {
      const int o = e % MAPS, j = (e / MAPS) % S, i = (e / (MAPS * S)) % R, m = e / (MAPS * S * R);
      taps[e] = map0 + o < OUT_MAPS && m0 + m < IN_MAPS ? tap_at(w, map0 + o, m0 + m, i, j) : 0.f;
    }
    __syncthreads();
#pragma unroll 1
    for (int m = 0; m < IN_CHUNK; ++m) {
#pragma unroll
      for (int i = 0; i < R; ++i) {
        const float* row = tile + (m * TILE_IN_H + ty * STRIDE_H + i) * TILE_IN_STRIDE + tx * PIX_PER_THREAD * STRIDE_W;
        float window[(WINDOW + 3) / 4 * 4];
#if VEC_WINDOW
#pragma unroll
        for (int t = 0; t < WINDOW; t += 4) {
          const float4 v = *reinterpret_cast<const float4*>(row + t);
          window[t] = v.x, window[t + 1] = v.y, window[t + 2] = v.z, window[t + 3] = v.w;
        }
#else
#pragma unroll
        for (int t = 0; t < WINDOW; ++t) window[t] = row[t];
#endif
#pragma unroll
        for (int j = 0; j < S; ++j) {
          float f[MAPS_PER_THREAD];
          load_taps(taps + ((m * R + i) * S + j) * MAPS + group * MAPS_PER_THREAD, f);
#pragma unroll
          for (int o = 0; o < MAPS_PER_THREAD; ++o)
#pragma unroll
            for (int t = 0; t < PIX_PER_THREAD; ++t) acc[o][t] = fmaf(window[t * STRIDE_W + j], f[o], acc[o][t]);
        }
      }
    }
    __syncthreads();
  }

  const int y = out_y0 + ty;
  if (y >= OUT_H) return;
#pragma unroll
  for (int o = 0; o < MAPS_PER_THREAD; ++o) {
    const int map = map0 + group * MAPS_PER_THREAD + o;
    if (map >= OUT_MAPS) break;
    float* dst = out + ((size_t(blockIdx.z) * OUT_MAPS + map) * OUT_H + y) * OUT_W;
#pragma unroll
    for (int t = 0; t < PIX_PER_THREAD; ++t) {
      const int x = out_x0 + tx * PIX_PER_THREAD + t;
      if (x >= OUT_W) break;
      float v = acc[o][t];
#if BIAS
      v += bias[map];
#endif
#if RELU
      v = v < 0.f ? 0.f : v;  // not fmaxf: a NaN must stay visible
#endif
      dst[x] = v;
    }
  }
}
