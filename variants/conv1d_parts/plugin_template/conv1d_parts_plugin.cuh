// A conv1d_parts plug-in as `convtune new-variant conv1d_parts <name>` writes it: one thread per output
// (grid-stride). Output o is element i = start + o of the full linear convolution of a (n) and b (m):
//   out[o] = sum over j in [max(0, i - m + 1), min(n - 1, i)] of a[j] * b[i - j]   (the family's definition).
// Compile-time, from the manifest's "defines": THREADS.

// Arguments: the family's operands in its order (a, b, output), then the manifest's "scalars" (n, m, start, end).
extern "C" __global__ void __launch_bounds__(THREADS)
conv1d_parts_plugin(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n, int m,
                    int start, int end) {
  const long long outputs = (long long)end - start;
  for (long long o = blockIdx.x * (long long)THREADS + threadIdx.x; o < outputs; o += (long long)gridDim.x * THREADS) {
    const long long i = start + o;
    const long long lo = i - (m - 1) > 0 ? i - (m - 1) : 0, hi = i < n - 1 ? i : n - 1;
    float acc = 0.0f;
    for (long long j = lo; j <= hi; ++j) acc += a[j] * b[i - j];
    out[o] = acc;
  }
}
