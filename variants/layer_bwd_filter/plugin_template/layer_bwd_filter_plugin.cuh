// A layer_bwd_filter plug-in as `convtune new-variant layer_bwd_filter <name>` writes it: one thread per
// filter-gradient element (grid-stride), NCHW, the adjoint of layer_fwd's zero-padded cross-correlation with
// respect to the filter (the family's convention, cuDNN's backward-filter):
//   dw[k,c,i,j] = sum over n, p, q of x[n, c, p*U - PAD_H + i, q*V - PAD_W + j] * dy[n,k,p,q], zeros outside the image.
// Few outputs, each a sum of n*P*Q terms: plain, not fast.
// Compile-time, from the manifest's "defines": R, S, PAD_H, PAD_W, U, V, THREADS.

// Arguments: the family's operands in its order (x, dy, dw), then the manifest's "scalars" (n, c, h, w, k, p, q).
extern "C" __global__ void __launch_bounds__(THREADS)
layer_bwd_filter_plugin(const float* __restrict__ x, const float* __restrict__ dy, float* __restrict__ dw, int n,
                        int c, int h, int w, int k, int p, int q) {
  const long long taps = (long long)k * c * R * S;
  for (long long o = blockIdx.x * (long long)THREADS + threadIdx.x; o < taps; o += (long long)gridDim.x * THREADS) {
    const int j = int(o % S), i = int(o / S % R), ci = int(o / (R * S) % c);
    const int ki = int(o / ((long long)c * R * S));
    float acc = 0.0f;
    for (int ni = 0; ni < n; ++ni) {
      const float* xc = x + ((long long)ni * c + ci) * h * w;
      const float* dyk = dy + ((long long)ni * k + ki) * p * q;
      for (int pi = 0; pi < p; ++pi) {
        const int yy = pi * U - PAD_H + i;
        if (yy < 0 || yy >= h) continue;
        for (int qi = 0; qi < q; ++qi) {
          const int xx = qi * V - PAD_W + j;
          if (xx >= 0 && xx < w) acc += xc[(long long)yy * w + xx] * dyk[(long long)pi * q + qi];
        }
      }
    }
    dw[o] = acc;
  }
}
