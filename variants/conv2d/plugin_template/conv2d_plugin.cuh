// A conv2d plug-in as `convtune new-variant conv2d <name>` writes it: one thread per output, the filter in
// constant memory (filled from the "filter" operand before timing, as the manifest's "constants" says).
// out[y][x] = sum over i, j in [0, 2R] of filter[i][j] * in[y + i - R][x + j - R], zeros outside the image
// ('same' output, cross-correlation: the family's convention).
// Compile-time, from the manifest's "defines": RADIUS, BLOCK_X, BLOCK_Y.
#define FW (2 * RADIUS + 1)

__constant__ float c_filter[FW * FW];

// Arguments: the family's operands in its order (image, filter, output), then the manifest's "scalars" (h, w).
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
conv2d_plugin(const float* __restrict__ in, const float* __restrict__ filter, float* __restrict__ out, int h, int w) {
  in += (long long)blockIdx.z * h * w;  // image blockIdx.z of a batch (grid.z = b)
  out += (long long)blockIdx.z * h * w;
  const int col = blockIdx.x * BLOCK_X + threadIdx.x;
  const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
  if (row >= h || col >= w) return;
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i < FW; ++i) {
    const int y = row - RADIUS + i;
    if (y < 0 || y >= h) continue;
#pragma unroll
    for (int j = 0; j < FW; ++j) {
      const int x = col - RADIUS + j;
      if (x >= 0 && x < w) acc += c_filter[i * FW + j] * in[(long long)y * w + x];
    }
  }
  out[(long long)row * w + col] = acc;
}
