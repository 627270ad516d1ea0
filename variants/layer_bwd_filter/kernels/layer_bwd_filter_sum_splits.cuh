// dw = the splits' partial sums [SPLITS][K*C*R*S] added in split order: deterministic, no atomics.
// Defines: the shape (K C R S), SPLITS.
extern "C" __global__ void layer_bwd_filter_sum_splits_kernel(const float*, const float*, float* __restrict__ dw,
                                                              void* workspace) {
  constexpr int kFilterElements = K * C * R * S;
  const float* partial = static_cast<const float*>(workspace);
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < kFilterElements; e += gridDim.x * blockDim.x) {
    float sum = 0.f;
    for (int split = 0; split < SPLITS; ++split) sum += partial[size_t(split) * kFilterElements + e];
    dw[e] = sum;
  }
}
