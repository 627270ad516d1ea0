// Library baseline: cuDNN's cudnnPoolingForward. op 0 is CUDNN_POOLING_MAX, 1 AVERAGE_COUNT_INCLUDE_PADDING,
// 2 AVERAGE_COUNT_EXCLUDE_PADDING: the family's three ops are cuDNN's definitions. Nothing to tune (cuDNN
// has one pooling kernel choice per mode), so the space has no parameters: one config.
#include "variants/layer_common/cudnn_layer.h"
#include "variants/layer_common/layer_shape.h"
#include "variants/layer_pool/layer_pool.h"

namespace convtune {
namespace {

cudnnPoolingMode_t pooling_mode(int64_t op) {
  switch (op) {
    case kPoolMax: return CUDNN_POOLING_MAX;
    case kPoolAverageIncludingPadding: return CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    case kPoolAverageExcludingPadding: return CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  }
  throw InputError("layer_pool.cudnn: unknown op " + std::to_string(op) + "; allowed: 0, 1, 2");
}

class CudnnPoolPlan : public Plan {
 public:
  explicit CudnnPoolPlan(const Problem& p) {
    const LayerShape l(p);
    set_nchw(x_desc_.get(), l.n, l.c, l.h, l.w);
    set_nchw(y_desc_.get(), l.n, l.c, l.p, l.q);
    // The NaN option matters only for NaN inputs, which the harness never feeds.
    CT_CUDNN(cudnnSetPooling2dDescriptor(pool_.get(), pooling_mode(p.at("op")), CUDNN_NOT_PROPAGATE_NAN, int(l.r),
                                         int(l.s), int(l.pad_h), int(l.pad_w), int(l.u), int(l.v)));
    int n = 0, c = 0, out_h = 0, out_w = 0;
    CT_CUDNN(cudnnGetPooling2dForwardOutputDim(pool_.get(), x_desc_.get(), &n, &c, &out_h, &out_w));
    if (n != l.n || c != l.c || out_h != l.p || out_w != l.q)
      throw CudaError("cuDNN pooling output shape " + std::to_string(out_h) + "x" + std::to_string(out_w) +
                      " is not the problem's " + std::to_string(l.p) + "x" + std::to_string(l.q));
  }

  void bind(const Operands& ops, cudaStream_t) override {
    x_ = ops.data.at(0);
    y_ = ops.output();
  }

  void run(cudaStream_t stream) override {
    CT_CUDNN(cudnnSetStream(handle_.get(), stream));
    const float one = 1.0f, zero = 0.0f;
    const cudnnStatus_t s =
        cudnnPoolingForward(handle_.get(), pool_.get(), &one, x_desc_.get(), x_, &zero, y_desc_.get(), y_);
    if (s != CUDNN_STATUS_SUCCESS) throw_cudnn_refusal(s, "pooling");
  }

  // Forward pooling reduces each window on its own (cuDNN's nondeterminism notes concern backward pooling).
  json details() const override { return {{"deterministic", true}}; }

 private:
  CudnnHandle handle_;
  CudnnTensorDesc x_desc_, y_desc_;
  CudnnPoolingDesc pool_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
};

class LayerPoolCudnn : public Variant {
 public:
  std::string name() const override { return "layer_pool.cudnn"; }
  std::string family() const override { return kLayerPool; }
  std::string summary() const override { return "cuDNN 9 cudnnPoolingForward, NCHW fp32, max or average pooling"; }
  bool library() const override { return true; }
  int complexity() const override { return 1; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override { return ParamSpace(); }
  Status can_implement(const Problem&, const Config&, const DeviceInfo&) const override { return Status::yes(); }
  Cost cost(const Problem& p, const Config&) const override { return cudnn_layer_cost(p); }
  Tolerance tolerance(const Problem&, const Config&) const override { return kDirectFp32Tolerance; }
  std::unique_ptr<Plan> prepare(const Problem& p, const Config&, const DeviceInfo&, JitCache&) const override {
    return std::make_unique<CudnnPoolPlan>(p);
  }
};

CONVTUNE_REGISTER_VARIANT(LayerPoolCudnn);

}  // namespace
}  // namespace convtune
