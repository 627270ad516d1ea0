// A conv1d plug-in as `convtune new-variant conv1d <name>` writes it: one thread per output (grid-stride).
// y[i] = sum_j x[k - j] * h[j] with k = i (full, mode 1) or i + m - 1 (valid, mode 0): the linear convolution
// of the family (the filter flipped, as numpy.convolve).
// Compile-time, from the manifest's "defines": THREADS.

// Arguments: the family's operands in its order (signal, filter, output), then the manifest's "scalars"
// (n, m, mode).
extern "C" __global__ void __launch_bounds__(THREADS)
conv1d_plugin(const float* __restrict__ x, const float* __restrict__ filter, float* __restrict__ y, int n, int m,
              int full) {
  const long long outputs = full ? (long long)n + m - 1 : (long long)n - m + 1;
  const long long first = full ? 0 : m - 1;  // output 0's index in the full convolution
  for (long long i = blockIdx.x * (long long)THREADS + threadIdx.x; i < outputs; i += (long long)gridDim.x * THREADS) {
    const long long k = i + first;
    const long long lo = k - (n - 1) > 0 ? k - (n - 1) : 0, hi = k < m - 1 ? k : m - 1;
    float acc = 0.0f;
    for (long long j = lo; j <= hi; ++j) acc += x[k - j] * __ldg(filter + j);
    y[i] = acc;
  }
}
