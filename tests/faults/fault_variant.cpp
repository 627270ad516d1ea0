// conv2d.test_fault: a variant that fails on purpose (illegal address, hang, process abort), so that the
// GPU tests can check that a sweep survives each failure. Linked only into convtune_with_faults, the CLI
// those tests sweep with (tests/CMakeLists.txt): the product never registers it.
#include <cstdlib>
#include <memory>

#include "harness/variant.h"
#include "tests/faults/fault_kernels.h"
#include "variants/conv2d/conv2d.h"

namespace convtune::test {
namespace {

class FaultPlan : public Plan {
 public:
  explicit FaultPlan(bool hang) : hang_(hang) {}
  void bind(const Operands& ops, cudaStream_t) override { out_ = ops.output(); }
  void run(cudaStream_t stream) override { launch_fault(hang_, out_, stream); }

 private:
  bool hang_;
  float* out_ = nullptr;
};

class Conv2dTestFault : public Variant {
 public:
  std::string name() const override { return "conv2d.test_fault"; }
  std::string family() const override { return kConv2d; }
  std::string summary() const override { return "test only: fails on purpose"; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace().add("fault", "how it fails", {"illegal_address", "hang", "abort"});
  }
  Status can_implement(const Problem&, const Config&, const DeviceInfo&) const override { return Status::yes(); }
  Cost cost(const Problem& p, const Config&) const override {
    return {p.direct_flops(), p.direct_flops(), p.min_bytes(), p.min_bytes()};
  }
  std::unique_ptr<Plan> prepare(const Problem&, const Config& c, const DeviceInfo&, JitCache&) const override {
    if (c.at("fault") == "abort") std::abort();
    return std::make_unique<FaultPlan>(c.at("fault") == "hang");
  }
};

CONVTUNE_REGISTER_VARIANT(Conv2dTestFault);

}  // namespace
}  // namespace convtune::test
