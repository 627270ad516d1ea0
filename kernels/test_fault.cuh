// Test-only kernels that misbehave on purpose, to check that a sweep survives them.
// FAULT_MODE 0: writes to an illegal address (poisons the CUDA context); 1: never returns.
extern "C" __global__ void conv2d_kernel(const float* __restrict__, const float* __restrict__, float* __restrict__ out,
                                         int, int) {
#if FAULT_MODE == 0
  *(volatile float*)(out - (1ll << 40)) = 1.0f;
#else
  volatile int spin = 1;
  while (spin) {
  }
#endif
}
