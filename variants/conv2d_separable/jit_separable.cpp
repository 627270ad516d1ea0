#include "variants/conv2d_separable/jit_separable.h"

#include <stdexcept>

#include "harness/cuda_raii.h"
#include "harness/error.h"
#include "harness/jit_options.h"

namespace convtune {

SeparableTiling::SeparableTiling(const Config& c)
    : block_x(c.at("block_x").get<int>()), block_y(c.at("block_y").get<int>()), px(c.at("px").get<int>()),
      py(c.at("py").get<int>()) {}

std::vector<std::string> SeparableTiling::defines(int64_t r) const {
  return {define("RADIUS", r), define("BLOCK_X", block_x), define("BLOCK_Y", block_y), define("PX", px),
          define("PY", py)};
}

ParamSpace JitSeparableVariant::space(const Problem&, const DeviceInfo&) const {
  return ParamSpace()
      .add("block_x", "threads per block along x", int_values({16, 32, 64}))
      .add("block_y", "threads per block along y", int_values({4, 8, 16}))
      .add("px", "outputs per thread along x (the vector width of shared-memory loads)", int_values({1, 2, 4}))
      .add("py", "outputs per thread along y", py_values());
}

Status JitSeparableVariant::can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const {
  if (prob.family != kConv2dSeparable) return Status::no("not a conv2d_separable problem");
  const Separable p(prob);
  if (p.r > kMaxSeparableRadius)
    return Status::no("radius " + std::to_string(p.r) + " > " + std::to_string(kMaxSeparableRadius));
  const SeparableTiling t(c);
  if (t.px != 1 && t.px != 2 && t.px != 4) return Status::no("px must be 1, 2 or 4 (the vector width of shared loads)");
  if (t.block_x < 1 || t.block_y < 1 || t.py < 1) return Status::no("block_x, block_y and py must be positive");
  if (t.tw() % 4 != 0)
    return Status::no("tile width block_x * px = " + std::to_string(t.tw()) + " is not a multiple of 4 (float4 loads)");
  if (t.threads() > dev.max_threads_per_block)
    return Status::no("block of " + std::to_string(t.threads()) + " threads > device limit " +
                      std::to_string(dev.max_threads_per_block));
  for (const SeparableStep& s : steps(p, t)) {
    if (s.grid.y > 65535) return Status::no("grid.y of " + std::to_string(s.grid.y) + " blocks > 65535");
    const int64_t limit = s.smem > dev.max_smem_per_block ? dev.max_smem_per_block_optin : dev.max_smem_per_block;
    if (s.smem > limit)
      return Status::no(s.kernel + ": shared memory " + std::to_string(s.smem) + " B > device limit " +
                        std::to_string(limit) + " B");
  }
  return Status::yes();
}

std::vector<JitProgram> JitSeparableVariant::programs(const Problem& prob, const Config& c) const {
  return {JitProgram{source(), SeparableTiling(c).defines(Separable(prob).r)}};
}

namespace {

class SeparablePlan : public Plan {
 public:
  SeparablePlan(std::shared_ptr<Module> module, std::vector<SeparableStep> steps, const Separable& p, bool scratch)
      : module_(std::move(module)), steps_(std::move(steps)), h_(static_cast<int>(p.h)), w_(static_cast<int>(p.w)),
        taps_(p.fw()) {
    for (const SeparableStep& s : steps_) {
      fns_.push_back(module_->function(s.kernel));
      const int threads = static_cast<int>(s.block.x * s.block.y * s.block.z);
      const KernelAttributes a = kernel_attributes(fns_.back(), threads, static_cast<int>(s.smem));
      // The limiting kernel stands for the plan: the lowest occupancy, then the most registers.
      if (fns_.size() == 1 || a.occupancy < attrs_.occupancy ||
          (a.occupancy == attrs_.occupancy && a.registers > attrs_.registers))
        attrs_ = a;
    }
    size_t bytes = 0;
    col_ = module_->global("c_col", &bytes);
    if (bytes != size_t(taps_) * sizeof(float)) throw std::logic_error("c_col has the wrong size");
    row_ = module_->global("c_row", &bytes);
    if (bytes != size_t(taps_) * sizeof(float)) throw std::logic_error("c_row has the wrong size");
    if (scratch) scratch_ = DeviceArray<float>(size_t(p.pixels()));
  }

  // The filter vectors to constant memory, once per filter (untimed, as an application with a fixed filter).
  void bind(const Operands& ops, cudaStream_t stream) override {
    in_ = ops.data.at(0);
    out_ = ops.output();
    CT_CUDA(cudaMemcpyAsync(reinterpret_cast<void*>(col_), ops.data.at(1), taps_ * sizeof(float),
                            cudaMemcpyDeviceToDevice, stream));
    CT_CUDA(cudaMemcpyAsync(reinterpret_cast<void*>(row_), ops.data.at(2), taps_ * sizeof(float),
                            cudaMemcpyDeviceToDevice, stream));
  }

  void run(cudaStream_t stream) override {
    for (size_t i = 0; i < steps_.size(); ++i) {
      const SeparableStep& s = steps_[i];
      const float* src = s.from_scratch ? scratch_.get() : in_;
      float* dst = s.to_scratch ? scratch_.get() : out_;
      void* args[] = {&src, &dst, &h_, &w_};
      launch(fns_[i], s.grid, s.block, static_cast<unsigned>(s.smem), stream, args);
    }
  }

  KernelAttributes attributes() const override { return attrs_; }
  size_t workspace_bytes() const override { return scratch_.bytes(); }

 private:
  std::shared_ptr<Module> module_;
  std::vector<SeparableStep> steps_;
  std::vector<CUfunction> fns_;
  KernelAttributes attrs_;
  CUdeviceptr col_ = 0, row_ = 0;
  int h_, w_;
  int64_t taps_;
  DeviceArray<float> scratch_;
  const float* in_ = nullptr;
  float* out_ = nullptr;
};

}  // namespace

std::unique_ptr<Plan> JitSeparableVariant::prepare(const Problem& prob, const Config& c, const DeviceInfo&,
                                                   JitCache& jit) const {
  const Separable p(prob);
  auto module = jit.module(programs(prob, c).front());
  return std::make_unique<SeparablePlan>(std::move(module), steps(p, SeparableTiling(c)), p, needs_scratch());
}

}  // namespace convtune
