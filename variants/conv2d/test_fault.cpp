// conv2d.test_fault: a variant that fails on purpose (illegal address, hang, process abort), registered
// only when CONVTUNE_TEST_FAULTS=1, so that the GPU tests can check that a sweep survives each failure.
#include <cstdlib>

#include "variants/conv2d/jit_conv2d.h"

namespace convtune {
namespace {

class Conv2dTestFault : public JitConv2dVariant {
 public:
  std::string name() const override { return "conv2d.test_fault"; }
  std::string summary() const override { return "test only: fails on purpose"; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace().add("fault", "how it fails", {"illegal_address", "hang", "abort"});
  }
  Cost cost(const Problem& p, const Config&) const override {
    return {p.direct_flops(), p.direct_flops(), p.min_bytes(), p.min_bytes()};
  }
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo& dev, JitCache& jit) const override {
    if (c.at("fault") == "abort") std::abort();
    return JitConv2dVariant::prepare(p, c, dev, jit);
  }

 protected:
  std::string source() const override { return "test_fault.cuh"; }
  bool constant_filter() const override { return false; }
  std::vector<std::string> defines(const Conv2d&, const Config& c) const override {
    return {define("FAULT_MODE", c.at("fault") == "hang" ? 1 : 0)};
  }
  LaunchShape launch_shape(const Conv2d&, const Config&) const override { return {dim3(1), dim3(32)}; }
};

const bool registered = [] {
  const char* on = std::getenv("CONVTUNE_TEST_FAULTS");
  if (on && std::string(on) == "1") Registry::instance().add(std::make_unique<Conv2dTestFault>());
  return true;
}();

}  // namespace
}  // namespace convtune
