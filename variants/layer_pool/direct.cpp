// layer_pool.direct: one NVRTC kernel, the window, stride, padding and op compile-time; each thread computes
// `outputs_per_thread` consecutive outputs along q, sharing the loads of overlapping windows.
#include "variants/layer_common/layer_variant.h"
#include "variants/layer_pool/layer_pool.h"

namespace convtune {
namespace {

class LayerPoolDirect : public Variant {
 public:
  std::string name() const override { return "layer_pool.direct"; }
  std::string family() const override { return kLayerPool; }
  std::string summary() const override {
    return "one thread per `outputs_per_thread` consecutive outputs along q; window, stride, padding and op "
           "compile-time; shared window pixels loaded once";
  }
  int complexity() const override { return 1; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("outputs_per_thread", "consecutive outputs along q per thread", int_values({1, 2, 4}))
        .add("block", "threads per block", int_values({64, 128, 256, 512}));
  }
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override {
    if (p.family != kLayerPool) return Status::no("not a layer_pool problem");
    return launch_fits(pool_launch(LayerShape(p), c), dev);
  }
  // The loads each thread issues (its R rows of the span under its windows, padding included), the outputs once.
  Cost cost(const Problem& p, const Config& c) const override {
    const LayerShape l(p);
    const double loads = double(threads(l, c)) * double(l.r) * double(span(l, c));
    return {p.direct_flops(), p.direct_flops(), operand_bytes(p), 4.0 * (loads + double(l.y_elements()))};
  }
  // Max is exact; the averages round a sum of r*s terms and one division.
  Tolerance tolerance(const Problem& p, const Config&) const override {
    return layer_tolerance(p.at("r") * p.at("s"), kMathFp32);
  }
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override {
    JitProgram program{"layer_pool_direct.cuh", layer_defines(LayerShape(p))};
    program.options.push_back(define("OP", p.at("op")));
    program.options.push_back(define("OUTPUTS", cfg_int(c, "outputs_per_thread")));
    program.options.push_back(define("THREADS", cfg_int(c, "block")));
    return {program};
  }
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo&, JitCache& jit) const override {
    auto plan = std::make_unique<JitLayerPlan>(jit.module(programs(p, c).front()),
                                               std::vector<LayerLaunch>{pool_launch(LayerShape(p), c)});
    plan->set_details({{"deterministic", true}});
    return plan;
  }

 private:
  static int64_t threads(const LayerShape& l, const Config& c) {
    return l.n * l.c * l.p * ceil_div(l.q, cfg_int(c, "outputs_per_thread"));
  }
  static int64_t span(const LayerShape& l, const Config& c) { return (cfg_int(c, "outputs_per_thread") - 1) * l.v + l.s; }
  static LayerLaunch pool_launch(const LayerShape& l, const Config& c) {
    const int block = cfg_int(c, "block");
    return {"layer_pool_direct", dim3(unsigned(ceil_div(threads(l, c), block))), dim3(unsigned(block))};
  }
};

CONVTUNE_REGISTER_VARIANT(LayerPoolDirect);

}  // namespace
}  // namespace convtune
