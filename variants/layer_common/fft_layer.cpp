#include "variants/layer_common/fft_layer.h"

#include <cublas_v2.h>
#include <cufft.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "harness/cuda_raii.h"
#include "harness/cufft.h"
#include "variants/layer_common/fft_layer_kernels.h"
#include "variants/layer_common/layer_epilogue.h"
#include "variants/layer_common/layer_gemm.h"
#include "variants/layer_common/layer_variant.h"

namespace convtune {
namespace {

constexpr int kFftTileSizes[] = {8, 16, 24, 32};
constexpr const char* kGemmFourMultiply = "cgemm";  // 4 real products a complex one
constexpr const char* kGemmThreeMultiply = "cgemm3m";  // Gauss's 3: a quarter fewer products, a little more rounding

int fft_tile(const Config& c) { return c.at("tile").get<int>(); }

int fft_max_taps(const LayerShape& l) { return int(std::max(l.r, l.s)); }

// A tile yields at least as many outputs along each axis as the filter has taps.
bool fft_tile_fits(int t, const LayerShape& l) { return t >= 2 * fft_max_taps(l) - 1; }

void check_fft_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cuda("cublas", cublasGetStatusString(status), call, __FILE__, __LINE__);
}

// Real tiles [batch][t][t] to spectra [bin][batch] (forward), or back (inverse); no work area of its own.
void make_fft_tile_plan(cufftHandle plan, int t, int64_t batch, bool inverse, size_t* work_bytes) {
  int n[2] = {t, t}, real_embed[2] = {t, t}, spectrum_embed[2] = {t, t / 2 + 1};
  const int b = int(batch);
  CT_CUFFT(cufftSetAutoAllocation(plan, 0));
  if (inverse)
    CT_CUFFT(cufftMakePlanMany(plan, 2, n, spectrum_embed, b, 1, real_embed, 1, t * t, CUFFT_C2R, b, work_bytes));
  else
    CT_CUFFT(cufftMakePlanMany(plan, 2, n, real_embed, 1, t * t, spectrum_embed, b, 1, CUFFT_R2C, b, work_bytes));
}

class FftLayerPlan : public Plan {
 public:
  FftLayerPlan(const Problem& p, FftPass pass, int t, bool three_multiply)
      : l_(p), g_(fft_layer_tiles(pass, t, l_)), batches_(fft_batches(g_, l_)), three_multiply_(three_multiply),
        bias_(pass == FftPass::forward && has_bias(p)), act_(int(activation_of(p))),
        real_(size_t(batches_.largest() * t * t)), first_(size_t(batches_.first * g_.bins())),
        second_(size_t(batches_.second * g_.bins())), third_(size_t(batches_.third * g_.bins())) {
    size_t a = 0, b = 0, c = 0;
    make_fft_tile_plan(first_plan_.get(), t, batches_.first, false, &a);
    make_fft_tile_plan(second_plan_.get(), t, batches_.second, false, &b);
    make_fft_tile_plan(third_plan_.get(), t, batches_.third, true, &c);
    work_ = DeviceArray<char>(std::max({a, b, c}));
    for (cufftHandle h : {first_plan_.get(), second_plan_.get(), third_plan_.get()})
      if (work_.get()) CT_CUFFT(cufftSetWorkArea(h, work_.get()));
    check_fft_cublas(cublasCreate(&blas_), "cublasCreate");
    check_fft_cublas(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");  // no TF32
  }
  ~FftLayerPlan() override {
    if (blas_) cublasDestroy(blas_);
  }
  FftLayerPlan(const FftLayerPlan&) = delete;
  FftLayerPlan& operator=(const FftLayerPlan&) = delete;

  void bind(const Operands& ops, cudaStream_t) override { operands_ = ops.data; }

  void run(cudaStream_t stream) override {
    for (cufftHandle h : {first_plan_.get(), second_plan_.get(), third_plan_.get()}) CT_CUFFT(cufftSetStream(h, stream));
    check_fft_cublas(cublasSetStream(blas_, stream), "cublasSetStream");
    const int n = int(l_.n), h = int(l_.h), w = int(l_.w), k = int(l_.k), r = int(l_.r), s = int(l_.s);
    const int p = int(l_.p), q = int(l_.q);
    fft_layer_gather(operands_.at(0), real_.get(), fft_input_gather(g_, n, h, w, r, s, int(l_.pad_h), int(l_.pad_w), p, q),
                     stream);
    CT_CUFFT(cufftExecR2C(first_plan_.get(), real_.get(), first_.get()));
    if (g_.pass == FftPass::bwd_filter)
      fft_layer_gather(operands_.at(1), real_.get(), fft_gradient_gather(g_, n, k, p, q), stream);
    else
      fft_layer_pad_filters(operands_.at(1), real_.get(), k * int(l_.c), r, s, g_.t, stream);
    CT_CUFFT(cufftExecR2C(second_plan_.get(), real_.get(), second_.get()));
    multiply();
    CT_CUFFT(cufftExecC2R(third_plan_.get(), third_.get(), real_.get()));
    const float scale = float(1.0 / (double(g_.t) * g_.t));
    if (g_.pass == FftPass::bwd_filter) {
      fft_layer_crop_filters(real_.get(), operands_.back(), k * int(l_.c), r, s, g_.t, scale, stream);
    } else {
      const float* bias = bias_ ? operands_.at(2) : nullptr;
      fft_layer_scatter(real_.get(), bias, operands_.back(), fft_output_scatter(g_, n, h, w, r, s, p, q), scale, act_,
                        stream);
    }
  }

  size_t workspace_bytes() const override {
    return real_.bytes() + first_.bytes() + second_.bytes() + third_.bytes() + work_.bytes();
  }
  json details() const override {
    return {{"math", kMathFp32},
            {"transform", std::to_string(g_.t) + "x" + std::to_string(g_.t)},
            {"tiles_per_image", g_.tiles_y * g_.tiles_x},
            {"deterministic", true}};
  }

 private:
  // One complex GEMM per bin, all bins in one call (column-major, as fft_layer.h lays the spectra out).
  void multiply() {
    const int c = int(l_.c), k = int(l_.k), cols = g_.columns, bins = g_.bins();
    const cuComplex one = {1.0f, 0.0f}, zero = {0.0f, 0.0f};
    auto gemm = three_multiply_ ? cublasCgemm3mStridedBatched : cublasCgemmStridedBatched;
    const cuComplex *first = first_.get(), *second = second_.get();
    cuComplex* third = third_.get();
    switch (g_.pass) {
      case FftPass::forward:  // Y (k x cols) = W^H, W being c x k, times X (c x cols)
        check_fft_cublas(gemm(blas_, CUBLAS_OP_C, CUBLAS_OP_N, k, cols, c, &one, second, c, int64_t(k) * c, first, c,
                          int64_t(c) * cols, &zero, third, k, int64_t(k) * cols, bins),
                     "cgemm (forward)");
        break;
      case FftPass::bwd_data:  // DX (c x cols) = W (c x k) DY (k x cols)
        check_fft_cublas(gemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, c, cols, k, &one, second, c, int64_t(k) * c, first, k,
                          int64_t(k) * cols, &zero, third, c, int64_t(c) * cols, bins),
                     "cgemm (backward-data)");
        break;
      case FftPass::bwd_filter:  // DW (c x k) = X (c x cols) DY^H, DY being k x cols
        check_fft_cublas(gemm(blas_, CUBLAS_OP_N, CUBLAS_OP_C, c, k, cols, &one, first, c, int64_t(c) * cols, second, k,
                          int64_t(k) * cols, &zero, third, c, int64_t(k) * c, bins),
                     "cgemm (backward-filter)");
        break;
    }
  }

  const LayerShape l_;
  const FftLayerTiles g_;
  const FftBatches batches_;
  const bool three_multiply_, bias_;
  const int act_;
  DeviceArray<float> real_;  // the tiles of each transform in turn
  DeviceArray<cuComplex> first_, second_, third_;
  DeviceArray<char> work_;
  CufftHandle first_plan_, second_plan_, third_plan_;
  cublasHandle_t blas_ = nullptr;
  std::vector<float*> operands_;
};

std::string fft_pass_name(FftPass pass) {
  return pass == FftPass::forward ? "forward" : pass == FftPass::bwd_data ? "backward-data" : "backward-filter";
}

}  // namespace

FftLayerTiles fft_layer_tiles(FftPass pass, int t, const LayerShape& l) {
  return fft_layer_tiles(pass, t, int(l.n), int(l.c), int(l.h), int(l.w), int(l.k), int(l.r), int(l.s), int(l.p),
                         int(l.q));
}

int64_t FftBatches::largest() const { return std::max({first, second, third}); }

FftBatches fft_batches(const FftLayerTiles& g, const LayerShape& l) {
  const int64_t cols = g.columns, filters = l.k * l.c;
  if (g.pass == FftPass::bwd_filter) return {l.c * cols, l.k * cols, filters};
  return {g.in_maps * cols, filters, g.out_maps * cols};
}

std::string FftLayerVariant::summary() const {
  const bool filter = pass_ == FftPass::bwd_filter;
  return "tiled FFT " + fft_pass_name(pass_) + " (stride 1, 3 to 16 taps): cuFFT transforms of t x t tiles of " +
         (filter ? "x and of dy's blocks" : pass_ == FftPass::forward ? "x and of the filters (every call)"
                                                                      : "dy and of the filters (every call)") +
         ", one strict-fp32 complex GEMM per frequency bin (all bins in one cuBLAS call), inverse transforms read out" +
         (pass_ == FftPass::forward ? " with the bias and activation" : "");
}

ParamSpace FftLayerVariant::space(const Problem& p, const DeviceInfo&) const {
  const LayerShape l(p);
  std::vector<json> tiles;
  for (int t : kFftTileSizes) {
    if (!fft_tile_fits(t, l)) continue;
    tiles.push_back(t);
    const FftLayerTiles g = fft_layer_tiles(pass_, t, l);
    if (g.tiles_y == 1 && g.tiles_x == 1) break;  // a larger tile only pads more
  }
  if (tiles.empty()) tiles.push_back(kFftTileSizes[3]);  // refused by can_implement, with the reason
  return ParamSpace()
      .add("tile", "transform size t: a t x t tile gives (t - r + 1) x (t - s + 1) outputs", tiles)
      .add("gemm", "cuBLAS complex GEMM: cgemm (4 real products each) or cgemm3m (Gauss's 3)",
           {kGemmFourMultiply, kGemmThreeMultiply});
}

Status FftLayerVariant::can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const {
  if (p.family != family()) return Status::no("not a " + family() + " problem");
  const LayerShape l(p);
  if (l.u != 1 || l.v != 1) return Status::no("the tiled FFT needs stride 1 (u = v = 1)");
  if (fft_max_taps(l) < 3) return Status::no("filters under 3 taps a side: the transforms cost more than they save");
  const int t = fft_tile(c);
  if (std::find(std::begin(kFftTileSizes), std::end(kFftTileSizes), t) == std::end(kFftTileSizes))
    return Status::no("tile " + std::to_string(t) + " is not one of 8, 16, 24, 32");
  if (!fft_tile_fits(t, l))
    return Status::no("tile " + std::to_string(t) + " < 2 * " + std::to_string(fft_max_taps(l)) +
                      " - 1: fewer outputs a tile than filter taps");
  const std::string gemm = c.at("gemm").get<std::string>();
  if (gemm != kGemmFourMultiply && gemm != kGemmThreeMultiply)
    return Status::no("gemm '" + gemm + "' is not one of cgemm, cgemm3m");
  const FftLayerTiles g = fft_layer_tiles(pass_, t, l);
  const FftBatches b = fft_batches(g, l);
  // cuFFT's batch and strides, the kernels' element counts: 32-bit.
  if (double(b.largest()) * t * t >= double(INT_MAX) || double(b.largest()) * g.bins() >= double(INT_MAX))
    return Status::no("more than 2^31 tile elements in one transform batch");
  const double bytes = 4.0 * double(b.largest()) * t * t + 8.0 * double(b.sum()) * g.bins();
  const double bound = gemm_workspace_bound(dev);
  if (bytes > bound)
    return Status::no("workspace (tiles and spectra) " + std::to_string(int64_t(bytes / (1 << 20))) + " MiB > " +
                      std::to_string(int64_t(bound / (1 << 20))) + " MiB (min of 2 GiB and a quarter of device memory)");
  return Status::yes();
}

Cost FftLayerVariant::cost(const Problem& p, const Config& c) const {
  const LayerShape l(p);
  const int t = fft_tile(c);
  const FftLayerTiles g = fft_layer_tiles(pass_, t, l);
  const FftBatches b = fft_batches(g, l);
  const double bins = g.bins(), points = double(t) * t;
  // A real t x t transform: about half a complex one's 5 N log2 N. A complex multiply-add: 8 flops, about 6 in
  // Gauss's form (a quarter of the products traded for additions on the operands).
  const double transform_flops = 2.5 * points * std::log2(points) * double(b.sum());
  const double macs = pass_ == FftPass::bwd_filter ? double(l.c) * l.k * g.columns
                      : pass_ == FftPass::forward  ? double(l.k) * g.columns * l.c
                                                   : double(l.c) * g.columns * l.k;
  const double per_product = c.at("gemm").get<std::string>() == kGemmThreeMultiply ? 6.0 : 8.0;
  const double flops = transform_flops + per_product * macs * bins;
  // Each transform's tiles written and read once, each spectrum written and read once, and the operands.
  const double bytes = operand_bytes(p) + 8.0 * points * double(b.sum()) + 16.0 * bins * double(b.sum());
  return {p.direct_flops(), flops, operand_bytes(p), bytes};
}

// cuDNN's FFT algorithms' bound (harness/cudnn.cpp), or the long-sum bound where that is wider.
Tolerance FftLayerVariant::tolerance(const Problem& p, const Config&) const {
  const LayerShape l(p);
  const int64_t terms = pass_ == FftPass::forward    ? forward_sum_length(l)
                        : pass_ == FftPass::bwd_data ? bwd_data_sum_length(l)
                                                     : bwd_filter_sum_length(l);
  const Tolerance direct = layer_tolerance(terms, kMathFp32);
  return {std::max(direct.rel_l2, kSpectralFp32Tolerance.rel_l2), std::max(direct.max_rel, kSpectralFp32Tolerance.max_rel)};
}

std::unique_ptr<Plan> FftLayerVariant::prepare(const Problem& p, const Config& c, const DeviceInfo&, JitCache&) const {
  return std::make_unique<FftLayerPlan>(p, pass_, fft_tile(c), c.at("gemm").get<std::string>() == kGemmThreeMultiply);
}

}  // namespace convtune
