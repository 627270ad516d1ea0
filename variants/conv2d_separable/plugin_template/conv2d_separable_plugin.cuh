// A conv2d_separable plug-in as `convtune new-variant conv2d_separable <name>` writes it: one thread per output.
// out[y][x] = sum over m in [0, 2R] of column_taps[m] * (sum over n in [0, 2R] of row_taps[n] * in[y+m-R][x+n-R]),
// zeros outside the image ('same' output, cross-correlation with the filter column_taps[m] * row_taps[n]: the family's
// convention). The inner sum is the row pass, as the family's reference forms it, so rounding stays that of
// two short sums rather than one of (2R+1)^2 terms.
// Compile-time, from the manifest's "defines": RADIUS, BLOCK_X, BLOCK_Y.
#define FW (2 * RADIUS + 1)

// Arguments: the family's operands in its order (image, column_filter, row_filter, output), then the manifest's
// "scalars" (h, w).
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
conv2d_separable_plugin(const float* __restrict__ in, const float* __restrict__ column_taps,
                        const float* __restrict__ row_taps, float* __restrict__ out, int h, int w) {
  const int col = blockIdx.x * BLOCK_X + threadIdx.x;
  const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
  if (row >= h || col >= w) return;
  float acc = 0.0f;
  for (int m = 0; m < FW; ++m) {
    const int y = row - RADIUS + m;
    if (y < 0 || y >= h) continue;
    float row_sum = 0.0f;
    for (int n = 0; n < FW; ++n) {
      const int x = col - RADIUS + n;
      if (x >= 0 && x < w) row_sum += __ldg(row_taps + n) * in[(long long)y * w + x];
    }
    acc += __ldg(column_taps + m) * row_sum;
  }
  out[(long long)row * w + col] = acc;
}
