// Errors and CUDA checking: one macro per API family, each capturing file, line and the call's text.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <stdexcept>
#include <string>

namespace convtune {

// A CUDA, driver or NVRTC call failed.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the user (spec, CLI, problem): the message names the field and the allowed values.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A dispatch table has no candidate for a problem (no entry of its family, or none that can run on the
// device): the one input error that the runtime and the checks answer with a fallback or a skipped shape.
class NoCandidate : public InputError {
 public:
  using InputError::InputError;
};

// A kernel source did not compile; `log` holds NVRTC's output.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& what, std::string log) : std::runtime_error(what), log(std::move(log)) {}
  std::string log;
};

// A library refuses a point of the space at prepare time (e.g. a cuDNN algorithm for this shape):
// recorded as skipped with the reason, like a can_implement refusal.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_cuda(const char* api, const std::string& err, const char* call, const char* file, int line);
// After a sticky error the context is gone and every later free fails too: say it once, not per buffer.
void mark_context_lost();
void warn_cuda(const char* api, const std::string& err, const char* call, const char* file, int line);
std::string driver_error_string(CUresult r);

}  // namespace convtune

#define CT_CUDA(call)                                                                            \
  do {                                                                                           \
    cudaError_t ct_err_ = (call);                                                                \
    if (ct_err_ != cudaSuccess)                                                                  \
      ::convtune::throw_cuda("cuda", cudaGetErrorString(ct_err_), #call, __FILE__, __LINE__);    \
  } while (0)

#define CT_CU(call)                                                                              \
  do {                                                                                           \
    CUresult ct_err_ = (call);                                                                   \
    if (ct_err_ != CUDA_SUCCESS)                                                                 \
      ::convtune::throw_cuda("driver", ::convtune::driver_error_string(ct_err_), #call, __FILE__, \
                             __LINE__);                                                          \
  } while (0)

#define CT_NVRTC(call)                                                                           \
  do {                                                                                           \
    nvrtcResult ct_err_ = (call);                                                                \
    if (ct_err_ != NVRTC_SUCCESS)                                                                \
      ::convtune::throw_cuda("nvrtc", nvrtcGetErrorString(ct_err_), #call, __FILE__, __LINE__);  \
  } while (0)

// For destructors: report, never throw.
#define CT_CUDA_WARN(call)                                                                       \
  do {                                                                                           \
    cudaError_t ct_err_ = (call);                                                                \
    if (ct_err_ != cudaSuccess)                                                                  \
      ::convtune::warn_cuda("cuda", cudaGetErrorString(ct_err_), #call, __FILE__, __LINE__);     \
  } while (0)

// After every launch: catches bad launch configurations at once.
#define CT_CHECK_LAUNCH() CT_CUDA(cudaGetLastError())
