// What the three convolution-layer families (layer_fwd, layer_bwd_data, layer_bwd_filter) share as
// families: the shape dims and their checks, the precision dim, the flop count, the example and the
// dispatch constraints. Each adds its operation's own dims (the forward's bias and activation), its operands,
// test shapes and references. Here beside layer_shape.h, for the same reason.
#pragma once
#include <string>
#include <vector>

#include "harness/family.h"
#include "variants/layer_common/layer_shape.h"

namespace convtune {

class LayerConvolutionFamily : public Family {
 public:
  std::vector<DimSpec> dims() const override {
    std::vector<DimSpec> d = layer_shape_dims(false);
    for (const DimSpec& op : operation_dims()) d.push_back(op);
    d.push_back({"precision", 0, 1, "0 = fp32 strict (no TF32), 1 = tf32 tensor-core math allowed", true, 0});
    return d;
  }
  void check(const Problem& p, const std::string& where) const override { check_layer_shape(p, where); }
  // Every (output, tap) pair, taps over padding included: what a direct kernel issues, and the usual count;
  // the backward passes run each of the forward's multiply-adds backwards once.
  double direct_flops(const Problem& p) const override {
    const LayerShape l(p);
    return 2.0 * double(l.y_elements()) * double(l.c * l.r * l.s);
  }
  Problem example() const override {  // ResNet's 56x56 stage: N32 C64 K64 R3 pad1
    return layer_problem(name(), dims(), {32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1});
  }
  // r, s, strides and padding are compile-time in the direct kernels and set the im2col expansion; the
  // operation's dims and precision change the operation (precision: which math may run at all). c is not:
  // every kernel loops over input maps, and keeping it out lets a measured 64-map layer stand in for a
  // 96-map one (the nearest-shape distance still prefers equal c).
  std::vector<std::string> constraint_dims() const override {
    std::vector<std::string> c = {"r", "s", "u", "v", "pad_h", "pad_w"};
    for (const DimSpec& op : operation_dims()) c.push_back(op.name);
    c.push_back("precision");
    return c;
  }
  // A strict-fp32 problem must never take a configuration measured where TF32 was allowed.
  std::vector<std::string> required_dims() const override { return {"precision"}; }

 protected:
  // The pass's GEMM extents (implicit_gemm.h's gemm_extent: D is gemm_m x gemm_n, each a sum over gemm_t) as
  // the dispatch model's quantities: the GEMM variants' tiles are along gemm_m and gemm_n (their traits).
  // Programs in postfix over the dims; kOutRows and kOutCols are the output's P and Q.
  static constexpr const char* kOutRows = "h pad_h 2 * + r - u / 1 +";
  static constexpr const char* kOutCols = "w pad_w 2 * + s - v / 1 +";
  static std::vector<std::pair<std::string, std::string>> gemm_quantities(const std::string& m, const std::string& n,
                                                                         const std::string& t) {
    return {{"gemm_m", m}, {"gemm_n", n}, {"gemm_t", t}};
  }
  static std::string output_pixels() { return std::string("n ") + kOutRows + " * " + kOutCols + " *"; }

  // Dims of the operation itself, between the shape and precision.
  virtual std::vector<DimSpec> operation_dims() const { return {}; }
};

}  // namespace convtune
