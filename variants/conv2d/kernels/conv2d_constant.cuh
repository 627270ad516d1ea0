// conv2d, one thread per output, the filter in constant memory (seed 001, "Constant memory").
// Compile-time: RADIUS, BLOCK_X, BLOCK_Y.
#define FW (2 * RADIUS + 1)
__constant__ float c_filter[FW * FW];

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
conv2d_kernel(const float* __restrict__ in, const float* __restrict__, float* __restrict__ out, int h, int w) {
  in += (long long)blockIdx.z * h * w;  // image blockIdx.z of a batch (grid.z = b)
  out += (long long)blockIdx.z * h * w;
  const int col = blockIdx.x * BLOCK_X + threadIdx.x;
  const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
  if (row >= h || col >= w) return;
  float acc = 0.0f;
#pragma unroll
  for (int m = 0; m < FW; ++m) {
    const int y = row - RADIUS + m;
    if (y < 0 || y >= h) continue;
#pragma unroll
    for (int n = 0; n < FW; ++n) {
      const int x = col - RADIUS + n;
      if (x >= 0 && x < w) acc += c_filter[m * FW + n] * in[(long long)y * w + x];
    }
  }
  out[(long long)row * w + col] = acc;
}
