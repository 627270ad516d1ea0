// Library baseline: cuDNN 9's legacy convolution API on one image (N = C = K = 1, NCHW float), every
// forward algorithm as a parameter value. cuDNN decides at prepare time which algorithms it supports
// for a shape; those it refuses become Unsupported (recorded as skipped) naming the algorithm and cuDNN's status.
#include <cudnn.h>

#include <string>
#include <utility>
#include <vector>

#include "harness/cuda_raii.h"
#include "harness/error.h"
#include "harness/variant.h"
#include "variants/conv2d/conv2d.h"

namespace convtune {
namespace {

constexpr int kMaxCudnnRadius = 32;

// cuDNN's status string plus its last detailed message (cuDNN 9 keeps one per thread), when it has one.
std::string last_cudnn_message() {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  return detail;
}
std::string cudnn_message(cudnnStatus_t s) {
  std::string msg = cudnnGetErrorString(s);
  const std::string detail = last_cudnn_message();
  if (!detail.empty()) msg += " (last cuDNN message: " + detail + ")";
  return msg;
}

#define CT_CUDNN(call)                                                                       \
  do {                                                                                       \
    cudnnStatus_t ct_err_ = (call);                                                          \
    if (ct_err_ != CUDNN_STATUS_SUCCESS)                                                     \
      ::convtune::throw_cuda("cudnn", cudnn_message(ct_err_), #call, __FILE__, __LINE__);    \
  } while (0)

// For destructors: report, never throw.
#define CT_CUDNN_WARN(call)                                                                  \
  do {                                                                                       \
    cudnnStatus_t ct_err_ = (call);                                                          \
    if (ct_err_ != CUDNN_STATUS_SUCCESS)                                                     \
      ::convtune::warn_cuda("cudnn", cudnnGetErrorString(ct_err_), #call, __FILE__, __LINE__); \
  } while (0)

// Parameter values, in cudnnConvolutionFwdAlgo_t order (CUDNN_CONVOLUTION_FWD_ALGO_<NAME>, lower case).
const std::vector<std::pair<std::string, cudnnConvolutionFwdAlgo_t>>& algos() {
  static const std::vector<std::pair<std::string, cudnnConvolutionFwdAlgo_t>> a = {
      {"implicit_gemm", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM},
      {"implicit_precomp_gemm", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM},
      {"gemm", CUDNN_CONVOLUTION_FWD_ALGO_GEMM},
      {"direct", CUDNN_CONVOLUTION_FWD_ALGO_DIRECT},
      {"fft", CUDNN_CONVOLUTION_FWD_ALGO_FFT},
      {"fft_tiling", CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING},
      {"winograd", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD},
      {"winograd_nonfused", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED},
  };
  static_assert(CUDNN_CONVOLUTION_FWD_ALGO_COUNT == 8, "a new cuDNN forward algorithm: add its name above");
  return a;
}

const std::pair<std::string, cudnnConvolutionFwdAlgo_t>* find_algo(const std::string& name) {
  for (const auto& a : algos())
    if (a.first == name) return &a;
  return nullptr;
}

std::string algo_name(const Config& c) { return c.at("algo").get<std::string>(); }

bool spectral(const std::string& algo) { return algo.rfind("fft", 0) == 0 || algo.rfind("winograd", 0) == 0; }

class CudnnPlan : public Plan {
 public:
  ~CudnnPlan() override {
    if (conv_) CT_CUDNN_WARN(cudnnDestroyConvolutionDescriptor(conv_));
    if (wdesc_) CT_CUDNN_WARN(cudnnDestroyFilterDescriptor(wdesc_));
    if (ydesc_) CT_CUDNN_WARN(cudnnDestroyTensorDescriptor(ydesc_));
    if (xdesc_) CT_CUDNN_WARN(cudnnDestroyTensorDescriptor(xdesc_));
    if (handle_) CT_CUDNN_WARN(cudnnDestroy(handle_));
  }

  // Separate from the constructor so that the destructor frees what was made when a step throws.
  void init(const Conv2d& p, const std::string& algo_name, cudnnConvolutionFwdAlgo_t algo) {
    algo_name_ = algo_name;
    algo_ = algo;
    const int h = int(p.h), w = int(p.w), fw = int(p.fw()), r = int(p.r);
    CT_CUDNN(cudnnCreate(&handle_));
    CT_CUDNN(cudnnCreateTensorDescriptor(&xdesc_));
    CT_CUDNN(cudnnCreateTensorDescriptor(&ydesc_));
    CT_CUDNN(cudnnCreateFilterDescriptor(&wdesc_));
    CT_CUDNN(cudnnCreateConvolutionDescriptor(&conv_));
    CT_CUDNN(cudnnSetTensor4dDescriptor(xdesc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, h, w));
    CT_CUDNN(cudnnSetTensor4dDescriptor(ydesc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, h, w));
    CT_CUDNN(cudnnSetFilter4dDescriptor(wdesc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, fw, fw));
    // cuDNN's cross-correlation y(i,j) = sum_{p,q} x(i - pad + p, j - pad + q) w(p,q); with pad = r and
    // m = p - r this is the problem's out(i,j) = sum in(i+m, j+n) f(m+r, n+r).
    CT_CUDNN(cudnnSetConvolution2dDescriptor(conv_, r, r, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    // FMA only: no TF32 tensor cores, so every algorithm is an fp32 method comparable to ours.
    CT_CUDNN(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH));

    int n = 0, c = 0, oh = 0, ow = 0;
    CT_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv_, xdesc_, wdesc_, &n, &c, &oh, &ow));
    if (n != 1 || c != 1 || oh != h || ow != w)
      throw CudaError("cuDNN output shape " + std::to_string(oh) + "x" + std::to_string(ow) + " is not 'same' " +
                      std::to_string(h) + "x" + std::to_string(w));

    size_t ws = 0;
    last_cudnn_message();  // drop any stale message so that a refusal below carries its own
    const cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(handle_, xdesc_, wdesc_, conv_, ydesc_, algo_, &ws);
    if (s != CUDNN_STATUS_SUCCESS)
      throw Unsupported("cuDNN does not support algo " + algo_name_ + " for this shape: " + cudnn_message(s));
    // Some algorithms (gemm: an explicit im2col matrix, h*w*(2r+1)^2 floats) ask for more than the GPU has.
    size_t free_bytes = 0, total_bytes = 0;
    CT_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (ws > free_bytes)
      throw Unsupported("cuDNN algo " + algo_name_ + " needs a workspace of " + std::to_string(ws) + " B; " +
                      std::to_string(free_bytes) + " B free");
    workspace_ = DeviceArray<char>(ws);
  }

  void bind(const Operands& ops, cudaStream_t) override {
    x_ = ops.data.at(0);
    w_ = ops.data.at(1);
    y_ = ops.output();
  }

  void run(cudaStream_t stream) override {
    CT_CUDNN(cudnnSetStream(handle_, stream));
    const float alpha = 1.0f, beta = 0.0f;
    const cudnnStatus_t s = cudnnConvolutionForward(handle_, &alpha, xdesc_, x_, wdesc_, w_, conv_, algo_,
                                                    workspace_.get(), workspace_.bytes(), &beta, ydesc_, y_);
    if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED)
      throw Unsupported("cuDNN refused algo " + algo_name_ + " for this shape: " + cudnn_message(s));
    if (s != CUDNN_STATUS_SUCCESS)
      throw CudaError("cuDNN forward with algo " + algo_name_ + " failed: " + cudnn_message(s));
  }

  size_t workspace_bytes() const override { return workspace_.bytes(); }

 private:
  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t xdesc_ = nullptr, ydesc_ = nullptr;
  cudnnFilterDescriptor_t wdesc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::string algo_name_;
  DeviceArray<char> workspace_;
  const float* x_ = nullptr;
  const float* w_ = nullptr;
  float* y_ = nullptr;
};

class Conv2dCudnn : public Variant {
 public:
  std::string name() const override { return "conv2d.cudnn"; }
  std::string family() const override { return kConv2d; }
  std::string summary() const override {
    return "cuDNN 9 cudnnConvolutionForward (legacy API), N=C=K=1 NCHW fp32, FMA math (no TF32), one algo per config";
  }
  bool library() const override { return true; }
  int complexity() const override { return 1; }

  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    std::vector<json> names;
    for (const auto& a : algos()) names.push_back(a.first);
    return ParamSpace().add("algo", "cudnnConvolutionFwdAlgo_t (cuDNN refuses some per shape at prepare time)",
                            names);
  }

  // Static checks only (no GPU here): which algorithms cuDNN accepts is known only once a handle exists.
  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo&) const override {
    if (prob.family != kConv2d) return Status::no("not a conv2d problem");
    const Conv2d p(prob);
    if (p.r > kMaxCudnnRadius)
      return Status::no("radius " + std::to_string(p.r) + " > " + std::to_string(kMaxCudnnRadius));
    if (!find_algo(algo_name(c))) return Status::no("unknown cuDNN algo '" + algo_name(c) + "'");
    return Status::yes();
  }

  Cost cost(const Problem& prob, const Config&) const override {
    // cuDNN's internals (tiling, im2col, transforms) are unknown: the model is the minimum traffic.
    return {prob.direct_flops(), prob.direct_flops(), prob.min_bytes(), prob.min_bytes()};
  }

  Tolerance tolerance(const Config& c) const override {
    return spectral(algo_name(c)) ? kSpectralFp32Tolerance : kDirectFp32Tolerance;
  }

  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache&) const override {
    const auto* algo = find_algo(algo_name(c));
    if (!algo) throw InputError("conv2d.cudnn: unknown algo '" + algo_name(c) + "'");
    auto plan = std::make_unique<CudnnPlan>();
    plan->init(Conv2d(prob), algo->first, algo->second);
    return plan;
  }
};

CONVTUNE_REGISTER_VARIANT(Conv2dCudnn);

}  // namespace
}  // namespace convtune
