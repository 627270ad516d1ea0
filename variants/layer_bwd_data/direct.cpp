// layer_bwd_data.direct: the transposed-mask convolution of dE/dY. dx is the forward correlation of dy,
// dilated by the stride (u-1 zeros between its pixels; those taps multiply zeros), padded by r-1-pad,
// with the filter flipped and its maps transposed: the direct tiled kernel with that correlation.
#include "variants/layer_bwd_data/layer_bwd_data.h"
#include "variants/layer_common/direct_tiled.h"

namespace convtune {
namespace {

class LayerBwdDataDirect : public DirectTiledVariant {
 public:
  std::string name() const override { return "layer_bwd_data.direct"; }
  std::string family() const override { return kLayerBwdData; }
  std::string summary() const override {
    return "direct: dx = dy (dilated by the stride, padded by r-1-pad) correlated with the flipped, transposed "
           "filter; the direct tiled kernel (image, input-map group, dx tile), k maps staged at a time";
  }
  Tolerance tolerance(const Problem& p, const Config&) const override {
    return layer_tolerance(bwd_data_sum_length(LayerShape(p)), kMathFp32);
  }

 protected:
  Correlation correlation(const LayerShape& l) const override {
    return {l.c, l.k, l.p, l.q, l.h, l.w, 1, 1, l.u, l.v, l.r - 1 - l.pad_h, l.s - 1 - l.pad_w, true};
  }
};

CONVTUNE_REGISTER_VARIANT(LayerBwdDataDirect);

}  // namespace
}  // namespace convtune
