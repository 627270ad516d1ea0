#include "tests/faults/fault_kernels.h"

#include "harness/error.h"

namespace convtune::test {
namespace {

// Poisons the CUDA context: the record is a runtime_error and the worker that ran it is replaced.
__global__ void write_illegal_address(float* out) { *(volatile float*)(out - (1ll << 40)) = 1.0f; }

// Waits for a value nobody writes (the output is NaN-poisoned): volatile global loads are side effects,
// so the compiler cannot drop the loop as it may drop an empty one.
__global__ void wait_forever(const float* out) {
  volatile const int* flag = reinterpret_cast<volatile const int*>(out);
  while (flag[0] != 0x12345678) {
  }
}

}  // namespace

void launch_fault(bool hang, float* out, cudaStream_t stream) {
  if (hang) wait_forever<<<1, 32, 0, stream>>>(out);
  else write_illegal_address<<<1, 32, 0, stream>>>(out);
  CT_CHECK_LAUNCH();
}

}  // namespace convtune::test
