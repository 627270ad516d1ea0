// Test-only kernels that misbehave on purpose, to check that a sweep survives them.
// FAULT_MODE 0: writes to an illegal address (poisons the CUDA context); 1: never returns.
extern "C" __global__ void conv2d_kernel(const float* __restrict__, const float* __restrict__, float* __restrict__ out,
                                         int, int) {
#if FAULT_MODE == 0
  *(volatile float*)(out - (1ll << 40)) = 1.0f;
#else
  // Waits for a value nobody writes (the output is NaN-poisoned): volatile global loads are side
  // effects, so the compiler cannot drop the loop as it may drop an empty one.
  volatile const int* flag = reinterpret_cast<volatile const int*>(out);
  while (flag[0] != 0x12345678) {
  }
#endif
}
