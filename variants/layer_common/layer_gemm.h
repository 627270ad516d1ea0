// What the im2col + cuBLAS GEMM variants of the three layer passes share (layer_fwd.im2col_gemm,
// layer_bwd_data.gemm_col2im, layer_bwd_filter.im2col_gemm): the chunk and math parameters, the col buffer's
// size and its bound, the cost, and a plan that walks the batch chunk by chunk with one cuBLAS handle.
// The column layout is variants/layer_common/kernels/layer_im2col_index.cuh's. Implemented in im2col_gemm.cpp.
#pragma once
#include <cublas_v2.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "harness/cuda_raii.h"
#include "harness/variant.h"
#include "variants/layer_common/kernels/layer_im2col_index.cuh"
#include "variants/layer_common/layer_variant.h"

namespace convtune {

inline constexpr int kGemmHelperThreads = 256;  // im2col, col2im and epilogue blocks: all memory-bound
// The col buffer's bound, beside a quarter of the device's memory: int32 column indices stay far from overflow.
inline constexpr double kMaxGemmWorkspaceBytes = 2.0 * double(1 << 30);
// The workspace a GEMM-based layer variant may take: kMaxGemmWorkspaceBytes, or a quarter of the device's memory.
inline double gemm_workspace_bound(const DeviceInfo& dev) {
  return std::min(kMaxGemmWorkspaceBytes, double(dev.global_mem_bytes) / 4);
}

LayerColShape col_shape(const LayerShape& l);
int64_t col_elements_per_image(const LayerShape& l);  // C*R*S * P*Q

// chunk: images per im2col + batched GEMM (the powers of two below n, and n itself up to 32); math.
ParamSpace gemm_space(const Problem& p);
int chunk_images(const Config& c);
// Math allowed, chunk within 1..n, col buffer + `extra_workspace_floats` within the bound.
Status gemm_can_implement(const Problem& p, const Config& c, const DeviceInfo& dev, int64_t extra_workspace_floats);
// flops as the direct count (the GEMMs multiply the padding taps' zeros too: the same number), bytes_min the
// operands, bytes_model adds the col buffer written and read once (8 bytes per element) and `extra_bytes`.
Cost gemm_cost(const Problem& p, double extra_bytes);
json gemm_details(const LayerShape& l, const Config& c);
// layer_defines plus the helper kernels' block size (IM2COL_THREADS, COL2IM_THREADS).
std::vector<std::string> gemm_defines(const LayerShape& l);

// One strided-batched SGEMM in cuBLAS's column-major terms: C_b = op(A_b) op(B_b) + beta C_b, b < batch.
struct StridedGemm {
  cublasOperation_t trans_a, trans_b;
  int m, n, k;
  const float* a;
  int lda;
  long long stride_a;
  const float* b;
  int ldb;
  long long stride_b;
  float* c;
  int ldc;
  long long stride_c;
  int batch;
  float beta;
};

// Throws CudaError naming `call` unless `status` is success.
void check_cublas(cublasStatus_t status, const char* call);
// A cuBLAS handle in default math: with CUBLAS_COMPUTE_32F no TF32 runs (tf32 asks for it through the
// compute type alone). The caller destroys it.
cublasHandle_t make_gemm_handle();
// One strided-batched GEMM on fp32 data with the given compute type.
void strided_gemm(cublasHandle_t handle, cublasComputeType_t compute, const StridedGemm& g);

// Walks the batch in chunks of `chunk` images (the last one shorter); the variant's run_chunk does one
// chunk's kernels and GEMM, finish what follows the whole batch.
class ChunkedGemmPlan : public Plan {
 public:
  ChunkedGemmPlan(const Problem& p, const Config& c, std::shared_ptr<Module> module, int64_t extra_workspace_floats);
  ~ChunkedGemmPlan() override;
  ChunkedGemmPlan(const ChunkedGemmPlan&) = delete;
  ChunkedGemmPlan& operator=(const ChunkedGemmPlan&) = delete;

  void bind(const Operands& ops, cudaStream_t) override { operands_ = ops.data; }
  void run(cudaStream_t stream) override;
  KernelAttributes attributes() const override { return attrs_; }  // of the first kernel found
  size_t workspace_bytes() const override { return workspace_.bytes(); }
  json details() const override { return details_; }

 protected:
  virtual void run_chunk(int first_image, int images, cudaStream_t stream) = 0;
  virtual void finish(cudaStream_t) {}

  CUfunction kernel(const char* name);  // records the first one's attributes
  // One thread per item, kGemmHelperThreads per block; `args` point at the kernel's arguments.
  void launch_items(CUfunction fn, int64_t items, cudaStream_t stream, void** args) const;
  void gemm(const StridedGemm& g) const;
  // layer_im2col (`fn`, from the plan's module) on images [first_image, first_image + images) into col().
  void im2col(CUfunction fn, int first_image, int images, cudaStream_t stream) const;

  float* operand(size_t i) const { return operands_.at(i); }
  float* output() const { return operands_.back(); }
  float* col() const { return workspace_.get(); }
  float* extra_workspace() const { return workspace_.get() + col_floats_; }

  const LayerShape l_;
  const int chunk_;
  const int pq_, crs_, k_;  // the GEMMs' dims: output pixels, filter taps per output map, output maps

 private:
  std::shared_ptr<Module> module_;
  cublasHandle_t handle_ = nullptr;
  cublasComputeType_t compute_;
  int64_t col_floats_;
  DeviceArray<float> workspace_;
  std::vector<float*> operands_;
  KernelAttributes attrs_;
  bool have_attrs_ = false;
  json details_;
};

// The three variants' common half: space, refusals, cost, tolerance and program; each adds its prepare.
class Im2colGemmVariant : public Variant {
 public:
  ParamSpace space(const Problem& p, const DeviceInfo&) const override { return gemm_space(p); }
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override;
  Cost cost(const Problem& p, const Config& c) const override { return gemm_cost(p, extra_bytes(p, c)); }
  Tolerance tolerance(const Problem& p, const Config& c) const override;
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override;
  int complexity() const override { return 3; }
  Math math_of(const Config& c) const override { return math_from_name(c.value("math", std::string(kMathFp32))); }

 protected:
  virtual std::string source() const = 0;
  virtual std::vector<std::string> extra_defines(const Problem&) const { return {}; }
  virtual int64_t sum_length(const LayerShape& l) const = 0;  // terms in one output's sum
  // Workspace beyond the col buffer, and traffic beyond the operands and the col buffer.
  virtual int64_t extra_workspace_floats(const LayerShape&, const Config&) const { return 0; }
  virtual double extra_bytes(const Problem&, const Config&) const { return 0; }
};

}  // namespace convtune
