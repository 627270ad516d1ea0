// cuFFT helpers shared by the spectral variants of every family: error checks, an owning plan handle and
// the transform sizes cuFFT handles fastest.
#pragma once
#include <cufft.h>

#include <cstdint>
#include <string>

#include "harness/error.h"

namespace convtune {

std::string cufft_message(cufftResult r);

#define CT_CUFFT(call)                                                                     \
  do {                                                                                     \
    cufftResult ct_err_ = (call);                                                          \
    if (ct_err_ != CUFFT_SUCCESS)                                                          \
      ::convtune::throw_cuda("cufft", ::convtune::cufft_message(ct_err_), #call, __FILE__, __LINE__);  \
  } while (0)

#define CT_CUFFT_WARN(call)                                                                \
  do {                                                                                     \
    cufftResult ct_err_ = (call);                                                          \
    if (ct_err_ != CUFFT_SUCCESS)                                                          \
      ::convtune::warn_cuda("cufft", ::convtune::cufft_message(ct_err_), #call, __FILE__, __LINE__);   \
  } while (0)

// An owned cuFFT plan handle (created empty; the owner makes it with cufftMakePlan*).
class CufftHandle {
 public:
  CufftHandle() { CT_CUFFT(cufftCreate(&handle_)); }
  ~CufftHandle() { CT_CUFFT_WARN(cufftDestroy(handle_)); }
  CufftHandle(const CufftHandle&) = delete;
  CufftHandle& operator=(const CufftHandle&) = delete;
  cufftHandle get() const { return handle_; }

 private:
  cufftHandle handle_ = 0;
};

int64_t next_pow2(int64_t n);
// The next n' >= n whose only prime factors are 2, 3, 5, 7: sizes cuFFT handles with its fast kernels
// (others fall back to Bluestein's algorithm, slower and less accurate).
int64_t next_smooth(int64_t n);
bool is_smooth(int64_t n);

}  // namespace convtune
