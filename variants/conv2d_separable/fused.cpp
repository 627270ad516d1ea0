// conv2d_separable.fused: one kernel; a block's input tile with its halo in shared memory, the row pass into
// a shared intermediate (the halo rows too), the column pass from it into registers
// (kernels/separable_fused.cuh). The image is read once (plus halo re-reads) and the output written once.
#include "variants/conv2d_separable/jit_separable.h"

namespace convtune {
namespace {

class SeparableFused : public JitSeparableVariant {
 public:
  std::string name() const override { return "conv2d_separable.fused"; }
  std::string summary() const override {
    return "one kernel: input tile with halo in shared memory, row pass into a shared intermediate (halo rows "
           "included), column pass into registers, px x py outputs per thread";
  }
  int complexity() const override { return 3; }

  std::vector<SeparableStep> steps(const Separable& p, const SeparableTiling& t) const override {
    const int64_t in_h = t.th() + 2 * p.r;  // the tile's rows, halo included
    return {{"separable_fused", dim3(blocks_for(p.w, t.tw()), blocks_for(p.h, t.th())),
             dim3(unsigned(t.block_x), unsigned(t.block_y)), 4 * in_h * (t.row_pitch(p.r) + t.tw()), false, false}};
  }

  Cost cost(const Problem& prob, const Config& c) const override {
    const Separable p(prob);
    const SeparableTiling t(c);
    const double blocks = double(blocks_for(p.w, t.tw())) * double(blocks_for(p.h, t.th()));
    const int64_t in_h = t.th() + 2 * p.r;
    // Per block: the row pass over th + 2r rows, the column pass over th; the input tile with its halo loaded
    // once; each output stored once.
    const double flops = 2.0 * double(p.fw()) * blocks * double((in_h + t.th()) * t.tw());
    const double bytes = 4.0 * (blocks * double(in_h * t.row_pitch(p.r)) + double(p.pixels()));
    return {prob.direct_flops(), flops, prob.min_bytes(), bytes};
  }

 protected:
  std::string source() const override { return "separable_fused.cuh"; }
  std::vector<json> py_values() const override { return {2, 4, 8}; }
};

CONVTUNE_REGISTER_VARIANT(SeparableFused);

}  // namespace
}  // namespace convtune
