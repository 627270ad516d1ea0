// conv2d_separable.two_pass: a row pass into a float intermediate in global memory (scratch allocated with the
// plan), then a column pass from it (kernels/separable_two_pass.cuh).
#include "variants/conv2d_separable/jit_separable.h"

namespace convtune {
namespace {

class SeparableTwoPass : public JitSeparableVariant {
 public:
  std::string name() const override { return "conv2d_separable.two_pass"; }
  std::string summary() const override {
    return "row pass into an h x w float intermediate in global memory, then a column pass; shared-memory tiles "
           "with float4 loads, px x py outputs per thread";
  }
  int complexity() const override { return 2; }

  std::vector<SeparableStep> steps(const Separable& p, const SeparableTiling& t) const override {
    const dim3 grid(blocks_for(p.w, t.tw()), blocks_for(p.h, t.th()));
    const dim3 block(unsigned(t.block_x), unsigned(t.block_y));
    return {{"separable_rows", grid, block, 4 * t.th() * t.row_pitch(p.r), false, true},
            {"separable_columns", grid, block, 4 * (t.th() + 2 * p.r) * t.tw(), true, false}};
  }

  Cost cost(const Problem& prob, const Config& c) const override {
    const Separable p(prob);
    const SeparableTiling t(c);
    const double blocks = double(blocks_for(p.w, t.tw())) * double(blocks_for(p.h, t.th()));
    const double tile = double(t.tw() * t.th());
    // Each pass: 2r+1 multiply-adds per output of every (whole) tile; loads of its shared tile, and one store
    // per pixel (the intermediate, then the output).
    const double flops = 2.0 * 2.0 * double(p.fw()) * blocks * tile;
    const double rows = blocks * double(t.th() * t.row_pitch(p.r)) + double(p.pixels());
    const double columns = blocks * double((t.th() + 2 * p.r) * t.tw()) + double(p.pixels());
    return {prob.direct_flops(), flops, prob.min_bytes(), 4.0 * (rows + columns)};
  }

 protected:
  std::string source() const override { return "separable_two_pass.cuh"; }
  std::vector<json> py_values() const override { return {1, 2, 4, 8}; }
  bool needs_scratch() const override { return true; }
};

CONVTUNE_REGISTER_VARIANT(SeparableTwoPass);

}  // namespace
}  // namespace convtune
