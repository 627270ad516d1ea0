#include "variants/layer_common/cudnn_layer.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "harness/cuda_raii.h"
#include "harness/error.h"
#include "variants/layer_common/layer_epilogue.h"
#include "variants/layer_common/layer_shape.h"
#include "variants/layer_common/layer_variant.h"

namespace convtune {

namespace {

// ---- math -------------------------------------------------------------------------------------------

// fp32: FMA only, so that cuDNN never picks TF32 tensor cores. tf32: tensor-op math, which lets fp32 data
// run on TF32 tensor cores.
cudnnMathType_t descriptor_math(const std::string& math) {
  return math == kMathTf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
}

// A math cuDNN reports (a find result's mathType) is this config's math: fp32 takes FMA only; tf32 the
// tensor-op or default math (both let TF32 run), not FMA (that is the fp32 config) nor ALLOW_CONVERSION
// (which may convert fp32 data down to fp16).
bool math_matches(cudnnMathType_t reported, const std::string& math) {
  if (math == kMathFp32) return reported == CUDNN_FMA_MATH;
  return reported == CUDNN_TENSOR_OP_MATH || reported == CUDNN_DEFAULT_MATH;
}

std::string natural_math(const Problem& p) { return tf32_allowed(p) ? kMathTf32 : kMathFp32; }

// ---- the forward epilogue -----------------------------------------------------------------------------

// cuDNN's mode for an activation; the identity is what the fused call takes for a bias alone.
cudnnActivationMode_t cudnn_activation(Activation a) {
  switch (a) {
    case Activation::relu: return CUDNN_ACTIVATION_RELU;
    case Activation::sigmoid: return CUDNN_ACTIVATION_SIGMOID;
    case Activation::tanh: return CUDNN_ACTIVATION_TANH;
    default: return CUDNN_ACTIVATION_IDENTITY;
  }
}

// ---- cuDNN's own pick -------------------------------------------------------------------------------

// A find tries each algorithm with the descriptor's math and with CUDNN_DEFAULT_MATH (which lets fp32 data run
// on TF32 tensor cores), one entry per pair: room for both.
constexpr int kFindMathsPerAlgo = 2;
constexpr int kFwdFindCount = kFindMathsPerAlgo * CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
constexpr int kBwdDataFindCount = kFindMathsPerAlgo * CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
constexpr int kBwdFilterFindCount = kFindMathsPerAlgo * CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;

// One entry of a find's answer, the same for the three passes' perf structs.
struct FindResult {
  int algo;
  cudnnStatus_t status;
  float time_ms;
  bool deterministic;
  cudnnMathType_t math;
};

// A find's answer, best first; `error` when the find itself failed.
struct FindOutcome {
  std::vector<FindResult> results;
  std::string error;
};

template <class Perf>
std::vector<FindResult> to_results(const Perf* perf, int count) {
  std::vector<FindResult> out;
  for (int i = 0; i < count; ++i)
    out.push_back({int(perf[i].algo), perf[i].status, perf[i].time, perf[i].determinism == CUDNN_DETERMINISTIC,
                   perf[i].mathType});
  return out;
}

// The first result for `algo` (any algo when < 0) that succeeded with this config's math.
const FindResult* first_success(const FindOutcome& o, int algo, const std::string& math) {
  for (const FindResult& r : o.results)
    if ((algo < 0 || r.algo == algo) && r.status == CUDNN_STATUS_SUCCESS && math_matches(r.math, math)) return &r;
  return nullptr;
}

// Finds are slow (they run every algorithm): once per (problem, pass, math) in the process.
std::mutex& find_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, FindOutcome>& find_cache() {
  static std::map<std::string, FindOutcome> cache;
  return cache;
}

// ---- the plan ---------------------------------------------------------------------------------------

class CudnnConvPlan : public Plan {
 public:
  CudnnConvPlan(const Problem& p, CudnnPass pass, const CudnnAlgo& algo, std::string math, bool fused)
      : problem_(p), pass_(pass), algo_(algo), math_(std::move(math)), fused_(fused), has_bias_(has_bias(p)),
        activation_(activation_of(p)), conv_(conv_shape(p), descriptor_math(math_)) {
    const int64_t maps = LayerShape(p).k;
    set_nchw(bias_desc_.get(), 1, maps, 1, 1);
    if (fused_ || activation_ != Activation::none)
      CT_CUDNN(cudnnSetActivationDescriptor(activation_desc_.get(), cudnn_activation(activation_),
                                            CUDNN_NOT_PROPAGATE_NAN, 0.0));
    if (fused_ && !has_bias_) {  // the fused call always adds a bias: zeros where the problem has none
      zero_bias_ = DeviceArray<float>(size_t(maps));
      CT_CUDA(cudaMemset(zero_bias_.get(), 0, zero_bias_.bytes()));
    }
    workspace_ = DeviceArray<char>(fitting_workspace(query_workspace(algo_.value)));
  }

  void bind(const Operands& ops, cudaStream_t stream) override {
    take_operands(ops);
    if (details_.empty()) record_find(cached_find(stream));
  }

  void run(cudaStream_t stream) override {
    const cudnnHandle_t h = conv_.handle();
    CT_CUDNN(cudnnSetStream(h, stream));
    if (fused_) return run_fused();
    const cudnnStatus_t s = conv_.convolve(pass_, algo_.value, x_, w_, y_, workspace_);
    if (s != CUDNN_STATUS_SUCCESS) throw_cudnn_refusal(s, std::string(cudnn_pass_name(pass_)) + " algo " + algo_.name);
    const float one = 1.0f, zero = 0.0f;
    if (has_bias_) CT_CUDNN(cudnnAddTensor(h, &one, bias_desc_.get(), bias_, &one, conv_.y_desc(), y_));
    if (activation_ != Activation::none)
      CT_CUDNN(cudnnActivationForward(h, activation_desc_.get(), &one, conv_.y_desc(), y_, &zero, conv_.y_desc(), y_));
  }

  size_t workspace_bytes() const override { return workspace_.bytes(); }
  json details() const override { return details_; }

 private:
  static CudnnConvShape conv_shape(const Problem& p) {
    const LayerShape l(p);
    return {l.n, l.c, l.h, l.w, l.k, l.r, l.s, l.pad_h, l.pad_w, l.u, l.v, l.p, l.q, false};
  }

// The fused call is marked deprecated with the rest of the legacy API (cuDNN 9); it is still its only fused
// convolution, bias and activation.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  // y = act(conv(x) + 0 * z + bias), z = y: alpha2 = 0 leaves z out of the sum.
  void run_fused() {
    const float one = 1.0f, zero = 0.0f;
    const cudnnStatus_t s = cudnnConvolutionBiasActivationForward(
        conv_.handle(), &one, conv_.x_desc(), x_, conv_.w_desc(), w_, conv_.conv_desc(),
        cudnnConvolutionFwdAlgo_t(algo_.value), workspace_.get(), workspace_.bytes(), &zero, conv_.y_desc(), y_,
        bias_desc_.get(), has_bias_ ? bias_ : zero_bias_.get(), activation_desc_.get(), conv_.y_desc(), y_);
    if (s != CUDNN_STATUS_SUCCESS) throw_cudnn_refusal(s, "fused forward algo " + algo_.name);
  }
#pragma GCC diagnostic pop

  // The workspace `algo` needs under the descriptor's current math; Unsupported when cuDNN refuses it.
  size_t query_workspace(int algo) const {
    return conv_.workspace(pass_, algo, std::string(cudnn_pass_name(pass_)) + " algo " + cudnn_algo_name(pass_, algo));
  }

  size_t fitting_workspace(size_t bytes) const {
    return CudnnConvolution::fitting_workspace(bytes, std::string(cudnn_pass_name(pass_)) + " algo " + algo_.name);
  }

  // Operands in the family's order; x_, w_, y_ are the forward's roles (for the backward passes dy is y_,
  // and the output is dx or dw).
  void take_operands(const Operands& ops) {
    switch (pass_) {
      case CudnnPass::forward:  // x, filter, [bias], y
        x_ = ops.data.at(0), w_ = ops.data.at(1), y_ = ops.output();
        bias_ = has_bias_ ? ops.data.at(2) : nullptr;
        break;
      case CudnnPass::backward_data:  // dy, filter, dx
        y_ = ops.data.at(0), w_ = ops.data.at(1), x_ = ops.output();
        break;
      case CudnnPass::backward_filter:  // x, dy, dw
        x_ = ops.data.at(0), y_ = ops.data.at(1), w_ = ops.output();
        break;
    }
  }

  // The find of this (problem, pass, math), run by the first plan that binds one. It writes the output
  // buffer: bind comes before the runner poisons the output, so no stale result can pass the check.
  const FindOutcome& cached_find(cudaStream_t stream) {
    const std::string key = problem_.key() + "|" + cudnn_pass_name(pass_) + "|" + math_;
    std::lock_guard<std::mutex> lock(find_mutex());
    auto it = find_cache().find(key);
    if (it == find_cache().end()) it = find_cache().emplace(key, run_find(stream)).first;
    return it->second;
  }

  FindOutcome run_find(cudaStream_t stream) {
    FindOutcome outcome;
    try {
      CT_CUDNN(cudnnSetStream(conv_.handle(), stream));
      DeviceArray<char> workspace(find_workspace_bytes());
      outcome.results = find_results(workspace);
    } catch (const CudaError& e) {  // a failed find costs the record its pick, not the run
      outcome.error = e.what();
    }
    return outcome;
  }

  // Room for every algorithm cuDNN supports here whose workspace fits in half the free memory (the rest is
  // left to the algorithms' own buffers); the others come back from the find as failed allocations.
  size_t find_workspace_bytes() const {
    size_t free_bytes = 0, total_bytes = 0;
    CT_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    size_t largest = 0;
    for (const CudnnAlgo& a : cudnn_algos(pass_)) {
      size_t bytes = 0;
      if (conv_.workspace_query(pass_, a.value, &bytes) == CUDNN_STATUS_SUCCESS && bytes <= free_bytes / 2)
        largest = std::max(largest, bytes);
    }
    return largest;
  }

// The legacy convolution API is marked deprecated since cuDNN 9 (warned about only with CUDNN_WARN_DEPRECATED),
// and its finds in particular since 9.13; they are still the only way to ask this API for its own pick.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  std::vector<FindResult> find_results(DeviceArray<char>& workspace) {
    const cudnnHandle_t h = conv_.handle();
    const auto x_desc = conv_.x_desc(), y_desc = conv_.y_desc();
    const auto w_desc = conv_.w_desc();
    const auto conv = conv_.conv_desc();
    void* ws = workspace.get();
    const size_t ws_bytes = workspace.bytes();
    int returned = 0;
    switch (pass_) {
      case CudnnPass::forward: {
        cudnnConvolutionFwdAlgoPerf_t perf[kFwdFindCount];
        CT_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(h, x_desc, x_, w_desc, w_, conv,
                                                        y_desc, y_, kFwdFindCount, &returned, perf, ws,
                                                        ws_bytes));
        return to_results(perf, returned);
      }
      case CudnnPass::backward_data: {
        cudnnConvolutionBwdDataAlgoPerf_t perf[kBwdDataFindCount];
        CT_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(h, w_desc, w_, y_desc, y_, conv,
                                                             x_desc, x_, kBwdDataFindCount, &returned, perf, ws,
                                                             ws_bytes));
        return to_results(perf, returned);
      }
      case CudnnPass::backward_filter: {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[kBwdFilterFindCount];
        CT_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, x_desc, x_, y_desc, y_, conv,
                                                               w_desc, w_, kBwdFilterFindCount, &returned, perf,
                                                               ws, ws_bytes));
        return to_results(perf, returned);
      }
    }
    return {};
  }
#pragma GCC diagnostic pop

  // details() from the find; and this algorithm runs with the math the find measured it with (for tf32,
  // cuDNN may report the default math rather than the tensor-op math set).
  void record_find(const FindOutcome& found) {
    const FindResult* own = first_success(found, algo_.value, math_);
    const FindResult* pick = first_success(found, -1, math_);
    details_ = {{"math", math_},
                {"algo", algo_.name},
                {"deterministic", own ? json(own->deterministic) : json(nullptr)},
                {"cudnn_pick", pick ? json(cudnn_algo_name(pass_, pick->algo)) : json(nullptr)},
                {"library_pick", pick && pick->algo == algo_.value && math_ == natural_math(problem_)},
                {"cudnn_find_ms", own ? json(own->time_ms) : json(nullptr)}};
    if (!found.error.empty()) details_["cudnn_find_error"] = found.error;
    if (fused_) details_["call"] = "cudnnConvolutionBiasActivationForward";
    if (own && own->math != descriptor_math(math_)) use_math(own->math);
  }

  void use_math(cudnnMathType_t math) {
    conv_.set_math(math);
    const size_t bytes = fitting_workspace(query_workspace(algo_.value));
    if (bytes > workspace_.bytes()) workspace_ = DeviceArray<char>(bytes);
  }

  Problem problem_;
  CudnnPass pass_;
  CudnnAlgo algo_;
  std::string math_;
  bool fused_, has_bias_;
  Activation activation_;
  CudnnConvolution conv_;
  CudnnTensorDesc bias_desc_;
  CudnnActivationDesc activation_desc_;
  DeviceArray<float> zero_bias_;
  DeviceArray<char> workspace_;
  float* x_ = nullptr;
  float* w_ = nullptr;
  float* y_ = nullptr;
  float* bias_ = nullptr;
  json details_ = json::object();
};

}  // namespace

// ---- shared helpers ---------------------------------------------------------------------------------

Cost cudnn_layer_cost(const Problem& p) {
  const double flops = p.direct_flops(), bytes = operand_bytes(p);
  return {flops, flops, bytes, bytes};
}

// ---- the variant ------------------------------------------------------------------------------------

ParamSpace CudnnLayerVariant::space(const Problem&, const DeviceInfo&) const {
  std::vector<json> names;
  for (const CudnnAlgo& a : cudnn_algos(pass())) names.push_back(a.name);
  return ParamSpace()
      .add("algo", std::string("cuDNN's ") + cudnn_pass_name(pass()) + " algorithm (it refuses some per shape at prepare time)",
           names)
      .add("math", "fp32: CUDNN_FMA_MATH, never TF32; tf32: tensor-op math, TF32 allowed (needs precision = 1)",
           {kMathFp32, kMathTf32});
}

Status CudnnLayerVariant::can_implement(const Problem& p, const Config& c, const DeviceInfo&) const {
  const std::string algo = c.at("algo").get<std::string>(), math = c.at("math").get<std::string>();
  if (!find_cudnn_algo(pass(), algo))
    return Status::no("unknown cuDNN " + std::string(cudnn_pass_name(pass())) + " algo '" + algo + "'; allowed: " +
                      cudnn_algo_names(pass()));
  if (math != kMathFp32 && math != kMathTf32) return Status::no("unknown math '" + math + "'; allowed: fp32, tf32");
  return math_allowed(p, math);
}

// The long-sum bound of the pass's math; the FFT and Winograd algorithms get at least cuDNN's looser ones.
Tolerance CudnnLayerVariant::tolerance(const Problem& p, const Config& c) const {
  const LayerShape l(p);
  const int64_t sum_length = pass() == CudnnPass::forward         ? forward_sum_length(l)
                             : pass() == CudnnPass::backward_data ? bwd_data_sum_length(l)
                                                                  : bwd_filter_sum_length(l);
  const Tolerance direct = layer_tolerance(sum_length, c.at("math").get<std::string>());
  const Tolerance method = cudnn_tolerance(c, direct);
  return {std::max(direct.rel_l2, method.rel_l2), std::max(direct.max_rel, method.max_rel)};
}

std::unique_ptr<Plan> CudnnLayerVariant::prepare(const Problem& p, const Config& c, const DeviceInfo&,
                                                 JitCache&) const {
  const std::string name = c.at("algo").get<std::string>();
  const CudnnAlgo* algo = find_cudnn_algo(pass(), name);
  if (!algo) throw InputError(this->name() + ": unknown algo '" + name + "'; allowed: " + cudnn_algo_names(pass()));
  return std::make_unique<CudnnConvPlan>(p, pass(), *algo, c.at("math").get<std::string>(), fused_call());
}

}  // namespace convtune
