// A layer_bwd_data plug-in as `convtune new-variant layer_bwd_data <name>` writes it: one thread per input-gradient
// element (grid-stride), NCHW, the adjoint of layer_fwd's zero-padded cross-correlation (the family's convention,
// cuDNN's backward-data):
//   dx[n,c,y,x] = sum over k, i, j of dy[n,k,p,q] * filter[k,c,i,j] where p*U = y + PAD_H - i and
//                 q*V = x + PAD_W - j exactly, with 0 <= p < P and 0 <= q < Q (other taps read no output).
// Compile-time, from the manifest's "defines": R, S, PAD_H, PAD_W, U, V, THREADS.

// Arguments: the family's operands in its order (dy, filter, dx), then the manifest's "scalars" (n, c, h, w, k, p, q).
extern "C" __global__ void __launch_bounds__(THREADS)
layer_bwd_data_plugin(const float* __restrict__ dy, const float* __restrict__ filter, float* __restrict__ dx, int n,
                      int c, int h, int w, int k, int p, int q) {
  const long long inputs = (long long)n * c * h * w;
  for (long long o = blockIdx.x * (long long)THREADS + threadIdx.x; o < inputs; o += (long long)gridDim.x * THREADS) {
    const int xi = int(o % w), yi = int(o / w % h), ci = int(o / ((long long)h * w) % c);
    const int ni = int(o / ((long long)c * h * w));
    float acc = 0.0f;
    for (int ki = 0; ki < k; ++ki) {
      const float* dyk = dy + ((long long)ni * k + ki) * p * q;
      const float* fk = filter + ((long long)ki * c + ci) * R * S;
#pragma unroll
      for (int i = 0; i < R; ++i) {
        const int row = yi + PAD_H - i;  // = pi * U if output row pi read this pixel through tap row i
        if (row < 0 || row % U != 0 || row / U >= p) continue;
#pragma unroll
        for (int j = 0; j < S; ++j) {
          const int col = xi + PAD_W - j;
          if (col < 0 || col % V != 0 || col / V >= q) continue;
          acc += dyk[(long long)(row / U) * q + col / V] * __ldg(fk + i * S + j);
        }
      }
    }
    dx[o] = acc;
  }
}
