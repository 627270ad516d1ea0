// The one cuDNN adapter (cuDNN 9's legacy convolution API, NCHW fp32), for every family that calls cuDNN:
// owners of cuDNN objects (a plan whose later step throws frees what it made), every algorithm of the three
// convolution passes as parameter values, and `CudnnConvolution`, the handle and descriptors of one
// convolution with its workspace query and its call for each pass. cuDNN decides only once a handle exists
// which algorithms it supports for a shape; those it refuses become Unsupported (recorded as skipped)
// naming the algorithm and cuDNN's status.
#pragma once
#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/cuda_raii.h"
#include "harness/cudnn_status.h"
#include "harness/variant.h"

namespace convtune {

enum class CudnnPass { forward, backward_data, backward_filter };
const char* cudnn_pass_name(CudnnPass pass);  // "forward", "backward-data", "backward-filter"

// An algorithm of a pass: the parameter value (CUDNN_CONVOLUTION_<PASS>_ALGO_<NAME> in lower case, "algo_0"
// for the numbered ones so that a config string keeps it a name) and the pass's enum value.
struct CudnnAlgo {
  std::string name;
  int value;
};
const std::vector<CudnnAlgo>& cudnn_algos(CudnnPass pass);
const CudnnAlgo* find_cudnn_algo(CudnnPass pass, const std::string& name);  // null when unknown
std::string cudnn_algo_name(CudnnPass pass, int value);
std::string cudnn_algo_names(CudnnPass pass);  // "a, b, c": for refusals

// Owns one cuDNN object: created by the constructor, destroyed (warning, never throwing) by the destructor.
template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class CudnnOwned {
 public:
  CudnnOwned() { CT_CUDNN(Create(&object_)); }
  ~CudnnOwned() {
    if (object_) CT_CUDNN_WARN(Destroy(object_));
  }
  CudnnOwned(const CudnnOwned&) = delete;
  CudnnOwned& operator=(const CudnnOwned&) = delete;
  T get() const { return object_; }

 private:
  T object_ = nullptr;
};

using CudnnHandle = CudnnOwned<cudnnHandle_t, cudnnCreate, cudnnDestroy>;
using CudnnTensorDesc = CudnnOwned<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using CudnnFilterDesc = CudnnOwned<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using CudnnConvDesc =
    CudnnOwned<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using CudnnActivationDesc =
    CudnnOwned<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor>;
using CudnnPoolingDesc =
    CudnnOwned<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;

// A 4D fp32 NCHW tensor descriptor.
void set_nchw(cudnnTensorDescriptor_t desc, int64_t n, int64_t c, int64_t h, int64_t w);
// cuDNN's call failed: Unsupported when it refuses the case (recorded as skipped), CudaError otherwise.
[[noreturn]] void throw_cudnn_refusal(cudnnStatus_t s, const std::string& what);

// The tolerance of an algorithm: direct ones get `direct`; fft* the spectral one; winograd* a looser max error
// (its transforms amplify rounding at isolated outputs: seen 1.3e-3 of max |ref| on an H100).
Tolerance cudnn_tolerance(const Config& c, Tolerance direct);

// One convolution in cuDNN's terms: x (n, c, h, w), filter (k, c, r, s), y (n, k, p, q).
struct CudnnConvShape {
  int64_t n, c, h, w, k, r, s;
  int64_t pad_h, pad_w, stride_h, stride_w;
  int64_t p, q;              // what the problem expects (checked against cuDNN's output dims)
  bool flip_filter = false;  // CUDNN_CONVOLUTION (true convolution) instead of cross-correlation
};

// The handle and descriptors of one convolution. x, w and y name the forward's roles in every pass (for the
// backward passes dy is y, and the output dx or dw).
class CudnnConvolution {
 public:
  CudnnConvolution(const CudnnConvShape& shape, cudnnMathType_t math);
  void set_math(cudnnMathType_t math);
  // cuDNN's status for the workspace `algo` of `pass` needs under the current math.
  cudnnStatus_t workspace_query(CudnnPass pass, int algo, size_t* bytes) const;
  // The same, or Unsupported("cuDNN does not support <what> for this shape: ...").
  size_t workspace(CudnnPass pass, int algo, const std::string& what) const;
  // `bytes`, or Unsupported when they are more than the GPU has free (gemm's explicit im2col, the FFTs).
  static size_t fitting_workspace(size_t bytes, const std::string& what);
  cudnnStatus_t convolve(CudnnPass pass, int algo, float* x, float* w, float* y, DeviceArray<char>& workspace) const;

  cudnnHandle_t handle() const { return handle_.get(); }
  cudnnTensorDescriptor_t x_desc() const { return x_desc_.get(); }
  cudnnTensorDescriptor_t y_desc() const { return y_desc_.get(); }
  cudnnFilterDescriptor_t w_desc() const { return w_desc_.get(); }
  cudnnConvolutionDescriptor_t conv_desc() const { return conv_.get(); }

 private:
  CudnnHandle handle_;
  CudnnTensorDesc x_desc_, y_desc_;
  CudnnFilterDesc w_desc_;
  CudnnConvDesc conv_;
};

// The forward pass with FMA math (no TF32: every algorithm an fp32 method comparable to ours) and the
// config's "algo", as the families of single images use it (N = C = K = 1).
ParamSpace cudnn_forward_space();          // one "algo" parameter, every forward algorithm
Status cudnn_algo_known(const Config& c);  // the config names a forward algorithm
// Throws Unsupported when cuDNN refuses the algorithm for this shape or its workspace does not fit.
std::unique_ptr<Plan> make_cudnn_forward_plan(const CudnnConvShape& shape, const Config& c);

}  // namespace convtune
