// conv2d with shared-memory tiles, block = input tile (seed 001 "Shared Memory", seed 002): every thread
// loads one input element (halo included); the inner OUT_X x OUT_Y threads then compute one output each.
// Compile-time: RADIUS, OUT_X, OUT_Y.
#define FW (2 * RADIUS + 1)
#define IN_X (OUT_X + 2 * RADIUS)
#define IN_Y (OUT_Y + 2 * RADIUS)
__constant__ float c_filter[FW * FW];

extern "C" __global__ void __launch_bounds__(IN_X * IN_Y)
conv2d_kernel(const float* __restrict__ in, const float* __restrict__, float* __restrict__ out, int h, int w) {
  in += (long long)blockIdx.z * h * w;  // image blockIdx.z of a batch (grid.z = b)
  out += (long long)blockIdx.z * h * w;
  __shared__ float tile[IN_Y][IN_X];
  const int col = blockIdx.x * OUT_X + threadIdx.x - RADIUS;
  const int row = blockIdx.y * OUT_Y + threadIdx.y - RADIUS;
  tile[threadIdx.y][threadIdx.x] =
      (row >= 0 && row < h && col >= 0 && col < w) ? in[(long long)row * w + col] : 0.0f;
  __syncthreads();
  const int tc = threadIdx.x - RADIUS;
  const int tr = threadIdx.y - RADIUS;
  if (tc < 0 || tc >= OUT_X || tr < 0 || tr >= OUT_Y || row >= h || col >= w) return;
  float acc = 0.0f;
#pragma unroll
  for (int m = 0; m < FW; ++m) {
#pragma unroll
    for (int n = 0; n < FW; ++n) acc += c_filter[m * FW + n] * tile[tr + m][tc + n];
  }
  out[(long long)row * w + col] = acc;
}
