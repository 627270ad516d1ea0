#include "variants/layer_fwd/winograd.h"

#include <algorithm>
#include <cmath>

#include "variants/layer_fwd/layer_fwd.h"
#include "variants/layer_fwd/layer_gemm.h"
#include "variants/layer_fwd/layer_variant.h"

namespace convtune {
namespace {

constexpr int kThreads = 256;  // the transform kernels: memory-bound, one output tile or filter per thread
constexpr int kPoints = 16;    // the 4x4 transform points, one GEMM each

int64_t tiles_in(const wino::WinoDims& d, int64_t images) { return images * int64_t(d.tiles()); }

// U, V and M of one chunk, as the kernels lay them out (layer_winograd.cuh).
struct Buffers {
  float *u, *v, *m;
  Buffers(float* base, const wino::WinoDims& d, int64_t chunk)
      : u(base), v(base + kPoints * int64_t(d.co) * d.ci), m(v + kPoints * int64_t(d.ci) * tiles_in(d, chunk)) {}
};

class WinogradPlan : public Plan {
 public:
  WinogradPlan(const Problem& p, WinogradPass pass, int chunk, std::shared_ptr<Module> module)
      : l_(p), d_(winograd_dims(pass, l_)), chunk_(chunk), module_(std::move(module)),
        filter_(module_->function("winograd_filter")), input_(module_->function("winograd_input")),
        output_(module_->function("winograd_output")), workspace_(size_t(winograd_workspace_floats(d_, chunk))),
        has_bias_(pass == WinogradPass::forward && p.at("bias") == 1), handle_(make_gemm_handle()) {
    attrs_ = kernel_attributes(input_, kThreads, 0);
  }
  ~WinogradPlan() override { cublasDestroy(handle_); }
  WinogradPlan(const WinogradPlan&) = delete;
  WinogradPlan& operator=(const WinogradPlan&) = delete;

  void bind(const Operands& ops, cudaStream_t) override { operands_ = ops.data; }
  void run(cudaStream_t stream) override {
    if (cublasSetStream(handle_, stream) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasSetStream failed");
    const Buffers b(workspace_.get(), d_, chunk_);
    const float* filter = operands_.at(1);
    float* u = b.u;
    void* filter_args[] = {&filter, &u};
    launch_items(filter_, int64_t(d_.co) * d_.ci, stream, filter_args);
    for (int first = 0; first < l_.n; first += chunk_) run_chunk(b, first, int(std::min<int64_t>(chunk_, l_.n - first)), stream);
  }
  KernelAttributes attributes() const override { return attrs_; }
  size_t workspace_bytes() const override { return workspace_.bytes(); }
  json details() const override {
    return {{"math", kMathFp32}, {"chunk", chunk_}, {"tiles_per_image", d_.tiles()}, {"deterministic", true}};
  }

 private:
  void launch_items(CUfunction fn, int64_t items, cudaStream_t stream, void** args) const {
    launch(fn, dim3(unsigned(layer_div_up(items, kThreads))), dim3(kThreads), 0, stream, args);
  }

  // Transform the chunk's input tiles, multiply per transform point, transform back into the output.
  void run_chunk(const Buffers& b, int first, int images, cudaStream_t stream) const {
    const int columns = int(tiles_in(d_, images));
    const float* in = operands_.at(0);
    float *v = b.v, *m = b.m, *out = operands_.back();
    const float* bias = has_bias_ ? operands_.at(2) : nullptr;
    void* input_args[] = {&in, &v, &first, &images};
    launch_items(input_, int64_t(d_.ci) * columns, stream, input_args);
    // Row-major M_x (co x T) = U_x (co x ci) V_x (ci x T); cuBLAS reads each as its column-major transpose:
    // M_x^T (T x co) = V_x^T (T x ci) U_x^T (ci x co), no op needed.
    strided_gemm(handle_, CUBLAS_COMPUTE_32F,
                 {CUBLAS_OP_N, CUBLAS_OP_N, columns, d_.co, d_.ci, b.v, columns, int64_t(d_.ci) * columns, b.u, d_.ci,
                  int64_t(d_.co) * d_.ci, b.m, columns, int64_t(d_.co) * columns, kPoints, 0.0f});
    void* output_args[] = {&m, &bias, &out, &first, &images};
    launch_items(output_, int64_t(d_.co) * columns, stream, output_args);
  }

  const LayerShape l_;
  const wino::WinoDims d_;
  const int chunk_;
  std::shared_ptr<Module> module_;
  CUfunction filter_, input_, output_;
  DeviceArray<float> workspace_;
  bool has_bias_;
  cublasHandle_t handle_;
  std::vector<float*> operands_;
  KernelAttributes attrs_;
};

}  // namespace

wino::WinoDims winograd_dims(WinogradPass pass, const LayerShape& l) {
  return wino::dims(int(pass), int(l.c), int(l.h), int(l.w), int(l.k), int(l.pad_h), int(l.pad_w), int(l.p), int(l.q));
}

int64_t winograd_workspace_floats(const wino::WinoDims& d, int64_t chunk) {
  return kPoints * (int64_t(d.co) * d.ci + (int64_t(d.ci) + d.co) * tiles_in(d, chunk));
}

std::string WinogradVariant::summary() const {
  return std::string("Winograd F(2x2,3x3) ") + (pass_ == WinogradPass::forward ? "forward" : "backward-data") +
         " (3x3, stride 1): per chunk of images, input-tile transform, 16 strict-fp32 cuBLAS GEMMs, output "
         "transform; the filter transform in every call";
}

ParamSpace WinogradVariant::space(const Problem& p, const DeviceInfo&) const {
  const int64_t n = p.at("n");
  std::vector<json> chunks;  // small chunks keep V and M in L2; n itself up to 32
  for (int chunk : {4, 8, 16})
    if (chunk < n) chunks.push_back(chunk);
  if (n <= 32) chunks.push_back(n);
  if (chunks.empty()) chunks.push_back(16);
  return ParamSpace().add("chunk", "images per input transform, GEMM batch and output transform", chunks);
}

Status WinogradVariant::can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const {
  if (p.family != family()) return Status::no("not a " + family() + " problem");
  const LayerShape l(p);
  if (l.r != 3 || l.s != 3) return Status::no("F(2x2,3x3) needs a 3x3 filter (r = s = 3)");
  if (l.u != 1 || l.v != 1) return Status::no("F(2x2,3x3) needs stride 1 (u = v = 1)");
  if (l.pad_h > 2 || l.pad_w > 2) return Status::no("padding must be at most 2");
  const int chunk = chunk_images(c);
  if (chunk < 1 || chunk > l.n) return Status::no("chunk " + std::to_string(chunk) + " outside 1..n = " + std::to_string(l.n));
  const wino::WinoDims d = winograd_dims(pass_, l);
  const double floats = double(winograd_workspace_floats(d, chunk));
  const double bound = std::min(kMaxGemmWorkspaceBytes, double(dev.global_mem_bytes) / 4);
  if (4.0 * floats > bound)
    return Status::no("workspace (U, V and M of " + std::to_string(chunk) + " images) " +
                      std::to_string(int64_t(4.0 * floats / double(1 << 20))) + " MiB over the bound");
  if (double(kPoints) * double(std::max(d.ci, d.co)) * double(tiles_in(d, chunk)) > 2147483647.0)
    return Status::no("chunk too large for the kernels' 32-bit indices");
  return Status::yes();
}

Cost WinogradVariant::cost(const Problem& p, const Config& c) const {
  const LayerShape l(p);
  const wino::WinoDims d = winograd_dims(pass_, l);
  const double tiles = double(tiles_in(d, l.n)), ci = d.ci, co = d.co;
  // flops_variant: the GEMMs' 2*16*co*ci per tile, the input transform's 32 adds per (ci, tile) and the
  // output transform's 24 per (co, tile). bytes_model: the operands, U written once and read per chunk,
  // V and M written and read once.
  const double chunks = double(layer_div_up(l.n, chunk_images(c)));
  const double flops = 2.0 * kPoints * co * ci * tiles + 32.0 * ci * tiles + 24.0 * co * tiles;
  const double bytes = operand_bytes(p) + 4.0 * kPoints * (co * ci * (1.0 + chunks) + 2.0 * (ci + co) * tiles);
  return {p.direct_flops(), flops, operand_bytes(p), bytes};
}

// The strict direct-fp32 bound: F(2x2,3x3)'s transforms only add, subtract and halve, so they add a few
// roundings per output; the CPU test measured 1.1e-7 to 2.8e-7 rel_l2, as a direct sum gives.
Tolerance WinogradVariant::tolerance(const Problem& p, const Config&) const {
  const LayerShape l(p);
  return layer_tolerance(pass_ == WinogradPass::forward ? forward_sum_length(l) : bwd_data_sum_length(l), kMathFp32);
}

std::vector<JitProgram> WinogradVariant::programs(const Problem& p, const Config&) const {
  const LayerShape l(p);
  JitProgram program{"layer_winograd.cuh", layer_defines(l)};
  program.options.push_back(layer_define("PASS", int(pass_)));
  program.options.push_back(layer_define("THREADS", kThreads));
  if (pass_ == WinogradPass::forward) {
    program.options.push_back(layer_define("BIAS", p.at("bias")));
    program.options.push_back(layer_define("RELU", p.at("relu")));
  }
  return {program};
}

std::unique_ptr<Plan> WinogradVariant::prepare(const Problem& p, const Config& c, const DeviceInfo&, JitCache& jit) const {
  return std::make_unique<WinogradPlan>(p, pass_, chunk_images(c), jit.module(programs(p, c).front()));
}

namespace {

class LayerFwdWinograd : public WinogradVariant {
 public:
  LayerFwdWinograd() : WinogradVariant(WinogradPass::forward) {}
  std::string name() const override { return "layer_fwd.winograd"; }
  std::string family() const override { return kLayerFwd; }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(LayerFwdWinograd);

}  // namespace convtune
