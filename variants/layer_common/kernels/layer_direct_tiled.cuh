// Direct tiled convolution of a layer. A block computes one image's TILE_H x TILE_W output tile for MAPS
// output maps; IN_CHUNK input maps at a time, it stages the input tile with its halo and the group's filter
// taps in shared memory; each thread computes MAPS_PER_THREAD maps x ROWS_PER_THREAD rows x PIX_PER_THREAD
// consecutive pixels from a register window of one input row at a time, so that every filter value read
// from shared memory (a broadcast, MAPS_PER_THREAD at a time) feeds PIX_PER_THREAD multiply-adds per map,
// and every input row read feeds each of the thread's output rows it reaches. Few output maps (the 3 RGB
// maps of a first layer's backward-data) leave nothing to share a window across but rows.
//
// The same kernel runs backward-data: dE/dX is the forward correlation of dy dilated by the stride (zeros
// between its pixels), padded by r-1-pad, with the filter flipped and its two map axes swapped (FLIP_SWAP).
// Defines (variants/layer_common/direct_tiled.cpp): OUT_MAPS IN_MAPS IN_H IN_W OUT_H OUT_W STRIDE_H STRIDE_W
// DIL_H DIL_W PAD_TOP PAD_LEFT R S FLIP_SWAP BIAS ACT (forward: layer_epilogue.cuh) TILE_W TILE_H MAPS
// MAPS_PER_THREAD PIX_PER_THREAD ROWS_PER_THREAD IN_CHUNK STAGES.
//
// Staging copies each element with cp.async where the GPU has it (sm_80 and later), so a thread has all
// of its chunk's loads in flight at once; a plain load into a register, then a store, keeps one in flight.
#include "async_copy.cuh"
#include "layer_epilogue.cuh"

#define THREADS_X (TILE_W / PIX_PER_THREAD)
#define GROUPS (MAPS / MAPS_PER_THREAD)
#define THREADS_Y (TILE_H / ROWS_PER_THREAD)
#define THREADS (THREADS_X * THREADS_Y * GROUPS)
#define TILE_IN_H ((TILE_H - 1) * STRIDE_H + R)
#define TILE_IN_W ((TILE_W - 1) * STRIDE_W + S)
#define WINDOW ((PIX_PER_THREAD - 1) * STRIDE_W + S)
#define WINDOW_ROWS ((ROWS_PER_THREAD - 1) * STRIDE_H + R)
#define TILES_X ((OUT_W + TILE_W - 1) / TILE_W)
// At stride 1 with PIX_PER_THREAD a multiple of 4, tile rows are padded to an odd number of float4s so
// that a thread reads its window as float4s (a quarter of the shared-memory loads) and, at 4 threads a row
// (TILE_W 32, 8 pixels a thread), a quarter-warp's two rows start on different bank quads. A window's last
// float4 may read up to 3 padding floats of its own row (never written; loaded, never used); the 4 floats
// after the tile are a margin only.
#define VEC_WINDOW (STRIDE_W == 1 && PIX_PER_THREAD % 4 == 0)
#define TILE_IN_STRIDE (VEC_WINDOW ? ((TILE_IN_W + 3) / 4 | 1) * 4 : TILE_IN_W)
// A thread's maps of one tap are adjacent; where they are 3 to 7 they are padded to a multiple of 4, so
// that they are read as float4s (a broadcast each) instead of one load per map.
#define MAPS_PAD (MAPS_PER_THREAD > 2 ? (MAPS_PER_THREAD + 3) / 4 * 4 : MAPS_PER_THREAD)
#define TAP_STRIDE (GROUPS * MAPS_PAD)
#define TAPS_FLOATS ((IN_CHUNK * R * S * TAP_STRIDE + 3) / 4 * 4)
// One stage: a chunk's taps, then its input tile; STAGES of them (2: the next chunk is copied while this
// one is computed, where cp.async is there to copy it).
#define STAGE_FLOATS (TAPS_FLOATS + (IN_CHUNK * TILE_IN_H * TILE_IN_STRIDE + 3) / 4 * 4)

// Where input map m at dilated coordinates (y, x) is a pixel of `image` (both multiples of the dilation,
// inside the map), its offset; elsewhere the input is zero, and the offset 0. Branch-free: it is evaluated
// for every staged element.
__device__ __forceinline__ bool input_offset(int m, int y, int x, unsigned& off) {
  const bool inside = unsigned(y) < unsigned(IN_H * DIL_H) && unsigned(x) < unsigned(IN_W * DIL_W) &&
                      y % DIL_H == 0 && x % DIL_W == 0 && (IN_MAPS % IN_CHUNK == 0 || m < IN_MAPS);
  off = inside ? unsigned((m * IN_H + y / DIL_H) * IN_W + x / DIL_W) : 0u;
  return inside;
}

// One float into shared memory: src[off] where valid, else zero (src is then not read; off is 0).
__device__ __forceinline__ void stage(float* dst, const float* __restrict__ src, unsigned off, bool valid) {
#if __CUDA_ARCH__ >= 800
  cp_async<4>(dst, src + off, valid);
#else
  *dst = valid ? src[off] : 0.f;
#endif
}

// Waits for this thread's copies but the latest STAGES - 1 groups, then for every thread's.
__device__ __forceinline__ void staged() {
#if __CUDA_ARCH__ >= 800
  cp_async_wait<STAGES - 1>();
#endif
  __syncthreads();
}

__device__ __forceinline__ void stage_commit() {
#if __CUDA_ARCH__ >= 800
  cp_async_commit();
#endif
}

// Offset of tap ij = i * S + j between output map o and input map m: w[o][m][i][j] forward,
// w[m][o][R-1-i][S-1-j] backward.
__device__ __forceinline__ int tap_offset(int o, int m, int ij) {
#if FLIP_SWAP
  return (m * OUT_MAPS + o) * (R * S) + (R * S - 1 - ij);
#else
  return (o * IN_MAPS + m) * (R * S) + ij;
#endif
}

__device__ __forceinline__ void load_taps(const float* __restrict__ taps, float (&f)[MAPS_PER_THREAD]) {
#if MAPS_PAD % 4 == 0
#pragma unroll
  for (int m = 0; m < MAPS_PER_THREAD; m += 4) {
    const float4 v = *reinterpret_cast<const float4*>(taps + m);
    f[m] = v.x;
    if (m + 1 < MAPS_PER_THREAD) f[m + 1] = v.y;
    if (m + 2 < MAPS_PER_THREAD) f[m + 2] = v.z;
    if (m + 3 < MAPS_PER_THREAD) f[m + 3] = v.w;
  }
#else
#pragma unroll
  for (int m = 0; m < MAPS_PER_THREAD; ++m) f[m] = taps[m];
#endif
}

// Chunk m0's input tile and taps into one stage: taps [IN_CHUNK][R][S][GROUPS][MAPS_PAD] (a thread's maps
// adjacent), then the tile [IN_CHUNK][TILE_IN_H][TILE_IN_STRIDE] (16-byte aligned); one commit group.
__device__ __forceinline__ void stage_chunk(float* taps, const float* __restrict__ image, const float* __restrict__ w,
                                            int m0, int map0, int in_y0, int in_x0, int tid) {
  float* tile = taps + TAPS_FLOATS;
  // Elements tid, tid + THREADS, ... as (m, y, x), stepped without a division each: staging is most of
  // what a thread does besides its multiply-adds.
  int x = tid % TILE_IN_W, y = tid / TILE_IN_W % TILE_IN_H, m = tid / (TILE_IN_W * TILE_IN_H);
  int slot = (m * TILE_IN_H + y) * TILE_IN_STRIDE + x;  // rows of all maps are consecutive there
#pragma unroll 4
  for (int e = tid; e < IN_CHUNK * TILE_IN_H * TILE_IN_W; e += THREADS) {
    unsigned off;
    const bool valid = input_offset(m0 + m, in_y0 + y, in_x0 + x, off);
    stage(tile + slot, image, off, valid);
    x += THREADS % TILE_IN_W;
    y += THREADS / TILE_IN_W;
    slot += THREADS / TILE_IN_W * TILE_IN_STRIDE + THREADS % TILE_IN_W;
    if (x >= TILE_IN_W) x -= TILE_IN_W, ++y, slot += TILE_IN_STRIDE - TILE_IN_W;
    if (THREADS / TILE_IN_W < TILE_IN_H) {  // then y grew by TILE_IN_H at most: one wrap
      if (y >= TILE_IN_H) y -= TILE_IN_H, ++m;
    } else {
      m += y / TILE_IN_H, y %= TILE_IN_H;
    }
  }
  for (int e = tid; e < IN_CHUNK * R * S * TAP_STRIDE; e += THREADS) {
    const int slot = e % TAP_STRIDE, tap = e / TAP_STRIDE;  // tap: (m, i, j) of the chunk
    const int m = tap / (R * S), o = slot / MAPS_PAD * MAPS_PER_THREAD + slot % MAPS_PAD;
    const bool valid = slot % MAPS_PAD < MAPS_PER_THREAD && map0 + o < OUT_MAPS &&
                       (IN_MAPS % IN_CHUNK == 0 || m0 + m < IN_MAPS);
    stage(taps + e, w, valid ? unsigned(tap_offset(map0 + o, m0 + m, tap % (R * S))) : 0u, valid);
  }
  stage_commit();
}

extern "C" __global__ void __launch_bounds__(THREADS)
    layer_direct_tiled_kernel(const float* __restrict__ in, const float* __restrict__ w, BIAS_PARAM float* __restrict__ out,
                              void*) {
  extern __shared__ __align__(16) float smem[];
  const int tx = threadIdx.x, ty = threadIdx.y, group = threadIdx.z;
  const int tid = (group * THREADS_Y + ty) * THREADS_X + tx;
  const int out_y0 = (blockIdx.x / TILES_X) * TILE_H, out_x0 = (blockIdx.x % TILES_X) * TILE_W;
  const int map0 = blockIdx.y * MAPS;
  const float* image = in + size_t(blockIdx.z) * IN_MAPS * IN_H * IN_W;
  asm("" : "+l"(image));  // opaque: added once here, not folded into every staged element's address
  const int in_y0 = out_y0 * STRIDE_H - PAD_TOP, in_x0 = out_x0 * STRIDE_W - PAD_LEFT;

  float acc[ROWS_PER_THREAD][MAPS_PER_THREAD][PIX_PER_THREAD];
#pragma unroll
  for (int q = 0; q < ROWS_PER_THREAD; ++q)
#pragma unroll
    for (int m = 0; m < MAPS_PER_THREAD; ++m)
#pragma unroll
      for (int t = 0; t < PIX_PER_THREAD; ++t) acc[q][m][t] = 0.f;

  stage_chunk(smem, image, w, 0, map0, in_y0, in_x0, tid);
  for (int m0 = 0, slot = 0; m0 < IN_MAPS; m0 += IN_CHUNK, slot = (slot + 1) % STAGES) {
    if (STAGES > 1) {  // the next chunk into the stage the previous one was computed from; always a group
      if (m0 + IN_CHUNK < IN_MAPS)
        stage_chunk(smem + (slot + 1) % STAGES * STAGE_FLOATS, image, w, m0 + IN_CHUNK, map0, in_y0, in_x0, tid);
      else
        stage_commit();
    }
    staged();
    const float* taps = smem + slot * STAGE_FLOATS;
    const float* tile = taps + TAPS_FLOATS;
#pragma unroll 1
    for (int m = 0; m < IN_CHUNK; ++m) {
#pragma unroll
      for (int row_in = 0; row_in < WINDOW_ROWS; ++row_in) {
        const float* row = tile + (m * TILE_IN_H + ty * ROWS_PER_THREAD * STRIDE_H + row_in) * TILE_IN_STRIDE +
                           tx * PIX_PER_THREAD * STRIDE_W;
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
        for (int q = 0; q < ROWS_PER_THREAD; ++q) {
          const int i = row_in - q * STRIDE_H;  // the filter row that joins this input row to output row q
          if (i < 0 || i >= R) continue;
#pragma unroll
          for (int j = 0; j < S; ++j) {
            float f[MAPS_PER_THREAD];
            load_taps(taps + ((m * R + i) * S + j) * TAP_STRIDE + group * MAPS_PAD, f);
#pragma unroll
            for (int o = 0; o < MAPS_PER_THREAD; ++o)
#pragma unroll
              for (int t = 0; t < PIX_PER_THREAD; ++t)
                acc[q][o][t] = fmaf(window[t * STRIDE_W + j], f[o], acc[q][o][t]);
          }
        }
      }
    }
    __syncthreads();
    if (STAGES == 1 && m0 + IN_CHUNK < IN_MAPS) stage_chunk(smem, image, w, m0 + IN_CHUNK, map0, in_y0, in_x0, tid);
  }

#pragma unroll
  for (int q = 0; q < ROWS_PER_THREAD; ++q) {
    const int y = out_y0 + ty * ROWS_PER_THREAD + q;
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
        dst[x] = layer_epilogue(bias, map, acc[q][o][t]);
      }
    }
  }
}
