// The FFT variants of the three layer passes (stride 1, filters of 3 to 16 taps a side): the tiled
// spectral method. Each t x t tile of the tiled operand and each filter (or, backward-filter, each of dy's
// blocks) is transformed by a kernel of our own that gathers its tiles (fft_layer_kernels.h; t = 8, 16, 32);
// per frequency bin, one complex GEMM sums over the channels (forward:
// Y = W^H X over c; backward-data: DX = W DY over k; backward-filter: DW = X DY^H over the batch's tiles),
// all bins in one strict-fp32 cuBLAS strided-batched call; the inverse transforms write the outputs, with the
// forward pass's bias and activation (fft_layer_geometry.h: which tile elements are outputs).
// The filter's transform runs in every call, as a training step's weights change every step.
//
// Spectra are stored bin-major, [bin][column][map], so that each bin's matrices are column-major with the
// map index contiguous.
#pragma once
#include <string>

#include "harness/variant.h"
#include "variants/layer_common/fft_layer_geometry.h"
#include "variants/layer_common/layer_shape.h"

namespace convtune {

FftLayerTiles fft_layer_tiles(LayerPass pass, int t, const LayerShape& l);

// The three transforms' batch counts: the first (the tiled input), the second (the filters, or
// backward-filter's dy blocks) and the third (the inverse: outputs, or backward-filter's dw).
struct FftBatches {
  int64_t first, second, third;
  int64_t largest() const;
  int64_t sum() const { return first + second + third; }
};
FftBatches fft_batches(const FftLayerTiles& g, const LayerShape& l);

class FftLayerVariant : public Variant {
 public:
  explicit FftLayerVariant(LayerPass pass) : pass_(pass) {}
  std::string summary() const override;
  ParamSpace space(const Problem& p, const DeviceInfo& dev) const override;
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override;
  Cost cost(const Problem& p, const Config& c) const override;
  Tolerance tolerance(const Problem& p, const Config& c) const override;
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo& dev,
                                JitCache& jit) const override;
  int complexity() const override { return 4; }

 private:
  LayerPass pass_;
};

}  // namespace convtune
