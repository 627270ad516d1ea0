// conv2d with the filter in constant memory and thread coarsening (seed 001, "Coarsening"): each thread
// computes COARSEN consecutive outputs along x (DIR_Y == 0) or y (DIR_Y == 1), keeping the input values
// they share in registers, so each input element is loaded once per thread instead of once per output.
// Compile-time: RADIUS, BLOCK_X, BLOCK_Y, COARSEN, DIR_Y.
#define FW (2 * RADIUS + 1)
__constant__ float c_filter[FW * FW];

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
conv2d_kernel(const float* __restrict__ in, const float* __restrict__, float* __restrict__ out, int h, int w) {
  in += (long long)blockIdx.z * h * w;  // image blockIdx.z of a batch (grid.z = b)
  out += (long long)blockIdx.z * h * w;
  float acc[COARSEN];
#pragma unroll
  for (int j = 0; j < COARSEN; ++j) acc[j] = 0.0f;
#if DIR_Y
  const int col = blockIdx.x * BLOCK_X + threadIdx.x;
  const int row0 = (blockIdx.y * BLOCK_Y + threadIdx.y) * COARSEN;
  if (col >= w || row0 >= h) return;
#pragma unroll
  for (int i = 0; i < COARSEN + 2 * RADIUS; ++i) {  // input rows shared by the COARSEN outputs
    const int y = row0 - RADIUS + i;
    if (y < 0 || y >= h) continue;
    float v[FW];
#pragma unroll
    for (int n = 0; n < FW; ++n) {
      const int x = col - RADIUS + n;
      v[n] = (x >= 0 && x < w) ? in[(long long)y * w + x] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < COARSEN; ++j) {
      const int m = i - j;  // filter row that input row i meets for output row0 + j
      if (m >= 0 && m < FW) {
#pragma unroll
        for (int n = 0; n < FW; ++n) acc[j] += c_filter[m * FW + n] * v[n];
      }
    }
  }
#pragma unroll
  for (int j = 0; j < COARSEN; ++j)
    if (row0 + j < h) out[(long long)(row0 + j) * w + col] = acc[j];
#else
  const int col0 = (blockIdx.x * BLOCK_X + threadIdx.x) * COARSEN;
  const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
  if (col0 >= w || row >= h) return;
#pragma unroll
  for (int m = 0; m < FW; ++m) {
    const int y = row - RADIUS + m;
    if (y < 0 || y >= h) continue;
    float v[COARSEN + 2 * RADIUS];  // the input run that the COARSEN outputs of this row share
#pragma unroll
    for (int k = 0; k < COARSEN + 2 * RADIUS; ++k) {
      const int x = col0 - RADIUS + k;
      v[k] = (x >= 0 && x < w) ? in[(long long)y * w + x] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < COARSEN; ++j) {
#pragma unroll
      for (int n = 0; n < FW; ++n) acc[j] += c_filter[m * FW + n] * v[j + n];
    }
  }
#pragma unroll
  for (int j = 0; j < COARSEN; ++j)
    if (col0 + j < w) out[(long long)row * w + col0 + j] = acc[j];
#endif
}
