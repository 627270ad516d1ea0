// layer_fwd.im2col_gemm, the ConvNets seed's unrolling: im2col per chunk of images, then one cuBLAS
// strided-batched SGEMM per chunk, Y_b = W COL_b; bias and activation in an epilogue after the batch. Also the
// machinery the three im2col/GEMM variants share (layer_gemm.h).
#include "variants/layer_common/layer_gemm.h"

#include <algorithm>

#include "harness/error.h"
#include "variants/layer_fwd/layer_fwd.h"

namespace convtune {

// ---- shared -----------------------------------------------------------------------------------------

LayerColShape col_shape(const LayerShape& l) {
  return {int(l.c), int(l.h), int(l.w), int(l.r), int(l.s), int(l.p), int(l.q), int(l.pad_h), int(l.pad_w),
          int(l.u), int(l.v)};
}

int64_t col_elements_per_image(const LayerShape& l) { return l.c * l.r * l.s * l.p * l.q; }

ParamSpace gemm_space(const Problem& p) {
  const int64_t n = p.at("n");
  std::vector<json> chunks;  // more than n would only repeat n
  for (int chunk : {1, 2, 4, 8, 16, 32})
    if (chunk < n) chunks.push_back(chunk);
  if (n <= 32) chunks.push_back(n);
  return ParamSpace()
      .add("chunk", "images per im2col pass and batched GEMM (the col buffer holds this many)", chunks)
      .add("math", "cuBLAS compute type: fp32 (strict), tf32 (tensor cores, precision = 1 only)",
           {kMathFp32, kMathTf32});
}

int chunk_images(const Config& c) { return c.at("chunk").get<int>(); }

static std::string mebibytes(double bytes) { return std::to_string(int64_t(bytes / double(1 << 20))) + " MiB"; }

Status gemm_can_implement(const Problem& p, const Config& c, const DeviceInfo& dev, int64_t extra_workspace_floats) {
  const std::string math = c.at("math").get<std::string>();
  if (math != kMathFp32 && math != kMathTf32) return Status::no("math '" + math + "': cuBLAS SGEMM offers fp32, tf32");
  if (Status allowed = math_allowed(p, math); !allowed) return allowed;
  const LayerShape l(p);
  const int chunk = chunk_images(c);
  if (chunk < 1 || chunk > l.n)
    return Status::no("chunk " + std::to_string(chunk) + " outside 1..n = " + std::to_string(l.n));
  const double bytes = 4.0 * (double(chunk) * double(col_elements_per_image(l)) + double(extra_workspace_floats));
  const double bound = gemm_workspace_bound(dev);
  if (bytes > bound)
    return Status::no("workspace (col buffer of " + std::to_string(chunk) + " images) " + mebibytes(bytes) + " > " +
                      mebibytes(bound) + " (min of 2 GiB and a quarter of device memory)");
  return Status::yes();
}

Cost gemm_cost(const Problem& p, double extra_bytes) {
  const LayerShape l(p);
  const double col_elements = double(l.n) * double(col_elements_per_image(l));
  const double gemm_flops = 2.0 * double(l.n) * double(l.k) * double(l.c * l.r * l.s) * double(l.p * l.q);
  const double operands = operand_bytes(p);
  return {p.direct_flops(), gemm_flops, operands, operands + 8.0 * col_elements + extra_bytes};
}

json gemm_details(const LayerShape& l, const Config& c) {
  return {{"math", c.at("math")},
          {"expansion", double(col_elements_per_image(l)) / double(l.c * l.h * l.w)},
          {"chunk", chunk_images(c)},
          {"deterministic", true}};  // fixed-order kernels; cuBLAS on one stream is run-to-run reproducible
}

std::vector<std::string> gemm_defines(const LayerShape& l) {
  std::vector<std::string> d = layer_defines(l);
  d.push_back(define("IM2COL_THREADS", kGemmHelperThreads));
  d.push_back(define("COL2IM_THREADS", kGemmHelperThreads));
  return d;
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cuda("cublas", cublasGetStatusString(status), call, __FILE__, __LINE__);
}

cublasHandle_t make_gemm_handle() {
  cublasHandle_t handle = nullptr;
  check_cublas(cublasCreate(&handle), "cublasCreate");
  const cublasStatus_t status = cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
  if (status != CUBLAS_STATUS_SUCCESS) cublasDestroy(handle);
  check_cublas(status, "cublasSetMathMode");
  return handle;
}

ChunkedGemmPlan::ChunkedGemmPlan(const Problem& p, const Config& c, std::shared_ptr<Module> module,
                                 int64_t extra_workspace_floats)
    : l_(p), chunk_(chunk_images(c)), pq_(int(l_.p * l_.q)), crs_(int(l_.c * l_.r * l_.s)), k_(int(l_.k)), module_(std::move(module)),
      compute_(c.at("math") == kMathTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F),
      col_floats_(chunk_ * col_elements_per_image(l_)),
      workspace_(size_t(col_floats_ + extra_workspace_floats)), details_(gemm_details(l_, c)) {
  handle_ = make_gemm_handle();
}

ChunkedGemmPlan::~ChunkedGemmPlan() {
  if (handle_) cublasDestroy(handle_);
}

void ChunkedGemmPlan::run(cudaStream_t stream) {
  check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
  for (int64_t first = 0; first < l_.n; first += chunk_)
    run_chunk(int(first), int(std::min<int64_t>(chunk_, l_.n - first)), stream);
  finish(stream);
}

CUfunction ChunkedGemmPlan::kernel(const char* name) {
  CUfunction fn = module_->function(name);
  if (!have_attrs_) attrs_ = kernel_attributes(fn, kGemmHelperThreads, 0);
  have_attrs_ = true;
  return fn;
}

void ChunkedGemmPlan::launch_items(CUfunction fn, int64_t items, cudaStream_t stream, void** args) const {
  launch(fn, dim3(unsigned(ceil_div(items, kGemmHelperThreads))), dim3(kGemmHelperThreads), 0, stream, args);
}

void strided_gemm(cublasHandle_t handle, cublasComputeType_t compute, const StridedGemm& g) {
  const float alpha = 1.0f;
  check_cublas(cublasGemmStridedBatchedEx(handle, g.trans_a, g.trans_b, g.m, g.n, g.k, &alpha, g.a, CUDA_R_32F,
                                          g.lda, g.stride_a, g.b, CUDA_R_32F, g.ldb, g.stride_b, &g.beta, g.c,
                                          CUDA_R_32F, g.ldc, g.stride_c, g.batch, compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
}

void ChunkedGemmPlan::gemm(const StridedGemm& g) const { strided_gemm(handle_, compute_, g); }

void ChunkedGemmPlan::im2col(CUfunction fn, int first_image, int images, cudaStream_t stream) const {
  const float* x = operand(0);
  float* col_buffer = col();
  void* args[] = {&x, &col_buffer, &first_image, &images};
  launch_items(fn, int64_t(images) * l_.c * l_.p * l_.q, stream, args);
}

Status Im2colGemmVariant::can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const {
  if (p.family != family()) return Status::no("not a " + family() + " problem");
  return gemm_can_implement(p, c, dev, extra_workspace_floats(LayerShape(p), c));
}

Tolerance Im2colGemmVariant::tolerance(const Problem& p, const Config& c) const {
  return layer_tolerance(sum_length(LayerShape(p)), c.at("math").get<std::string>());
}

std::vector<JitProgram> Im2colGemmVariant::programs(const Problem& p, const Config&) const {
  JitProgram program{source(), gemm_defines(LayerShape(p))};
  for (std::string& d : extra_defines(p)) program.options.push_back(std::move(d));
  return {program};
}

// ---- layer_fwd.im2col_gemm --------------------------------------------------------------------------

}  // namespace convtune
