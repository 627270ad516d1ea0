// cuDNN 9's legacy API as the library baseline of the layer families: cudnnConvolutionForward,
// cudnnConvolutionBackwardData and cudnnConvolutionBackwardFilter over the whole NCHW fp32 layer (every
// algorithm of the pass a value of "algo", the math a value of "math"), and the owners of cuDNN objects that
// the pooling baseline shares. cuDNN decides only once a handle exists which algorithms it supports for a
// shape; those it refuses become Unsupported (recorded as skipped) naming the algorithm and cuDNN's status.
// The first bind of a (problem, pass, math) runs cuDNN's own find once per process and every plan records
// that pick beside its timing (details()). Here beside layer_shape.h so that every layer folder includes it
// from one place.
#pragma once
#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/cudnn_status.h"
#include "harness/variant.h"

namespace convtune {

enum class CudnnPass { forward, backward_data, backward_filter };

// An algorithm of a pass: the parameter value (CUDNN_CONVOLUTION_<PASS>_ALGO_<NAME> in lower case, "algo_0"
// for the numbered ones so that a config string keeps it a name) and the pass's enum value.
struct CudnnAlgo {
  std::string name;
  int value;
};
const std::vector<CudnnAlgo>& cudnn_layer_algos(CudnnPass pass);

// Owns one cuDNN object: created by the constructor, destroyed (warning, never throwing) by the destructor,
// so that a plan whose later step throws frees what it made.
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

// cuDNN's internals (tiling, im2col, transforms) are unknown: the direct flops and each operand once.
Cost cudnn_layer_cost(const Problem& p);

// The variant of one convolution pass: space "algo" x "math" (fp32: CUDNN_FMA_MATH; tf32: tensor-op math,
// only under precision = 1), the pass's tolerance, the cuDNN plan. Each pass's file names it and its family.
class CudnnLayerVariant : public Variant {
 public:
  bool library() const override { return true; }
  int complexity() const override { return 1; }
  ParamSpace space(const Problem& p, const DeviceInfo& dev) const override;
  // Static checks only (no GPU here): which algorithms cuDNN accepts is known only once a handle exists.
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override;
  Cost cost(const Problem& p, const Config&) const override { return cudnn_layer_cost(p); }
  Tolerance tolerance(const Problem& p, const Config& c) const override;
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo& dev, JitCache& jit) const override;

 protected:
  virtual CudnnPass pass() const = 0;
};

}  // namespace convtune
