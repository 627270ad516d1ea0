// layer_fwd.im2col_gemm, the ConvNets seed's unrolling: im2col per chunk of images, then one cuBLAS
// strided-batched SGEMM per chunk, Y_b = W COL_b; bias and activation in an epilogue kernel after the batch
// (its epilogue is always a separate kernel, so it has no `epilogue` parameter).
#include "variants/layer_common/layer_gemm.h"

#include <algorithm>

#include "harness/error.h"
#include "variants/layer_fwd/layer_fwd.h"

namespace convtune {

namespace {

class FwdIm2colGemmPlan : public ChunkedGemmPlan {
 public:
  FwdIm2colGemmPlan(const Problem& p, const Config& c, std::shared_ptr<Module> module)
      : ChunkedGemmPlan(p, c, std::move(module), 0), has_bias_(has_bias(p)) {
    im2col_ = kernel("layer_im2col");
    if (has_epilogue(p)) epilogue_ = kernel("layer_fwd_epilogue");
  }

 protected:
  void run_chunk(int first_image, int images, cudaStream_t stream) override {
    im2col(im2col_, first_image, images, stream);
    // Row-major Y_b (K x PQ) = W (K x CRS) COL_b (CRS x PQ). cuBLAS reads each row-major matrix as its
    // column-major transpose, so it computes Y_b^T (PQ x K) = COL_b^T (PQ x CRS) W^T (CRS x K), no op needed.
    gemm({CUBLAS_OP_N, CUBLAS_OP_N, pq_, k_, crs_, col(), pq_, int64_t(crs_) * pq_, operand(1), crs_, 0,
          output() + int64_t(first_image) * k_ * pq_, pq_, int64_t(k_) * pq_, images, 0.0f});
  }
  void finish(cudaStream_t stream) override {
    if (!epilogue_) return;
    float* y = output();
    const float* bias = has_bias_ ? operand(2) : nullptr;
    void* args[] = {&y, &bias};
    launch_items(epilogue_, l_.y_elements(), stream, args);
  }

 private:
  bool has_bias_;
  CUfunction im2col_ = nullptr, epilogue_ = nullptr;
};

class LayerFwdIm2colGemm : public Im2colGemmVariant {
 public:
  std::string name() const override { return "layer_fwd.im2col_gemm"; }
  std::string family() const override { return kLayerFwd; }
  std::string summary() const override {
    return "im2col per chunk of images into a reused col buffer, then a cuBLAS strided-batched SGEMM "
           "Y_b = W COL_b per chunk; bias and activation in an epilogue kernel";
  }
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo&, JitCache& jit) const override {
    return std::make_unique<FwdIm2colGemmPlan>(p, c, jit.module(programs(p, c).front()));
  }

 protected:
  std::string source() const override { return "layer_fwd_im2col_gemm.cuh"; }
  std::vector<std::string> extra_defines(const Problem& p) const override { return epilogue_defines(p); }
  int64_t sum_length(const LayerShape& l) const override { return forward_sum_length(l); }
  double extra_bytes(const Problem& p, const Config&) const override {  // the epilogue reads and writes y
    return has_epilogue(p) ? 8.0 * double(LayerShape(p).y_elements()) : 0.0;
  }
};

CONVTUNE_REGISTER_VARIANT(LayerFwdIm2colGemm);

}  // namespace
}  // namespace convtune
