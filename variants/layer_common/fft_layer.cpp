#include "variants/layer_common/fft_layer.h"

#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "harness/cuda_raii.h"
#include "variants/layer_common/fft_layer_kernels.h"
#include "variants/layer_common/layer_epilogue.h"
#include "variants/layer_common/layer_gemm.h"
#include "variants/layer_common/layer_variant.h"

namespace convtune {
namespace {

int fft_tile(const Config& c) { return c.at("tile").get<int>(); }

int fft_max_taps(const LayerShape& l) { return int(std::max(l.r, l.s)); }

// A tile yields at least as many outputs along each axis as the filter has taps.
bool fft_tile_fits(int t, const LayerShape& l) { return t >= 2 * fft_max_taps(l) - 1; }

class FftLayerPlan : public Plan {
 public:
  FftLayerPlan(const Problem& p, LayerPass pass, int t)
      : l_(p), g_(fft_layer_tiles(pass, t, l_)), batches_(fft_batches(g_, l_)),
        bias_(pass == LayerPass::forward && has_bias(p)), act_(int(activation_of(p))),
        first_(size_t(batches_.first * g_.bins())), second_(size_t(batches_.second * g_.bins())),
        third_(size_t(batches_.third * g_.bins())), blas_(make_gemm_handle()) {}
  ~FftLayerPlan() override { cublasDestroy(blas_); }
  FftLayerPlan(const FftLayerPlan&) = delete;
  FftLayerPlan& operator=(const FftLayerPlan&) = delete;

  void bind(const Operands& ops, cudaStream_t) override { operands_ = ops.data; }

  void run(cudaStream_t stream) override {
    check_cublas(cublasSetStream(blas_, stream), "cublasSetStream");
    const int n = int(l_.n), c = int(l_.c), h = int(l_.h), w = int(l_.w), k = int(l_.k), r = int(l_.r), s = int(l_.s);
    const int p = int(l_.p), q = int(l_.q), t = g_.t;
    fft_layer_spectra(operands_.at(0), first_.get(),
                      fft_input_gather(g_, n, h, w, r, s, int(l_.pad_h), int(l_.pad_w), p, q), stream);
    const bool filter_gradient = g_.pass == LayerPass::bwd_filter;
    fft_layer_spectra(operands_.at(1), second_.get(),
                      filter_gradient ? fft_gradient_gather(g_, n, k, p, q) : fft_filter_gather(k, c, r, s, t), stream);
    multiply();
    const float scale = float(1.0 / (double(t) * t));
    const float* bias = bias_ ? operands_.at(2) : nullptr;
    fft_layer_outputs(third_.get(), bias, operands_.back(),
                      filter_gradient ? fft_filter_crop(k, c, r, s, t) : fft_output_scatter(g_, n, h, w, r, s, p, q), scale,
                      filter_gradient ? 0 : act_, stream);
  }

  size_t workspace_bytes() const override { return first_.bytes() + second_.bytes() + third_.bytes(); }
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
    const cuComplex *first = first_.get(), *second = second_.get();
    cuComplex* third = third_.get();
    switch (g_.pass) {
      case LayerPass::forward:  // Y (k x cols) = W^H, W being c x k, times X (c x cols)
        check_cublas(cublasCgemmStridedBatched(blas_, CUBLAS_OP_C, CUBLAS_OP_N, k, cols, c, &one, second, c, int64_t(k) * c, first, c,
                              int64_t(c) * cols, &zero, third, k, int64_t(k) * cols, bins),
                         "cgemm (forward)");
        break;
      case LayerPass::bwd_data:  // DX (c x cols) = W (c x k) DY (k x cols)
        check_cublas(cublasCgemmStridedBatched(blas_, CUBLAS_OP_N, CUBLAS_OP_N, c, cols, k, &one, second, c, int64_t(k) * c, first, k,
                              int64_t(k) * cols, &zero, third, c, int64_t(c) * cols, bins),
                         "cgemm (backward-data)");
        break;
      case LayerPass::bwd_filter:  // DW (c x k) = X (c x cols) DY^H, DY being k x cols
        check_cublas(cublasCgemmStridedBatched(blas_, CUBLAS_OP_N, CUBLAS_OP_C, c, k, cols, &one, first, c, int64_t(c) * cols, second, k,
                              int64_t(k) * cols, &zero, third, c, int64_t(k) * c, bins),
                         "cgemm (backward-filter)");
        break;
    }
  }

  const LayerShape l_;
  const FftLayerTiles g_;
  const FftBatches batches_;
  const bool bias_;
  const int act_;
  DeviceArray<cuComplex> first_, second_, third_;
  cublasHandle_t blas_;  // default math: no TF32
  std::vector<float*> operands_;
};

}  // namespace

FftLayerTiles fft_layer_tiles(LayerPass pass, int t, const LayerShape& l) {
  return fft_layer_tiles(pass, t, int(l.n), int(l.c), int(l.h), int(l.w), int(l.k), int(l.r), int(l.s), int(l.p),
                         int(l.q));
}

int64_t FftBatches::largest() const { return std::max({first, second, third}); }

FftBatches fft_batches(const FftLayerTiles& g, const LayerShape& l) {
  const int64_t cols = g.columns, filters = l.k * l.c;
  if (g.pass == LayerPass::bwd_filter) return {l.c * cols, l.k * cols, filters};
  return {g.in_maps * cols, filters, g.out_maps * cols};
}

std::string FftLayerVariant::summary() const {
  const bool filter = pass_ == LayerPass::bwd_filter;
  return std::string("tiled FFT ") + layer_pass_name(pass_) + " (stride 1, 3 to 16 taps): t x t tile transforms of " +
         (filter ? "x and of dy's blocks" : pass_ == LayerPass::forward ? "x and of the filters (every call)"
                                                                      : "dy and of the filters (every call)") +
         " (the gather fused in), one strict-fp32 complex GEMM per frequency bin (all bins in one cuBLAS call), inverse "
         "transforms that write the outputs" +
         (pass_ == LayerPass::forward ? " with the bias and activation" : "");
}

ParamSpace FftLayerVariant::space(const Problem& p, const DeviceInfo&) const {
  const LayerShape l(p);
  std::vector<json> tiles;
  for (int t : kFftLayerTransformSizes) {
    if (!fft_tile_fits(t, l)) continue;
    tiles.push_back(t);
    const FftLayerTiles g = fft_layer_tiles(pass_, t, l);
    if (g.tiles_y == 1 && g.tiles_x == 1) break;  // a larger tile only pads more
  }
  if (tiles.empty()) tiles.push_back(kFftLayerTransformSizes[2]);  // refused by can_implement, with the reason
  // (cuBLAS's cgemm3m, Gauss's three products, ran the same kernel and time as cgemm on an H200: not a parameter.)
  return ParamSpace().add("tile", "transform size t: a t x t tile gives (t - r + 1) x (t - s + 1) outputs", tiles);
}

Status FftLayerVariant::can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const {
  if (p.family != family()) return Status::no("not a " + family() + " problem");
  const LayerShape l(p);
  if (l.u != 1 || l.v != 1) return Status::no("the tiled FFT needs stride 1 (u = v = 1)");
  if (fft_max_taps(l) < 3) return Status::no("filters under 3 taps a side: the transforms cost more than they save");
  const int t = fft_tile(c);
  if (!fft_layer_transform_size(t))
    return Status::no("tile " + std::to_string(t) + " is not one of 8, 16, 32");
  if (!fft_tile_fits(t, l))
    return Status::no("tile " + std::to_string(t) + " < 2 * " + std::to_string(fft_max_taps(l)) +
                      " - 1: fewer outputs a tile than filter taps");
  const FftLayerTiles g = fft_layer_tiles(pass_, t, l);
  const FftBatches b = fft_batches(g, l);
  // cuBLAS's strides and the kernels' batch indices are 32-bit.
  if (double(b.largest()) * g.bins() >= double(INT_MAX)) return Status::no("more than 2^31 values in one spectrum buffer");
  const double bytes = 8.0 * double(b.sum()) * g.bins();
  const double bound = gemm_workspace_bound(dev);
  if (bytes > bound)
    return Status::no("workspace (spectra) " + std::to_string(int64_t(bytes / (1 << 20))) + " MiB > " +
                      std::to_string(int64_t(bound / (1 << 20))) + " MiB (min of 2 GiB and a quarter of device memory)");
  return Status::yes();
}

Cost FftLayerVariant::cost(const Problem& p, const Config& c) const {
  const LayerShape l(p);
  const int t = fft_tile(c);
  const FftLayerTiles g = fft_layer_tiles(pass_, t, l);
  const FftBatches b = fft_batches(g, l);
  const double bins = g.bins(), points = double(t) * t;
  // A real t x t transform: about half a complex one's 5 N log2 N. A complex multiply-add: 8 flops.
  const double transform_flops = 2.5 * points * std::log2(points) * double(b.sum());
  const double macs = double(l.c) * l.k * g.columns;  // a bin's GEMM in every pass: c x k x the tiles
  const double flops = transform_flops + 8.0 * macs * bins;
  // The operands (each tile transform reads its source once, halo rows from cache), each spectrum written and read once.
  const double bytes = operand_bytes(p) + 16.0 * bins * double(b.sum());
  return {p.direct_flops(), flops, operand_bytes(p), bytes};
}

// cuDNN's FFT algorithms' bound (harness/cudnn.cpp), or the long-sum bound where that is wider.
Tolerance FftLayerVariant::tolerance(const Problem& p, const Config&) const {
  const LayerShape l(p);
  const int64_t terms = pass_sum_length(pass_, l);
  const Tolerance direct = layer_tolerance(terms, kMathFp32);
  return {std::max(direct.rel_l2, kSpectralFp32Tolerance.rel_l2), std::max(direct.max_rel, kSpectralFp32Tolerance.max_rel)};
}

std::unique_ptr<Plan> FftLayerVariant::prepare(const Problem& p, const Config& c, const DeviceInfo&, JitCache&) const {
  return std::make_unique<FftLayerPlan>(p, pass_, fft_tile(c));
}

}  // namespace convtune
