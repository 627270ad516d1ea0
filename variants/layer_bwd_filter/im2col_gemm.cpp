// layer_bwd_filter.im2col_gemm: per chunk of images, im2col into the col buffer, then one cuBLAS
// strided-batched SGEMM dW_b = dY_b COL_b^T per image. With one image per chunk the GEMM accumulates into dw
// itself (beta = 1 after the first image); with more, it writes per-image partials that a kernel adds into dw
// in image order. Either way the sum's order is fixed: deterministic.
#include "variants/layer_bwd_filter/layer_bwd_filter.h"
#include "variants/layer_common/layer_gemm.h"

namespace convtune {
namespace {

// Partial filter gradients: one per image of a chunk, when a chunk holds more than one.
int64_t partial_floats(const LayerShape& l, const Config& c) {
  const int chunk = chunk_images(c);
  return chunk > 1 ? chunk * l.filter_elements() : 0;
}

class BwdFilterIm2colGemmPlan : public ChunkedGemmPlan {
 public:
  BwdFilterIm2colGemmPlan(const Problem& p, const Config& c, std::shared_ptr<Module> module)
      : ChunkedGemmPlan(p, c, std::move(module), partial_floats(LayerShape(p), c)),
        im2col_(kernel("layer_im2col")), reduce_(kernel("layer_bwd_filter_reduce")) {}

 protected:
  void run_chunk(int first_image, int images, cudaStream_t stream) override {
    im2col(im2col_, first_image, images, stream);
    // Row-major dW_b (K x CRS) = dY_b (K x PQ) COL_b^T (PQ x CRS). cuBLAS reads row-major matrices as their
    // column-major transposes: dW_b^T (CRS x K) = COL_b (CRS x PQ) dY_b^T (PQ x K), where the stored COL_b
    // reads as COL_b^T (PQ x CRS, ld PQ), hence op T on it; dW_b^T column-major is dw's KCRS layout.
    const float* dy = operand(1) + int64_t(first_image) * k_ * pq_;
    StridedGemm g{CUBLAS_OP_T, CUBLAS_OP_N, crs_, k_, pq_, col(), pq_, int64_t(crs_) * pq_, dy, pq_,
                  int64_t(k_) * pq_, output(), crs_, 0, 1, first_image == 0 ? 0.0f : 1.0f};
    if (chunk_ == 1) {
      gemm(g);
      return;
    }
    float* partials = extra_workspace();
    g.c = partials;
    g.stride_c = int64_t(k_) * crs_;
    g.batch = images;
    g.beta = 0.0f;
    gemm(g);
    float* dw = output();
    int accumulate = first_image > 0;
    void* reduce_args[] = {&partials, &dw, &images, &accumulate};
    launch_items(reduce_, l_.filter_elements(), stream, reduce_args);
  }

 private:
  CUfunction im2col_, reduce_;
};

class LayerBwdFilterIm2colGemm : public Im2colGemmVariant {
 public:
  std::string name() const override { return "layer_bwd_filter.im2col_gemm"; }
  std::string family() const override { return kLayerBwdFilter; }
  std::string summary() const override {
    return "im2col per chunk of images into a reused col buffer, then a cuBLAS strided-batched SGEMM "
           "dW_b = dY_b COL_b^T per image, summed into dw in image order (deterministic)";
  }
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo&, JitCache& jit) const override {
    return std::make_unique<BwdFilterIm2colGemmPlan>(p, c, jit.module(programs(p, c).front()));
  }

 protected:
  std::string source() const override { return "layer_bwd_filter_im2col_gemm.cuh"; }
  int64_t sum_length(const LayerShape& l) const override { return bwd_filter_sum_length(l); }
  int64_t extra_workspace_floats(const LayerShape& l, const Config& c) const override { return partial_floats(l, c); }
  // chunk 1: the GEMM reads dw back for every image after the first. Otherwise the partials are written and
  // read once, and the reduce reads dw back for every chunk after the first. (dw's last write is in bytes_min.)
  double extra_bytes(const Problem& p, const Config& c) const override {
    const LayerShape l(p);
    const double filter = double(l.filter_elements());
    if (chunk_images(c) == 1) return 8.0 * filter * double(l.n - 1);
    const double chunks = double(ceil_div(l.n, chunk_images(c)));
    return 8.0 * filter * double(l.n) + 8.0 * filter * (chunks - 1);
  }
};

CONVTUNE_REGISTER_VARIANT(LayerBwdFilterIm2colGemm);

}  // namespace
}  // namespace convtune
