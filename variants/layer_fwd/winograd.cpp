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

int64_t chunk_count(int64_t n, int64_t chunk) { return layer_div_up(n, chunk); }

// The workspace as the kernels lay it out (layer_winograd.cuh): the co x ci matrices (U, or backward-filter's
// per-chunk partial M), the transformed input tiles V, and the co x T matrices (M, or the transformed dy).
// Forward and backward-data hold one chunk of V and M; backward-filter the whole batch in `chunks` chunks.
struct Buffers {
  float *filter, *tiles, *maps;
  Buffers(float* base, const wino::WinoDims& d, int64_t chunk, int64_t chunks)
      : filter(base), tiles(base + kPoints * chunks * d.co * d.ci),
        maps(tiles + kPoints * chunks * d.ci * tiles_in(d, chunk)) {}
};

class WinogradPlan : public Plan {
 public:
  WinogradPlan(const Problem& p, WinogradPass pass, int chunk, std::shared_ptr<Module> module)
      : l_(p), pass_(pass), d_(winograd_dims(pass, l_)), chunk_(chunk), module_(std::move(module)),
        chunks_(pass == WinogradPass::bwd_filter ? chunk_count(l_.n, chunk) : 1),
        workspace_(size_t(winograd_workspace_floats(pass, d_, l_.n, chunk))),
        has_bias_(pass == WinogradPass::forward && p.at("bias") == 1), handle_(make_gemm_handle()) {
    const bool filter = pass == WinogradPass::bwd_filter;
    before_ = module_->function(filter ? "winograd_gradient" : "winograd_filter");
    input_ = module_->function(filter ? "winograd_tiles" : "winograd_input");
    after_ = module_->function(filter ? "winograd_filter_gradient" : "winograd_output");
    attrs_ = kernel_attributes(input_, kThreads, 0);
  }
  ~WinogradPlan() override { cublasDestroy(handle_); }
  WinogradPlan(const WinogradPlan&) = delete;
  WinogradPlan& operator=(const WinogradPlan&) = delete;

  void bind(const Operands& ops, cudaStream_t) override { operands_ = ops.data; }
  void run(cudaStream_t stream) override {
    if (cublasSetStream(handle_, stream) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasSetStream failed");
    const Buffers b(workspace_.get(), d_, chunk_, chunks_);
    if (pass_ == WinogradPass::bwd_filter) return run_filter_gradient(b, stream);
    const float* filter = operands_.at(1);
    float* u = b.filter;
    void* filter_args[] = {&filter, &u};
    launch_items(before_, int64_t(d_.co) * d_.ci, stream, filter_args);
    for (int first = 0; first < l_.n; first += chunk_) run_chunk(b, first, images_from(first), stream);
  }
  KernelAttributes attributes() const override { return attrs_; }
  size_t workspace_bytes() const override { return workspace_.bytes(); }
  json details() const override {
    return {{"math", kMathFp32}, {"chunk", chunk_}, {"tiles_per_image", d_.tiles()}, {"deterministic", true}};
  }

 private:
  int images_from(int first) const { return int(std::min<int64_t>(chunk_, l_.n - first)); }
  void launch_items(CUfunction fn, int64_t items, cudaStream_t stream, void** args) const {
    launch(fn, dim3(unsigned(layer_div_up(items, kThreads))), dim3(kThreads), 0, stream, args);
  }
  // The chunk's input tiles transformed into V.
  void transform_input(float* v, int first, int images, cudaStream_t stream) const {
    const float* in = operands_.at(0);
    void* args[] = {&in, &v, &first, &images};
    launch_items(input_, int64_t(d_.ci) * tiles_in(d_, images), stream, args);
  }

  // Forward and backward-data: transform the chunk's input tiles, multiply per transform point, transform
  // back into the output.
  void run_chunk(const Buffers& b, int first, int images, cudaStream_t stream) const {
    const int columns = int(tiles_in(d_, images));
    transform_input(b.tiles, first, images, stream);
    // Row-major M_x (co x T) = U_x (co x ci) V_x (ci x T); cuBLAS reads each as its column-major transpose:
    // M_x^T (T x co) = V_x^T (T x ci) U_x^T (ci x co), no op needed.
    strided_gemm(handle_, CUBLAS_COMPUTE_32F,
                 {CUBLAS_OP_N, CUBLAS_OP_N, columns, d_.co, d_.ci, b.tiles, columns, int64_t(d_.ci) * columns, b.filter,
                  d_.ci, int64_t(d_.co) * d_.ci, b.maps, columns, int64_t(d_.co) * columns, kPoints, 0.0f});
    float *m = b.maps, *out = operands_.back();
    const float* bias = has_bias_ ? operands_.at(2) : nullptr;
    void* args[] = {&m, &bias, &out, &first, &images};
    launch_items(after_, int64_t(d_.co) * columns, stream, args);
  }

  // Backward-filter: x's tiles (V) and dy's blocks (E) of the whole batch transformed, one partial
  // M = E V^T per (transform point, chunk) in one batched GEMM (the chunks split the long tile sum so that
  // the GEMM fills the GPU), then dw = G^T (the partials summed in order) G.
  void run_filter_gradient(const Buffers& b, cudaStream_t stream) const {
    const int columns = int(tiles_in(d_, chunk_));
    const float *x = operands_.at(0), *dy = operands_.at(1);
    float *v = b.tiles, *e = b.maps, *m = b.filter, *dw = operands_.back();
    void* tile_args[] = {&x, &v};
    launch_items(input_, chunks_ * d_.ci * columns, stream, tile_args);
    void* gradient_args[] = {&dy, &e};
    launch_items(before_, chunks_ * d_.co * columns, stream, gradient_args);
    // Row-major M_b (co x ci) = E_b (co x TC) V_b^T (TC x ci); in cuBLAS's column-major terms
    // M_b^T (ci x co) = op_T(V_b as TC x ci) E_b (TC x co).
    strided_gemm(handle_, CUBLAS_COMPUTE_32F,
                 {CUBLAS_OP_T, CUBLAS_OP_N, d_.ci, d_.co, columns, b.tiles, columns, int64_t(d_.ci) * columns, b.maps,
                  columns, int64_t(d_.co) * columns, b.filter, d_.ci, int64_t(d_.co) * d_.ci, int(kPoints * chunks_),
                  0.0f});
    void* args[] = {&m, &dw};
    launch_items(after_, int64_t(d_.co) * d_.ci, stream, args);
  }

  const LayerShape l_;
  const WinogradPass pass_;
  const wino::WinoDims d_;
  const int chunk_;
  const int64_t chunks_;  // backward-filter's partial sums; 1 otherwise
  std::shared_ptr<Module> module_;
  CUfunction before_ = nullptr, input_ = nullptr, after_ = nullptr;
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

int64_t winograd_workspace_floats(WinogradPass pass, const wino::WinoDims& d, int64_t n, int64_t chunk) {
  const int64_t chunks = pass == WinogradPass::bwd_filter ? chunk_count(n, chunk) : 1;
  return kPoints * chunks * (int64_t(d.co) * d.ci + (int64_t(d.ci) + d.co) * tiles_in(d, chunk));
}

std::string WinogradVariant::summary() const {
  if (pass_ == WinogradPass::bwd_filter)
    return "Winograd F(3x3,2x2) backward-filter (3x3, stride 1): per chunk of images, x-tile and dy-block "
           "transforms, 16 strict-fp32 cuBLAS GEMMs accumulating over the chunks, then the dw transform";
  return std::string("Winograd F(2x2,3x3) ") + (pass_ == WinogradPass::forward ? "forward" : "backward-data") +
         " (3x3, stride 1): per chunk of images, input-tile transform, 16 strict-fp32 cuBLAS GEMMs, output "
         "transform; the filter transform in every call";
}

ParamSpace WinogradVariant::space(const Problem& p, const DeviceInfo&) const {
  const int64_t n = p.at("n");
  // Forward and backward-data: small chunks keep V and M in L2. Backward-filter: smaller chunks split the
  // tile sum into more GEMMs, to fill the GPU when co x ci is small.
  std::vector<json> chunks;
  if (pass_ == WinogradPass::bwd_filter && n > 2) chunks.push_back(2);
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
  const double floats = double(winograd_workspace_floats(pass_, d, l.n, chunk));
  const double bound = std::min(kMaxGemmWorkspaceBytes, double(dev.global_mem_bytes) / 4);
  if (4.0 * floats > bound)
    return Status::no("workspace (transformed filter, tiles and products of " +
                      std::string(pass_ == WinogradPass::bwd_filter ? "the batch" : std::to_string(chunk) + " images") + ") " +
                      std::to_string(int64_t(4.0 * floats / double(1 << 20))) + " MiB over the bound");
  // The largest index of the kernels: into V, the co x T matrices or backward-filter's partials.
  const double chunks = pass_ == WinogradPass::bwd_filter ? double(chunk_count(l.n, chunk)) : 1.0;
  if (double(kPoints) * chunks * double(std::max(d.ci, d.co)) * std::max(double(tiles_in(d, chunk)), double(d.ci)) >
      2147483647.0)
    return Status::no("chunk too large for the kernels' 32-bit indices");
  return Status::yes();
}

Cost WinogradVariant::cost(const Problem& p, const Config& c) const {
  const LayerShape l(p);
  const wino::WinoDims d = winograd_dims(pass_, l);
  const double tiles = double(tiles_in(d, l.n)), ci = d.ci, co = d.co;
  // flops_variant: the GEMMs' 2*16*co*ci per tile, the input transform's 32 adds per (ci, tile) and the
  // output transform's 24 (dy's: 16) per (co, tile). bytes_model: the operands, the co x ci matrices
  // written once and read per chunk (backward-filter: a partial per chunk written and read once), V and the
  // co x T matrices written and read once.
  const bool filter = pass_ == WinogradPass::bwd_filter;
  const double chunks = double(chunk_count(l.n, chunk_images(c)));
  const double flops = 2.0 * kPoints * co * ci * tiles + 32.0 * ci * tiles + (filter ? 16.0 : 24.0) * co * tiles;
  const double matrices = filter ? 2.0 * chunks : 1.0 + chunks;
  const double bytes = operand_bytes(p) + 4.0 * kPoints * (co * ci * matrices + 2.0 * (ci + co) * tiles);
  return {p.direct_flops(), flops, operand_bytes(p), bytes};
}

// The strict direct-fp32 bound: the transforms only add, subtract and halve, so they add a few roundings per
// output; the CPU test measured 1.1e-7 to 2.8e-7 rel_l2 (forward, backward-data), as a direct sum gives.
Tolerance WinogradVariant::tolerance(const Problem& p, const Config&) const {
  const LayerShape l(p);
  const int64_t terms = pass_ == WinogradPass::forward    ? forward_sum_length(l)
                        : pass_ == WinogradPass::bwd_data ? bwd_data_sum_length(l)
                                                          : bwd_filter_sum_length(l);
  return layer_tolerance(terms, kMathFp32);
}

std::vector<JitProgram> WinogradVariant::programs(const Problem& p, const Config& c) const {
  const LayerShape l(p);
  JitProgram program{"layer_winograd.cuh", layer_defines(l)};
  program.options.push_back(layer_define("PASS", int(pass_)));
  program.options.push_back(layer_define("THREADS", kThreads));
  if (pass_ == WinogradPass::forward) {
    program.options.push_back(layer_define("BIAS", p.at("bias")));
    program.options.push_back(layer_define("RELU", p.at("relu")));
  }
  if (pass_ == WinogradPass::bwd_filter) program.options.push_back(layer_define("CHUNK", chunk_images(c)));
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
