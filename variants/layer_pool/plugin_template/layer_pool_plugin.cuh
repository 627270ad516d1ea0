// A layer_pool plug-in as `convtune new-variant layer_pool <name>` writes it: one thread per output (grid-stride),
// NCHW, window R x S, stride U/V, zero padding PAD_H/PAD_W (the family's convention, cuDNN's):
//   OP 0: y = max of the window's pixels inside the image (padding ignored)
//   OP 1: y = sum of the window's pixels / (R*S) (padded zeros count)
//   OP 2: y = sum of the window's pixels / (pixels of the window inside the image)
// Padding < window (the family checks it) puts at least one image pixel in every window.
// Compile-time, from the manifest's "defines": R, S, PAD_H, PAD_W, U, V, OP, THREADS.

// Arguments: the family's operands in its order (x, y), then the manifest's "scalars" (n, c, h, w, p, q).
extern "C" __global__ void __launch_bounds__(THREADS)
layer_pool_plugin(const float* __restrict__ x, float* __restrict__ y, int n, int c, int h, int w, int p, int q) {
  const long long outputs = (long long)n * c * p * q;
  for (long long o = blockIdx.x * (long long)THREADS + threadIdx.x; o < outputs; o += (long long)gridDim.x * THREADS) {
    const int qi = int(o % q), pi = int(o / q % p);
    const long long plane = o / ((long long)p * q);  // ni * c + ci: the (image, map) the window lies in
    const float* xc = x + plane * h * w;
    float largest = 0.0f, sum = 0.0f;
    int inside = 0;
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int yy = pi * U - PAD_H + i;
      if (yy < 0 || yy >= h) continue;
#pragma unroll
      for (int j = 0; j < S; ++j) {
        const int xx = qi * V - PAD_W + j;
        if (xx < 0 || xx >= w) continue;
        const float value = xc[(long long)yy * w + xx];
        largest = inside == 0 || value > largest ? value : largest;
        sum += value;
        ++inside;
      }
    }
    y[o] = OP == 0 ? largest : sum / float(OP == 1 ? R * S : inside);
  }
}
