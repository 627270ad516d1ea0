#include <tuple>

#include "harness/error.h"
#include "harness/family.h"
#include "variants/conv1d/conv1d.h"
#include "variants/conv1d/reference1d.h"

namespace convtune {
namespace {

class Conv1dFamily : public Family {
 public:
  std::string name() const override { return kConv1d; }
  std::string summary() const override {
    return "signal n, filter m, linear convolution y[i] = sum_j x[i-j] h[j]; mode 0 = valid (n-m+1 outputs), "
           "1 = full (n+m-1)";
  }
  std::vector<DimSpec> dims() const override {
    return {{"n", 1, int64_t(1) << 28, "signal length"},
            {"m", 1, int64_t(1) << 20, "filter length"},
            {"mode", 0, 1, "0 = valid, 1 = full", true, 1}};
  }
  void check(const Problem& p, const std::string& where) const override {
    if (p.at("mode") == 0 && p.at("m") > p.at("n"))
      throw InputError(where + ".m: " + std::to_string(p.at("m")) + " > n = " + std::to_string(p.at("n")) +
                       " in valid mode (mode 0); allowed: m <= n, or mode 1 (full)");
  }
  std::vector<Operand> operands(const Problem& p) const override {
    const Conv1d c(p);
    return {{"signal", c.n}, {"filter", c.m}, {"output", c.outputs()}};
  }
  double direct_flops(const Problem& p) const override {
    const Conv1d c(p);  // every (input, tap) pair that lands inside the output
    return 2.0 * double(c.full ? c.n : c.outputs()) * double(c.m);
  }
  Problem example() const override { return {kConv1d, {{"n", 1 << 20}, {"m", 63}, {"mode", 1}}}; }
  // m = 1, m close to n, m past a block length, odd and prime n, both modes; m = 62 full puts each interior
  // tile's first input 3 floats past a 16-byte boundary (conv1d.window's cp.async span, offset 3).
  std::vector<Problem> test_problems() const override {
    std::vector<Problem> out;
    for (auto [n, m, mode] : {std::tuple{1, 1, 0}, {1, 1, 1}, {7, 1, 1}, {97, 5, 0}, {1009, 17, 1}, {1031, 1031, 0},
                              {1031, 1030, 1}, {4099, 129, 0}, {65537, 33, 1}, {100003, 1025, 0}, {30011, 2049, 1},
                              {70001, 8193, 0}, {3, 40, 1}, {40009, 62, 1}})
      out.push_back({kConv1d, {{"n", n}, {"m", m}, {"mode", mode}}});
    return out;
  }
  // m is compile-time in the spatial kernels and sets the block sizes of the spectral ones; mode changes
  // the operation.
  std::vector<std::string> constraint_dims() const override { return {"m", "mode"}; }

  std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& in) const override {
    const Conv1d c(p);
    return cpu_convolution_slice(in.at(0), in.at(1), c.first(), c.first() + c.outputs());
  }
  void gpu_reference(const Problem& p, const std::vector<const float*>& in, double* out,
                     cudaStream_t s) const override {
    const Conv1d c(p);
    gpu_convolution_slice(in.at(0), c.n, in.at(1), c.m, c.first(), c.first() + c.outputs(), out, s);
  }
};

}  // namespace

CONVTUNE_REGISTER_FAMILY(Conv1dFamily);

}  // namespace convtune
