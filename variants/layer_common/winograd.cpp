#include "variants/layer_common/winograd.h"

#include <algorithm>
#include <cmath>

#include "variants/layer_common/layer_epilogue.h"
#include "variants/layer_fwd/layer_fwd.h"
#include "variants/layer_common/layer_gemm.h"
#include "variants/layer_common/layer_variant.h"

namespace convtune {
namespace {

constexpr int kThreads = 256;  // the transform kernels: memory-bound, one output tile or filter per thread

// The t x t transform points of F(m x m, 3x3), one GEMM each.
int64_t points(const wino::WinoDims& d) { return int64_t(d.m + 2) * (d.m + 2); }

int output_block(const Config& c) { return c.at("tile").get<int>(); }

std::string method_name(int m) { return "F(" + std::to_string(m) + "x" + std::to_string(m) + ",3x3)"; }

// Adds and multiplies of one transform L x L^T, L an r x s matrix (zero coefficients skipped, +-1 free):
// each of its two products sums a row's terms once per column.
template <class L>
double sandwich_flops(int r, int s, L l) {
  double row_ops = 0;
  for (int i = 0; i < r; ++i) {
    int terms = 0;
    for (int k = 0; k < s; ++k) {
      if (l(i, k) == 0.f) continue;
      ++terms;
      if (std::fabs(l(i, k)) != 1.f) ++row_ops;
    }
    row_ops += terms - 1;
  }
  return row_ops * (s + r);
}

// Per tile and channel: the input transform, the output transform and backward-filter's dy transform.
struct TransformFlops {
  double input, output, gradient;
};

template <int M>
TransformFlops transform_flops_of() {
  using X = wino::Matrices<M>;
  return {sandwich_flops(M + 2, M + 2, X::bt), sandwich_flops(M, M + 2, X::at),
          sandwich_flops(M + 2, M, [](int i, int j) { return X::at(j, i); })};
}

TransformFlops transform_flops(int m) { return m == 2 ? transform_flops_of<2>() : transform_flops_of<4>(); }

int64_t tiles_in(const wino::WinoDims& d, int64_t images) { return images * int64_t(d.tiles()); }

int64_t chunk_count(int64_t n, int64_t chunk) { return ceil_div(n, chunk); }

// The workspace as the kernels lay it out (layer_winograd.cuh): the co x ci matrices (U, or backward-filter's
// per-chunk partial M), the transformed input tiles V, and the co x T matrices (M, or the transformed dy).
// Forward and backward-data hold one chunk of V and M; backward-filter the whole batch in `chunks` chunks.
struct Buffers {
  float *filter, *tiles, *maps;
  Buffers(float* base, const wino::WinoDims& d, int64_t chunk, int64_t chunks)
      : filter(base), tiles(base + points(d) * chunks * d.co * d.ci),
        maps(tiles + points(d) * chunks * d.ci * tiles_in(d, chunk)) {}
};

class WinogradPlan : public Plan {
 public:
  WinogradPlan(const Problem& p, LayerPass pass, int m, int chunk, std::shared_ptr<Module> module)
      : l_(p), pass_(pass), d_(winograd_dims(pass, m, l_)), chunk_(chunk),
        chunks_(pass == LayerPass::bwd_filter ? chunk_count(l_.n, chunk) : 1), module_(std::move(module)),
        workspace_(size_t(winograd_workspace_floats(pass, d_, l_.n, chunk))), points_(int(points(d_))),
        has_bias_(pass == LayerPass::forward && p.at("bias") == 1), handle_(make_gemm_handle()) {
    const bool filter = pass == LayerPass::bwd_filter;
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
    if (pass_ == LayerPass::bwd_filter) return run_filter_gradient(b, stream);
    const float* filter = operands_.at(1);
    float* u = b.filter;
    void* filter_args[] = {&filter, &u};
    launch_items(before_, int64_t(d_.co) * d_.ci, stream, filter_args);
    for (int first = 0; first < l_.n; first += chunk_) run_chunk(b, first, images_from(first), stream);
  }
  KernelAttributes attributes() const override { return attrs_; }
  size_t workspace_bytes() const override { return workspace_.bytes(); }
  json details() const override {
    return {{"math", kMathFp32},         {"winograd", "F(" + std::to_string(d_.m) + "x" + std::to_string(d_.m) + ",3x3)"},
            {"chunk", chunk_},           {"tiles_per_image", d_.tiles()},
            {"deterministic", true}};
  }

 private:
  int images_from(int first) const { return int(std::min<int64_t>(chunk_, l_.n - first)); }
  void launch_items(CUfunction fn, int64_t items, cudaStream_t stream, void** args) const {
    launch(fn, dim3(unsigned(ceil_div(items, kThreads))), dim3(kThreads), 0, stream, args);
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
                  d_.ci, int64_t(d_.co) * d_.ci, b.maps, columns, int64_t(d_.co) * columns, points_, 0.0f});
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
                  columns, int64_t(d_.co) * columns, b.filter, d_.ci, int64_t(d_.co) * d_.ci, int(points_ * chunks_),
                  0.0f});
    void* args[] = {&m, &dw};
    launch_items(after_, int64_t(d_.co) * d_.ci, stream, args);
  }

  const LayerShape l_;
  const LayerPass pass_;
  const wino::WinoDims d_;
  const int chunk_;
  const int64_t chunks_;  // backward-filter's partial sums; 1 otherwise
  std::shared_ptr<Module> module_;
  DeviceArray<float> workspace_;
  const int points_;
  CUfunction before_ = nullptr, input_ = nullptr, after_ = nullptr;
  bool has_bias_;
  cublasHandle_t handle_;
  std::vector<float*> operands_;
  KernelAttributes attrs_;
};

}  // namespace

wino::WinoDims winograd_dims(LayerPass pass, int m, const LayerShape& l) {
  return wino::dims(int(pass), m, int(l.c), int(l.h), int(l.w), int(l.k), int(l.pad_h), int(l.pad_w), int(l.p), int(l.q));
}

int64_t winograd_workspace_floats(LayerPass pass, const wino::WinoDims& d, int64_t n, int64_t chunk) {
  const int64_t chunks = pass == LayerPass::bwd_filter ? chunk_count(n, chunk) : 1;
  return points(d) * chunks * (int64_t(d.co) * d.ci + (int64_t(d.ci) + d.co) * tiles_in(d, chunk));
}

std::string WinogradVariant::summary() const {
  if (pass_ == LayerPass::bwd_filter)
    return "Winograd F(3x3,m x m) backward-filter (3x3, stride 1, m = 2 or 4): x-tile and dy-block transforms "
           "of the whole batch, (m+2)^2 x chunks strict-fp32 cuBLAS GEMMs, the chunks' partials summed in order, "
           "then the dw transform";
  return std::string("Winograd F(m x m,3x3) ") + layer_pass_name(pass_) +
         " (3x3, stride 1, m = 2 or 4): per chunk of images, input-tile transform, (m+2)^2 strict-fp32 cuBLAS "
         "GEMMs, output transform; the filter transform in every call";
}

ParamSpace WinogradVariant::space(const Problem& p, const DeviceInfo&) const {
  const int64_t n = p.at("n");
  // Forward and backward-data: small chunks keep V and M in L2. Backward-filter: smaller chunks split the
  // tile sum into more GEMMs, to fill the GPU when co x ci is small.
  std::vector<json> chunks;
  if (pass_ == LayerPass::bwd_filter && n > 2) chunks.push_back(2);
  for (int chunk : {4, 8, 16})
    if (chunk < n) chunks.push_back(chunk);
  if (n <= 32) chunks.push_back(n);
  if (chunks.empty()) chunks.push_back(16);
  return ParamSpace()
      .add("tile", "output block m of F(m x m, 3x3): 4 multiplies 2.25x fewer than 2, with 7x its rounding", {2, 4}, 2)
      .add("chunk", "images per input transform, GEMM batch and output transform", chunks);
}

Status WinogradVariant::can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const {
  if (p.family != family()) return Status::no("not a " + family() + " problem");
  const LayerShape l(p);
  if (l.r != 3 || l.s != 3) return Status::no("Winograd F(m x m,3x3) needs a 3x3 filter (r = s = 3)");
  if (l.u != 1 || l.v != 1) return Status::no("Winograd F(m x m,3x3) needs stride 1 (u = v = 1)");
  if (l.pad_h > 2 || l.pad_w > 2) return Status::no("padding must be at most 2");
  const int m = output_block(c);
  if (m != 2 && m != 4) return Status::no("tile " + std::to_string(m) + " is not one of 2, 4");
  const int chunk = chunk_images(c);
  if (chunk < 1 || chunk > l.n) return Status::no("chunk " + std::to_string(chunk) + " outside 1..n = " + std::to_string(l.n));
  const wino::WinoDims d = winograd_dims(pass_, m, l);
  const double floats = double(winograd_workspace_floats(pass_, d, l.n, chunk));
  const double bound = gemm_workspace_bound(dev);
  if (4.0 * floats > bound)
    return Status::no("workspace (transformed filter, tiles and products of " +
                      std::string(pass_ == LayerPass::bwd_filter ? "the batch" : std::to_string(chunk) + " images") + ") " +
                      std::to_string(int64_t(4.0 * floats / double(1 << 20))) + " MiB over the bound");
  // The largest index of the kernels: into V, the co x T matrices or backward-filter's partials.
  const double chunks = pass_ == LayerPass::bwd_filter ? double(chunk_count(l.n, chunk)) : 1.0;
  if (double(points(d)) * chunks * double(std::max(d.ci, d.co)) * std::max(double(tiles_in(d, chunk)), double(d.ci)) >
      2147483647.0)
    return Status::no("chunk too large for the kernels' 32-bit indices");
  return Status::yes();
}

Cost WinogradVariant::cost(const Problem& p, const Config& c) const {
  const LayerShape l(p);
  const wino::WinoDims d = winograd_dims(pass_, output_block(c), l);
  const double tiles = double(tiles_in(d, l.n)), ci = d.ci, co = d.co, t2 = double(points(d));
  // flops_variant: the GEMMs' 2 t^2 co ci per tile, the input transform per (ci, tile) and the output
  // transform (backward-filter: dy's) per (co, tile). bytes_model: the operands, the co x ci matrices
  // written once and read per chunk (backward-filter: a partial per chunk written and read once), V and the
  // co x T matrices written and read once.
  const bool filter = pass_ == LayerPass::bwd_filter;
  const TransformFlops transforms = transform_flops(d.m);
  const double chunks = double(chunk_count(l.n, chunk_images(c)));
  const double flops = 2.0 * t2 * co * ci * tiles + transforms.input * ci * tiles +
                       (filter ? transforms.gradient : transforms.output) * co * tiles;
  const double matrices = filter ? 2.0 * chunks : 1.0 + chunks;
  const double bytes = operand_bytes(p) + 4.0 * t2 * (co * ci * matrices + 2.0 * (ci + co) * tiles);
  return {p.direct_flops(), flops, operand_bytes(p), bytes};
}

// The strict direct-fp32 bound. F(2x2,3x3)'s transforms only add, subtract and halve: the CPU test measured
// 1.1e-7 to 2.8e-7 rel_l2 (forward, backward-data), as a direct sum gives. F(4x4,3x3) scales by up to 8 and
// 1/24, and its fp32 fractions are rounded: about 7x that, still well inside the bound (the CPU test).
Tolerance WinogradVariant::tolerance(const Problem& p, const Config&) const {
  const LayerShape l(p);
  const int64_t terms = pass_sum_length(pass_, l);
  return layer_tolerance(terms, kMathFp32);
}

std::vector<JitProgram> WinogradVariant::programs(const Problem& p, const Config& c) const {
  const LayerShape l(p);
  JitProgram program{"layer_winograd.cuh", layer_defines(l)};
  program.options.push_back(define("PASS", int(pass_)));
  program.options.push_back(define("THREADS", kThreads));
  program.options.push_back(define("TILE", output_block(c)));
  if (pass_ == LayerPass::forward)
    for (std::string& d : epilogue_defines(p)) program.options.push_back(std::move(d));
  if (pass_ == LayerPass::bwd_filter) program.options.push_back(define("CHUNK", chunk_images(c)));
  return {program};
}

std::unique_ptr<Plan> WinogradVariant::prepare(const Problem& p, const Config& c, const DeviceInfo&, JitCache& jit) const {
  return std::make_unique<WinogradPlan>(p, pass_, output_block(c), chunk_images(c), jit.module(programs(p, c).front()));
}

}  // namespace convtune
