// The direct tiled kernel (kernels/layer_direct_tiled.cuh) as a variant base: forward runs it on x,
// backward-data on dy dilated by the stride with the filter flipped and transposed. A role says which.
#pragma once
#include <string>
#include <vector>

#include "variants/layer_common/layer_variant.h"

namespace convtune {

class DirectTiledVariant : public JitLayerVariant {
 public:
  ParamSpace space(const Problem& p, const DeviceInfo& dev) const override;
  Cost cost(const Problem& p, const Config& c) const override;
  int complexity() const override { return 2; }

  // The correlation the kernel computes: maps and sizes on each side, stride, input dilation, padding;
  // flip_swap: tap (o, m, i, j) is filter[m][o][r-1-i][s-1-j] instead of filter[o][m][i][j].
  struct Correlation {
    int64_t out_maps, in_maps, in_h, in_w, out_h, out_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
    bool flip_swap;
  };
  virtual Correlation correlation(const LayerShape& l) const = 0;

 protected:
  std::string source() const override { return "layer_direct_tiled.cuh"; }
  std::vector<std::string> defines(const LayerShape& l, const Problem& p, const Config& c) const override;
  std::vector<LayerLaunch> launches(const LayerShape& l, const Config& c) const override;
  Status constraints(const LayerShape& l, const Config& c, const DeviceInfo&) const override;
};

}  // namespace convtune
