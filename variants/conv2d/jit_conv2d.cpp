#include "variants/conv2d/jit_conv2d.h"

#include <algorithm>

#include "harness/error.h"

namespace convtune {




double tiled_bytes(const Conv2d& p, int64_t tile_x, int64_t tile_y, double loads_per_block) {
  const double blocks = double(ceil_div(p.w, tile_x)) * double(ceil_div(p.h, tile_y)) * double(p.b);
  return 4.0 * (blocks * loads_per_block + double(p.pixels()));
}

int64_t taps_inside_tile(int64_t b, int64_t r) {
  int64_t inside = 0;
  for (int64_t t = 0; t < b; ++t)
    inside += std::min<int64_t>(b - 1, t + r) - std::max<int64_t>(0, t - r) + 1;
  return inside;
}

Status JitConv2dVariant::can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const {
  if (prob.family != kConv2d) return Status::no("not a conv2d problem");
  const Conv2d p(prob);
  if (p.r > kMaxDirectRadius)
    return Status::no("radius " + std::to_string(p.r) + " > " + std::to_string(kMaxDirectRadius) +
                      " (kernels unroll the filter fully)");
  const LaunchShape s = launch_shape(p, c);
  const int64_t threads = int64_t(s.block.x) * s.block.y * s.block.z;
  if (threads > dev.max_threads_per_block)
    return Status::no("block of " + std::to_string(threads) + " threads > device limit " +
                      std::to_string(dev.max_threads_per_block));
  if (s.grid.y > 65535 || s.grid.z > 65535)
    return Status::no("grid.y of " + std::to_string(s.grid.y) + " blocks > 65535");
  const int smem = s.dynamic_smem + s.static_smem;
  const int limit = s.dynamic_smem > 0 ? dev.max_smem_per_block_optin : dev.max_smem_per_block;
  if (smem > limit)
    return Status::no("shared memory " + std::to_string(smem) + " B > device limit " + std::to_string(limit) + " B");
  return constraints(p, c, dev);
}

std::vector<JitProgram> JitConv2dVariant::programs(const Problem& prob, const Config& c) const {
  const Conv2d p(prob);
  JitProgram prog{source(), {define("RADIUS", p.r)}};
  for (auto& d : defines(p, c)) prog.options.push_back(std::move(d));
  return {prog};
}

namespace {

class JitConv2dPlan : public Plan {
 public:
  JitConv2dPlan(std::shared_ptr<Module> module, LaunchShape shape, const Conv2d& p, bool constant_filter, int sms)
      : module_(std::move(module)), shape_(shape), h_(static_cast<int>(p.h)), w_(static_cast<int>(p.w)),
        batch_(static_cast<int>(p.b)), filter_elems_(p.fw() * p.fw()) {
    fn_ = module_->function("conv2d_kernel");
    const int threads = static_cast<int>(shape.block.x * shape.block.y * shape.block.z);
    attrs_ = kernel_attributes(fn_, threads, shape.dynamic_smem);
    if (shape_.persistent) {
      shape_.grid.x = persistent_grid_x(shape_.grid, int64_t(attrs_.blocks_per_sm) * sms);
    } else {
      shape_.grid.z = static_cast<unsigned>(p.b);  // one image per grid.z index
    }
    if (constant_filter) {
      size_t bytes = 0;
      constant_ = module_->global("c_filter", &bytes);
      if (bytes != size_t(filter_elems_) * sizeof(float)) throw std::logic_error("c_filter has the wrong size");
    }
  }

  void bind(const Operands& ops, cudaStream_t stream) override {
    in_ = ops.data.at(0);
    filter_ = ops.data.at(1);
    out_ = ops.output();
    if (constant_)
      CT_CUDA(cudaMemcpyAsync(reinterpret_cast<void*>(constant_), filter_, filter_elems_ * sizeof(float),
                              cudaMemcpyDeviceToDevice, stream));
  }

  void run(cudaStream_t stream) override {
    void* args[] = {&in_, &filter_, &out_, &h_, &w_, &batch_};  // the launch reads as many as the kernel declares
    launch(fn_, shape_.grid, shape_.block, shape_.dynamic_smem, stream, args);
  }

  KernelAttributes attributes() const override { return attrs_; }

 private:
  std::shared_ptr<Module> module_;
  CUfunction fn_ = nullptr;
  CUdeviceptr constant_ = 0;
  LaunchShape shape_;
  KernelAttributes attrs_;
  int h_, w_, batch_;
  int64_t filter_elems_;
  const float* in_ = nullptr;
  const float* filter_ = nullptr;
  float* out_ = nullptr;
};

}  // namespace

std::unique_ptr<Plan> JitConv2dVariant::prepare(const Problem& prob, const Config& c, const DeviceInfo& dev,
                                                JitCache& jit) const {
  const Conv2d p(prob);
  auto module = jit.module(programs(prob, c).front());
  return std::make_unique<JitConv2dPlan>(std::move(module), launch_shape(p, c), p, constant_filter(), dev.sms);
}

}  // namespace convtune
