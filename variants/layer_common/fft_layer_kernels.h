// The FFT layer variants' transforms (fft_layer.h), ahead-of-time CUDA: t x t real tiles to their spectra and
// back, t = 8, 16 or 32, with the tile gather and the output read fused in. Spectra are bin-major: the bins of
// transform b lie at spectra[bin * batch + b], bin = u * (t/2 + 1) + v (the Hermitian half, as cuFFT's R2C
// lays a 2D transform out), so that each bin's matrix is column-major for the GEMMs. Each launcher checks its
// launch.
#pragma once
#include <cuComplex.h>
#include <cuda_runtime.h>

#include "variants/layer_common/fft_layer_geometry.h"

namespace convtune {

inline constexpr int kFftLayerTransformSizes[] = {8, 16, 32};
inline bool fft_layer_transform_size(int t) {
  for (int size : kFftLayerTransformSizes)
    if (size == t) return true;
  return false;
}

// spectra = the forward transforms of the g.columns() * g.maps tiles g describes.
void fft_layer_spectra(const float* src, cuComplex* spectra, const FftGather& g, cudaStream_t s);
// out = scale * the inverse transforms of the g.columns() * g.maps spectra, read out as g says, plus
// bias_of_maps[map] (nullptr: none), then activation `act` (layer_epilogue.h: 0 none, 1 ReLU, 2 sigmoid, 3 tanh).
void fft_layer_outputs(const cuComplex* spectra, const float* bias_of_maps, float* out, const FftScatter& g, float scale,
                       int act, cudaStream_t s);

}  // namespace convtune
