// Checking cuDNN calls, as harness/error.h does for CUDA: CT_CUDNN throws CudaError with cuDNN's status and its
// last detailed message; CT_CUDNN_WARN reports without throwing (for destructors). Shared by every cuDNN plan.
#pragma once
#include <cudnn.h>

#include <string>

#include "harness/error.h"

namespace convtune {

// cuDNN's last detailed message (cuDNN 9 keeps one per thread); reading it clears it, so calling this before
// a call that may be refused drops a stale message and the refusal carries its own.
std::string last_cudnn_message();
// cuDNN's status string plus its last detailed message, when it has one.
std::string cudnn_message(cudnnStatus_t s);

}  // namespace convtune

#define CT_CUDNN(call)                                                                                \
  do {                                                                                                \
    cudnnStatus_t ct_err_ = (call);                                                                   \
    if (ct_err_ != CUDNN_STATUS_SUCCESS)                                                              \
      ::convtune::throw_cuda("cudnn", ::convtune::cudnn_message(ct_err_), #call, __FILE__, __LINE__); \
  } while (0)

// For destructors: report, never throw.
#define CT_CUDNN_WARN(call)                                                                           \
  do {                                                                                                \
    cudnnStatus_t ct_err_ = (call);                                                                   \
    if (ct_err_ != CUDNN_STATUS_SUCCESS)                                                              \
      ::convtune::warn_cuda("cudnn", cudnnGetErrorString(ct_err_), #call, __FILE__, __LINE__);        \
  } while (0)
