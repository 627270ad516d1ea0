#include "variants/layer_common/fft_layer_kernels.h"

#include <algorithm>
#include <string>

#include "harness/error.h"
#include "harness/gpu_kernels.h"
#include "variants/layer_common/kernels/layer_epilogue.cuh"

namespace convtune {
namespace {

// Memory-bound kernels. A block takes one tile column and a group of maps; its threads lie across a row of
// the tile (width `w` <= 32: kFftThreads / w rows at a time) and walk the group's (map, row) pairs with counters
// instead of a division per element.
constexpr int kFftThreads = 256;
constexpr int kFftElementsPerBlock = 8192;

struct RowWalk {
  int x, row_lane, rows_at_once;
  __device__ explicit RowWalk(int width)
      : x(int(threadIdx.x) % width), row_lane(int(threadIdx.x) / width), rows_at_once(kFftThreads / width) {}
};

__global__ void __launch_bounds__(kFftThreads)
gather_kernel(const float* __restrict__ src, float* __restrict__ tiles, FftGather g, int maps_per_block) {
  const RowWalk walk(g.t);
  if (walk.row_lane >= walk.rows_at_once) return;
  const int column = blockIdx.x, first = blockIdx.y * maps_per_block, last = min(g.maps, first + maps_per_block);
  const FftTileOrigin o = g.origin(column);
  int map = first, y = walk.row_lane;
  for (; y >= g.t; y -= g.t) ++map;
  while (map < last) {
    const int64_t from = g.source(o, map, y, walk.x);
    tiles[g.tile_index(column, map, y, walk.x)] = from < 0 ? 0.0f : __ldg(src + from);
    for (y += walk.rows_at_once; y >= g.t; y -= g.t) ++map;
  }
}

template <int Act>
__global__ void __launch_bounds__(kFftThreads)
scatter_kernel(const float* __restrict__ tiles, const float* __restrict__ bias_of_maps, float* __restrict__ out,
               FftScatter g, float scale, int maps_per_block) {
  const RowWalk walk(g.step_x);
  if (walk.row_lane >= walk.rows_at_once) return;
  const int column = blockIdx.x, first = blockIdx.y * maps_per_block, last = min(g.maps, first + maps_per_block);
  const FftTileOrigin o = g.origin(column);
  int map = first, i = walk.row_lane;
  for (; i >= g.step_y; i -= g.step_y) ++map;
  while (map < last) {
    const int64_t to = g.output(o, map, i, walk.x);
    if (to >= 0) {
      float v = __ldg(tiles + g.tile_index(column, map, i, walk.x)) * scale;
      if (bias_of_maps) v += __ldg(bias_of_maps + map);
      out[to] = layer_activation<Act>(v);
    }
    for (i += walk.rows_at_once; i >= g.step_y; i -= g.step_y) ++map;
  }
}

__global__ void __launch_bounds__(kFftThreads)
pad_filters_kernel(const float* __restrict__ filters, float* __restrict__ tiles, int count, int r, int s, int t) {
  const int64_t total = int64_t(count) * t * t;
  for (int64_t e = blockIdx.x * int64_t(kFftThreads) + threadIdx.x; e < total; e += int64_t(gridDim.x) * kFftThreads) {
    const int x = int(e % t), y = int(e / t % t);
    const int64_t f = e / (int64_t(t) * t);
    tiles[e] = (y < r && x < s) ? __ldg(filters + (f * r + y) * s + x) : 0.0f;
  }
}

__global__ void __launch_bounds__(kFftThreads)
crop_filters_kernel(const float* __restrict__ tiles, float* __restrict__ filters, int count, int r, int s, int t,
                    float scale) {
  const int total = count * r * s;  // < 2^31: a filter tensor's bound
  for (int e = blockIdx.x * kFftThreads + threadIdx.x; e < total; e += gridDim.x * kFftThreads) {
    const int j = e % s, i = e / s % r, f = e / (r * s);
    filters[e] = __ldg(tiles + (int64_t(f) * t + i) * t + j) * scale;
  }
}

// Blocks of one column and `maps_per_block` maps, about kFftElementsPerBlock elements each.
dim3 fft_column_grid(int columns, int maps, int tile_elements, int* maps_per_block) {
  *maps_per_block = std::max(1, std::min(maps, kFftElementsPerBlock / tile_elements));
  return dim3(unsigned(columns), unsigned((maps + *maps_per_block - 1) / *maps_per_block));
}

void check_fft_width(int width, const char* what) {
  if (width < 1 || width > 32) throw InputError(std::string("FFT layer kernels: ") + what + " " + std::to_string(width) + "; allowed: 1..32");
}

}  // namespace

void fft_layer_gather(const float* src, float* tiles, const FftGather& g, cudaStream_t s) {
  check_fft_width(g.t, "tile size");
  int maps_per_block = 0;
  const dim3 grid = fft_column_grid(g.columns(), g.maps, g.t * g.t, &maps_per_block);
  gather_kernel<<<grid, kFftThreads, 0, s>>>(src, tiles, g, maps_per_block);
  CT_CHECK_LAUNCH();
}

void fft_layer_pad_filters(const float* filters, float* tiles, int count, int r, int s, int t, cudaStream_t stream) {
  pad_filters_kernel<<<grid_for(int64_t(count) * t * t, kFftThreads), kFftThreads, 0, stream>>>(filters, tiles, count, r, s, t);
  CT_CHECK_LAUNCH();
}

void fft_layer_scatter(const float* tiles, const float* bias_of_maps, float* out, const FftScatter& g, float scale,
                       int act, cudaStream_t s) {
  check_fft_width(g.step_x, "valid outputs per tile row");
  int maps_per_block = 0;
  const dim3 grid = fft_column_grid(g.columns(), g.maps, g.step_y * g.step_x, &maps_per_block);
  switch (act) {
    case 0: scatter_kernel<0><<<grid, kFftThreads, 0, s>>>(tiles, bias_of_maps, out, g, scale, maps_per_block); break;
    case 1: scatter_kernel<1><<<grid, kFftThreads, 0, s>>>(tiles, bias_of_maps, out, g, scale, maps_per_block); break;
    case 2: scatter_kernel<2><<<grid, kFftThreads, 0, s>>>(tiles, bias_of_maps, out, g, scale, maps_per_block); break;
    case 3: scatter_kernel<3><<<grid, kFftThreads, 0, s>>>(tiles, bias_of_maps, out, g, scale, maps_per_block); break;
    default: throw InputError("fft_layer_scatter: activation " + std::to_string(act) + "; allowed: 0..3");
  }
  CT_CHECK_LAUNCH();
}

void fft_layer_crop_filters(const float* tiles, float* filters, int count, int r, int s, int t, float scale,
                            cudaStream_t stream) {
  crop_filters_kernel<<<grid_for(int64_t(count) * r * s, kFftThreads), kFftThreads, 0, stream>>>(tiles, filters, count, r, s,
                                                                                           t, scale);
  CT_CHECK_LAUNCH();
}

}  // namespace convtune
