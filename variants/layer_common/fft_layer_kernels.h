// Ahead-of-time helper kernels of the FFT layer variants (fft_layer.h): gathering tiles, padding filters,
// and reading outputs back out of inverse-transformed tiles. Each launcher checks its launch.
#pragma once
#include <cuda_runtime.h>

#include "variants/layer_common/fft_layer_geometry.h"

namespace convtune {

// tiles (g.elements() floats) = the windows g describes of src.
void fft_layer_gather(const float* src, float* tiles, const FftGather& g, cudaStream_t s);
// tiles [filters][t][t] = each r x s filter at the origin, zeros elsewhere.
void fft_layer_pad_filters(const float* filters, float* tiles, int filters_count, int r, int s, int t, cudaStream_t s_);
// out = scale * the tile elements g names, plus bias_of_maps[map] (nullptr: none), then activation `act`
// (layer_epilogue.h's values: 0 none, 1 ReLU, 2 sigmoid, 3 tanh).
void fft_layer_scatter(const float* tiles, const float* bias_of_maps, float* out, const FftScatter& g, float scale, int act,
                       cudaStream_t s);
// filters [count][r][s] = scale * each tile's r x s corner (backward-filter's dw).
void fft_layer_crop_filters(const float* tiles, float* filters, int filters_count, int r, int s, int t, float scale,
                            cudaStream_t s_);

}  // namespace convtune
