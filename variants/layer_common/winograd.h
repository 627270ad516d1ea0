// The Winograd variants of the three layer passes (3x3 filters, stride 1), output blocks of m = 2 or 4
// (the `tile` parameter). Forward and backward-data, F(m x m, 3x3): per chunk of images, the input tiles are
// transformed (kernels/layer_winograd.cuh), multiplied by the transformed filter in (m+2)^2 strict-fp32
// cuBLAS GEMMs (one per transform point), and transformed back; the filter transform runs in every call too,
// as the weights of a training step change every step. Backward-filter, F(3x3, m x m): x's tiles and dy's
// m x m blocks of the whole batch transformed, (m+2)^2 GEMMs per chunk of images summing over its tiles (one
// batched call), the chunks' partials summed in order and the 3x3 dw transformed back. 16 multiplies stand
// for 36 (m = 2), 36 for 144 (m = 4): fewer than the FMA floor counts.
#pragma once
#include <string>

#include "harness/variant.h"
#include "variants/layer_common/kernels/layer_winograd_tiles.cuh"
#include "variants/layer_common/layer_shape.h"

namespace convtune {

// m: the output block of F(m x m, 3x3), 2 or 4.
wino::WinoDims winograd_dims(LayerPass pass, int m, const LayerShape& l);

class WinogradVariant : public Variant {
 public:
  explicit WinogradVariant(LayerPass pass) : pass_(pass) {}
  std::string summary() const override;
  ParamSpace space(const Problem& p, const DeviceInfo& dev) const override;
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override;
  Cost cost(const Problem& p, const Config& c) const override;
  Tolerance tolerance(const Problem& p, const Config& c) const override;
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override;
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo& dev,
                                JitCache& jit) const override;
  int complexity() const override { return 4; }

 private:
  LayerPass pass_;
};

// Floats of the workspace: the (m+2)^2 co x ci matrices, and the chunk's transformed tiles and co x T matrices
// (backward-filter: all of them for each of the batch's chunks).
int64_t winograd_workspace_floats(LayerPass pass, const wino::WinoDims& d, int64_t n, int64_t chunk);

}  // namespace convtune
