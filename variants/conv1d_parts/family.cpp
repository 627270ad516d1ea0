#include <algorithm>
#include <tuple>

#include "harness/error.h"
#include "harness/family.h"
#include "variants/conv1d/reference1d.h"
#include "variants/conv1d_parts/parts.h"

namespace convtune {

double Conv1dParts::multiply_adds() const {
  // Output i sums over j in [max(0, i-m+1), min(n-1, i)]: a piecewise-linear count, summed in closed form
  // over the pieces so that a 2^23-long slice costs nothing.
  auto count = [&](int64_t i) { return std::max<int64_t>(0, std::min(n - 1, i) - std::max<int64_t>(0, i - m + 1) + 1); };
  const int64_t knots[] = {start, std::clamp<int64_t>(std::min(n, m), start, end),
                           std::clamp<int64_t>(std::max(n, m), start, end), end};
  double total = 0;
  for (int k = 0; k < 3; ++k) {
    const int64_t lo = knots[k], hi = knots[k + 1];  // count is linear on [lo, hi)
    if (hi > lo) total += 0.5 * double(hi - lo) * double(count(lo) + count(hi - 1));
  }
  return total;
}

namespace {

class Conv1dPartsFamily : public Family {
 public:
  std::string name() const override { return kConv1dParts; }
  std::string summary() const override {
    return "two long sequences a (n) and b (m); outputs [start, end) of their full linear convolution";
  }
  std::vector<DimSpec> dims() const override {
    return {{"n", 1, int64_t(1) << 28, "length of a"},
            {"m", 1, int64_t(1) << 28, "length of b"},
            {"start", 0, int64_t(1) << 29, "first output index"},
            {"end", 1, int64_t(1) << 29, "one past the last output index"}};
  }
  void check(const Problem& p, const std::string& where) const override {
    const int64_t full = p.at("n") + p.at("m") - 1;
    if (p.at("end") > full)
      throw InputError(where + ".end: " + std::to_string(p.at("end")) + " is past the full convolution; allowed: end <= n + m - 1 = " +
                       std::to_string(full));
    if (p.at("start") >= p.at("end"))
      throw InputError(where + ".start: " + std::to_string(p.at("start")) + " must be < end = " +
                       std::to_string(p.at("end")) + " (the slice [start, end) may not be empty)");
  }
  std::vector<Operand> operands(const Problem& p) const override {
    const Conv1dParts c(p);
    return {{"a", c.n}, {"b", c.m}, {"output", c.outputs()}};
  }
  double direct_flops(const Problem& p) const override { return 2.0 * Conv1dParts(p).multiply_adds(); }
  Problem example() const override {
    return {kConv1dParts, {{"n", 1 << 20}, {"m", 1 << 20}, {"start", (1 << 20) - 1}, {"end", (1 << 20) + 4096}}};
  }
  // Full, valid, short and one-element slices of equal, unequal, odd and prime lengths.
  std::vector<Problem> test_problems() const override {
    std::vector<Problem> out;
    for (auto [n, m, start, end] : {std::tuple{1, 1, 0, 1}, {5, 3, 0, 7}, {1000, 1000, 0, 1999}, {4099, 3001, 3000, 4099},
                                    {65537, 65521, 65536, 65536 + 4097}, {20011, 50021, 12345, 12545},
                                    {100003, 100019, 0, 200021}, {262144, 262144, 262143, 262143 + 257}})
      out.push_back({kConv1dParts, {{"n", n}, {"m", m}, {"start", start}, {"end", end}}});
    return out;
  }
  std::vector<std::string> constraint_dims() const override { return {}; }
  // The slice's length and the whole convolution's, which decide between parts of some length and one
  // whole-sequence FFT, and which no single dim shows (the dispatch model's quantities).
  std::vector<std::pair<std::string, std::string>> model_quantities() const override {
    return {{"slice", "end start -"}, {"full", "n m + 1 -"}};
  }

  std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& in) const override {
    const Conv1dParts c(p);
    return cpu_convolution_slice(in.at(0), in.at(1), c.start, c.end);
  }
  void gpu_reference(const Problem& p, const std::vector<const float*>& in, double* out,
                     cudaStream_t s) const override {
    const Conv1dParts c(p);
    gpu_convolution_slice(in.at(0), c.n, in.at(1), c.m, c.start, c.end, out, s);
  }
};

}  // namespace

CONVTUNE_REGISTER_FAMILY(Conv1dPartsFamily);

}  // namespace convtune
