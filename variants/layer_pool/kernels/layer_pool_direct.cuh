// layer_pool.direct: each thread computes OUTPUTS consecutive outputs along q of one output row, loading each
// input pixel under its windows once (neighbouring windows share pixels when S > V). Max ignores padding; op 1
// divides the sum by R*S, op 2 by the pixels inside the image (variants/layer_pool/layer_pool.h).
// Compile-time: the shape (layer_defines: K = C), OP, OUTPUTS, THREADS; the column loops unroll fully, so
// which window a pixel feeds is decided at compile time.
#define POOL_Q_GROUPS ((Q + OUTPUTS - 1) / OUTPUTS)
#define POOL_SPAN ((OUTPUTS - 1) * V + S)  // input columns under one thread's windows

__device__ __forceinline__ float pool_extent_inside(int first, int taps, int extent) {
  const int end = first + taps < extent ? first + taps : extent;
  return float(end - (first > 0 ? first : 0));
}

extern "C" __global__ void __launch_bounds__(THREADS)
layer_pool_direct(const float* __restrict__ x, float* __restrict__ y, void* /*workspace*/) {
  const int t = blockIdx.x * THREADS + threadIdx.x;
  if (t >= N * C * P * POOL_Q_GROUPS) return;
  const int q0 = t % POOL_Q_GROUPS * OUTPUTS, row = t / POOL_Q_GROUPS;  // row = (n*C + c)*P + p
  const int pi = row % P, plane = row / P;
  const float* image = x + (long long)plane * H * W;
  const int top = pi * U - PAD_H, left = q0 * V - PAD_W;
  float acc[OUTPUTS];
#pragma unroll
  for (int o = 0; o < OUTPUTS; ++o) acc[o] = OP == 0 ? __int_as_float(0xff800000) : 0.0f;  // -inf for max
  for (int i = 0; i < R; ++i) {
    const int yi = top + i;
    if (yi < 0 || yi >= H) continue;
    const float* line = image + yi * W;
#pragma unroll
    for (int e = 0; e < POOL_SPAN; ++e) {
      const int xi = left + e;
      if (xi < 0 || xi >= W) continue;
      const float value = __ldg(line + xi);
#pragma unroll
      for (int o = 0; o < OUTPUTS; ++o) {
        const int j = e - o * V;
        if (j < 0 || j >= S) continue;
        acc[o] = OP == 0 ? (value > acc[o] ? value : acc[o]) : acc[o] + value;
      }
    }
  }
#pragma unroll
  for (int o = 0; o < OUTPUTS; ++o) {
    if (q0 + o >= Q) break;
    float result = acc[o];
    if (OP == 1) result /= float(R * S);
    if (OP == 2) result /= pool_extent_inside(top, R, H) * pool_extent_inside(left + o * V, S, W);
    y[(long long)row * Q + q0 + o] = result;
  }
}
