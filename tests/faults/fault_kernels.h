// Kernels that misbehave on purpose, for conv2d.test_fault (fault_variant.cpp).
#pragma once
#include <cuda_runtime.h>

namespace convtune::test {

// hang: never returns; otherwise writes to an illegal address.
void launch_fault(bool hang, float* out, cudaStream_t stream);

}  // namespace convtune::test
