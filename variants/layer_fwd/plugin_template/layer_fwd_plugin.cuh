// A layer_fwd plug-in as `convtune new-variant layer_fwd <name>` writes it: one thread per output (grid-stride),
// NCHW, cross-correlation with zero padding (the family's convention, cuDNN's):
//   y[n,k,p,q] = sum over c, i, j of x[n,c,p*U-PAD_H+i,q*V-PAD_W+j] * filter[k,c,i,j], then the activation
// ACT (the family's dim relu: 0 none, 1 ReLU, 2 sigmoid, 3 tanh).
// No bias: the manifest refuses bias = 1 (to add it, list the "bias" operand before "y" and add bias[k]).
// Compile-time, from the manifest's "defines": R, S, PAD_H, PAD_W, U, V, ACT, THREADS.

__device__ __forceinline__ float activation(float v) {
  if (ACT == 1) return v < 0.0f ? 0.0f : v;
  if (ACT == 2) return 1.0f / (1.0f + expf(-v));
  if (ACT == 3) return tanhf(v);
  return v;
}

// Arguments: the family's operands in its order (x, filter, y), then the manifest's "scalars" (n, c, h, w, k, p, q).
extern "C" __global__ void __launch_bounds__(THREADS)
layer_fwd_plugin(const float* __restrict__ x, const float* __restrict__ filter, float* __restrict__ y, int n, int c,
                 int h, int w, int k, int p, int q) {
  const long long outputs = (long long)n * k * p * q;
  for (long long o = blockIdx.x * (long long)THREADS + threadIdx.x; o < outputs; o += (long long)gridDim.x * THREADS) {
    const int qi = int(o % q), pi = int(o / q % p), ki = int(o / ((long long)p * q) % k);
    const int ni = int(o / ((long long)k * p * q));
    float acc = 0.0f;
    for (int ci = 0; ci < c; ++ci) {
      const float* xc = x + ((long long)ni * c + ci) * h * w;
      const float* fc = filter + ((long long)ki * c + ci) * R * S;
#pragma unroll
      for (int i = 0; i < R; ++i) {
        const int yy = pi * U - PAD_H + i;
        if (yy < 0 || yy >= h) continue;
#pragma unroll
        for (int j = 0; j < S; ++j) {
          const int xx = qi * V - PAD_W + j;
          if (xx >= 0 && xx < w) acc += xc[(long long)yy * w + xx] * __ldg(fc + i * S + j);
        }
      }
    }
    y[o] = activation(acc);
  }
}
