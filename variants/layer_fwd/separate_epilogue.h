// The `epilogue` parameter of the forward variants whose kernels fuse the bias and activation:
//   fused     the kernel applies them as it stores y (the default, and what a config without the key means);
//   separate  the same kernel and config on the problem without them, then kernels/layer_fwd_epilogue.cuh
//             reads y back, applies them and writes it again: what fusing saves, measured per config.
// The parameter is in the space only where the problem has a bias or an activation, so the candidates of
// plain problems keep their names (shipped runs and dispatch tables name them).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/variant.h"
#include "variants/layer_fwd/layer_fwd.h"

namespace convtune {

inline constexpr const char* kEpilogueParam = "epilogue";
inline constexpr const char* kEpilogueFused = "fused";
inline constexpr const char* kEpilogueSeparate = "separate";

bool separate_epilogue(const Config& c);  // the config's epilogue is "separate"
Config without_epilogue_choice(Config c);  // the config as the plain kernel reads it
// The separate epilogue kernel's program for this problem (N K P Q, BIAS, ACT).
JitProgram separate_epilogue_program(const Problem& p);
// A plan that runs `conv` (made for without_epilogue(p)) and then the epilogue kernel over its output.
std::unique_ptr<Plan> make_separate_epilogue_plan(const Problem& p, std::unique_ptr<Plan> conv, JitCache& jit);
// Traffic of the separate kernel: y read and written, the bias read.
double separate_epilogue_bytes(const Problem& p);

// Base: a forward variant whose kernels fuse the epilogue (they read the problem's bias and activation).
template <class Base>
class EpilogueChoice : public Base {
 public:
  using Base::Base;

  ParamSpace space(const Problem& p, const DeviceInfo& dev) const override {
    ParamSpace s = Base::space(p, dev);
    if (has_epilogue(p))
      s.add(kEpilogueParam,
            "fused: bias and activation applied as y is stored; separate: the kernel without them, then a "
            "kernel of its own over y",
            {kEpilogueFused, kEpilogueSeparate}, kEpilogueFused);
    return s;
  }
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override {
    return Base::can_implement(conv_problem(p, c), without_epilogue_choice(c), dev);
  }
  Cost cost(const Problem& p, const Config& c) const override {
    if (!separate_epilogue(c)) return Base::cost(p, without_epilogue_choice(c));
    Cost cost = Base::cost(without_epilogue(p), without_epilogue_choice(c));
    cost.bytes_min = p.min_bytes();  // the problem's operands, its bias included
    cost.bytes_model += separate_epilogue_bytes(p);
    return cost;
  }
  Tolerance tolerance(const Problem& p, const Config& c) const override {
    return Base::tolerance(conv_problem(p, c), without_epilogue_choice(c));
  }
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override {
    std::vector<JitProgram> out = Base::programs(conv_problem(p, c), without_epilogue_choice(c));
    if (separate_epilogue(c)) out.push_back(separate_epilogue_program(p));
    return out;
  }
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo& dev,
                                JitCache& jit) const override {
    std::unique_ptr<Plan> conv = Base::prepare(conv_problem(p, c), without_epilogue_choice(c), dev, jit);
    return separate_epilogue(c) ? make_separate_epilogue_plan(p, std::move(conv), jit) : std::move(conv);
  }

 private:
  // What the convolution kernel computes: the problem itself, or without its epilogue when separate.
  static Problem conv_problem(const Problem& p, const Config& c) {
    return separate_epilogue(c) ? without_epilogue(p) : p;
  }
};

}  // namespace convtune
