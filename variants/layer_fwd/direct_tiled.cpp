// layer_fwd.direct_tiled: the ConvNets seed's tiled kernel done right (3D grid of image, output-map group
// and output tile; input tile plus halo and the taps in shared memory; a loop over input maps), with
// output-map and output-pixel coarsening per thread, any H and W, any stride.
#include "variants/layer_common/direct_tiled.h"

#include "variants/layer_fwd/layer_fwd.h"
#include "variants/layer_fwd/separate_epilogue.h"

namespace convtune {

namespace {

class LayerFwdDirectTiled : public EpilogueChoice<DirectTiledVariant> {
 public:
  std::string name() const override { return "layer_fwd.direct_tiled"; }
  std::string family() const override { return kLayerFwd; }
  std::string summary() const override {
    return "direct: block = (image, output-map group, output tile); input tile + halo and taps in shared memory, "
           "in_chunk input maps at a time; maps_per_thread x rows_per_thread x pix_per_thread outputs per thread; bias and "
           "activation fused (or separate: the epilogue parameter)";
  }
  Tolerance tolerance(const Problem& p, const Config&) const override {
    return layer_tolerance(forward_sum_length(LayerShape(p)), kMathFp32);
  }

 protected:
  Correlation correlation(const LayerShape& l) const override {
    return {l.k, l.c, l.h, l.w, l.p, l.q, l.u, l.v, 1, 1, l.pad_h, l.pad_w, false};
  }
};

CONVTUNE_REGISTER_VARIANT(LayerFwdDirectTiled);

}  // namespace
}  // namespace convtune
