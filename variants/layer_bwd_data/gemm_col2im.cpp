// layer_bwd_data.gemm_col2im: per chunk of images, one cuBLAS strided-batched SGEMM COL_b = W^T dY_b into the
// col buffer, then col2im as a gather: each dx element sums the column entries that came from it.
#include "variants/layer_bwd_data/layer_bwd_data.h"
#include "variants/layer_common/layer_gemm.h"

namespace convtune {
namespace {

class BwdDataGemmCol2imPlan : public ChunkedGemmPlan {
 public:
  BwdDataGemmCol2imPlan(const Problem& p, const Config& c, std::shared_ptr<Module> module)
      : ChunkedGemmPlan(p, c, std::move(module), 0), col2im_(kernel("layer_col2im")) {}

 protected:
  void run_chunk(int first_image, int images, cudaStream_t stream) override {
    // Row-major COL_b (CRS x PQ) = W^T (CRS x K) dY_b (K x PQ). cuBLAS reads row-major matrices as their
    // column-major transposes: COL_b^T (PQ x CRS) = dY_b^T (PQ x K) W (K x CRS), where the stored W reads as
    // W^T (CRS x K, ld CRS), hence op T on it.
    float* col_buffer = col();
    gemm({CUBLAS_OP_N, CUBLAS_OP_T, pq_, crs_, k_, operand(0) + int64_t(first_image) * k_ * pq_, pq_,
          int64_t(k_) * pq_, operand(1), crs_, 0, col_buffer, pq_, int64_t(crs_) * pq_, images, 0.0f});
    float* dx = output();
    void* args[] = {&col_buffer, &dx, &first_image, &images};
    launch_items(col2im_, int64_t(images) * l_.c * l_.h * l_.w, stream, args);
  }

 private:
  CUfunction col2im_;
};

class LayerBwdDataGemmCol2im : public Im2colGemmVariant {
 public:
  std::string name() const override { return "layer_bwd_data.gemm_col2im"; }
  std::string family() const override { return kLayerBwdData; }
  std::string summary() const override {
    return "per chunk of images a cuBLAS strided-batched SGEMM COL_b = W^T dY_b into a reused col buffer, then "
           "a col2im gather kernel (no atomics) into dx";
  }
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo&, JitCache& jit) const override {
    return std::make_unique<BwdDataGemmCol2imPlan>(p, c, jit.module(programs(p, c).front()));
  }

 protected:
  std::string source() const override { return "layer_bwd_data_col2im.cuh"; }
  int64_t sum_length(const LayerShape& l) const override { return bwd_data_sum_length(l); }
};

CONVTUNE_REGISTER_VARIANT(LayerBwdDataGemmCol2im);

}  // namespace
}  // namespace convtune
