// conv1d_parts.spatial: one CUDA block per interval of the parts schedule computes that interval's
// L_A + L_B - 1 values directly. For each of the interval's block pairs (i, j) it loads block i of a and
// block j of b into shared memory (coalesced, zeros past the sequences' ends) and adds their linear
// convolution to per-thread register accumulators; the gather kernel then sums the divisions.
//
// Thread t of warp w owns COARSEN consecutive outputs o = first + c, first = chunk + w*WARP_SPAN + t*COARSEN,
// and runs k (a's index) over its warp's range, keeping the COARSEN values b[o - k] in a register window that
// slides by one shared load per k: COARSEN FMAs per two shared loads (a[k] is a broadcast). The warp-uniform
// k range covers every term of its outputs; terms past a block's ends read zeros from the padding around
// both shared blocks, so the loop has no bounds checks and no divergence. b's buffer is skewed (one spare
// word every 32) because lanes read it COARSEN words apart.
// An output sums up to min(L_A, L_B) terms per pair over thousands of pairs: one float running sum drifts
// past the direct-method tolerance (its error grows like eps * terms, against a result ~ sqrt(terms)). So the
// FMAs go into short plain sums of GROUP_STEPS terms, each added to a compensated (Kahan) total: the error then
// grows like eps * sqrt(terms * GROUP_STEPS), for 4 extra flops per GROUP_STEPS FMAs.
// Compile-time: L_A, L_B, THREADS, COARSEN (a power of two <= 32).
#define INTERVAL (L_A + L_B - 1)      // values of one interval
#define STRIDE (L_A + L_B)            // floats between intervals in the output buffer
#define WARP_SPAN (32 * COARSEN)      // outputs of one warp
#define CHUNK (THREADS * COARSEN)     // outputs of the block per pass
#define A_LEN (L_A + COARSEN)         // a's block, then zeros for the k loop's last group
#define B_PAD (WARP_SPAN + COARSEN)   // zeros each side of b's block: the farthest o - k reaches
#define B_LEN (L_B + 2 * B_PAD)
#define SKEW(u) ((u) + ((u) >> 5))
#define GROUP_STEPS (COARSEN > 32 ? COARSEN : 32)  // k steps per plain sum (a multiple of COARSEN)

// sum += x, carrying the rounding error of each addition in `lost`.
__device__ __forceinline__ void add_compensated(float& sum, float& lost, float x) {
  const float y = x - lost;
  const float t = sum + y;
  lost = (t - sum) - y;
  sum = t;
}

extern "C" __global__ void __launch_bounds__(THREADS)
conv1d_parts_spatial(const float* __restrict__ a, long long n, const float* __restrict__ b, long long m,
                     const long long* __restrict__ pair_offset, const int* __restrict__ pair_a,
                     const int* __restrict__ pair_b, float* __restrict__ values) {
  __shared__ float sa[A_LEN];
  __shared__ float sb[SKEW(B_LEN) + 1];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // The padding stays zero: the per-pair loads below write only [0, L_A) of sa and [B_PAD, B_PAD + L_B) of sb.
  for (int u = tid; u < B_LEN; u += THREADS) sb[SKEW(u)] = 0.0f;
  for (int k = L_A + tid; k < A_LEN; k += THREADS) sa[k] = 0.0f;

  const long long interval = blockIdx.x;
  const long long p_begin = pair_offset[interval], p_end = pair_offset[interval + 1];
  float* out = values + interval * STRIDE;
  for (int chunk = 0; chunk < INTERVAL; chunk += CHUNK) {
    const int warp_first = chunk + warp * WARP_SPAN;
    const int first = warp_first + lane * COARSEN;
    // k with a nonzero term for some output of the warp: 0 <= k < L_A and 0 <= o - k < L_B.
    const int k_lo = max(0, warp_first - L_B + 1);
    const int k_end = min(L_A, warp_first + WARP_SPAN);
    float total[COARSEN], lost[COARSEN];
#pragma unroll
    for (int c = 0; c < COARSEN; ++c) total[c] = lost[c] = 0.0f;

    for (long long p = p_begin; p < p_end; ++p) {
      __syncthreads();  // the previous pair's blocks are no longer read
      const long long a0 = (long long)pair_a[p] * L_A, b0 = (long long)pair_b[p] * L_B;
      for (int k = tid; k < L_A; k += THREADS) sa[k] = a0 + k < n ? a[a0 + k] : 0.0f;
      for (int y = tid; y < L_B; y += THREADS) sb[SKEW(y + B_PAD)] = b0 + y < m ? b[b0 + y] : 0.0f;
      __syncthreads();
      if (k_lo >= k_end) continue;  // warp-uniform: this warp's outputs are past the interval

      float w[COARSEN];  // w[c] = b[first + c - k]
#pragma unroll
      for (int c = 0; c < COARSEN; ++c) w[c] = sb[SKEW(first + c - k_lo + B_PAD)];
      for (int group = k_lo; group < k_end; group += GROUP_STEPS) {
        float acc[COARSEN];
#pragma unroll
        for (int c = 0; c < COARSEN; ++c) acc[c] = 0.0f;
        for (int k = group; k < min(group + GROUP_STEPS, k_end); k += COARSEN) {
#pragma unroll
          for (int s = 0; s < COARSEN; ++s) {
            const float av = sa[k + s];
#pragma unroll
            for (int c = 0; c < COARSEN; ++c) acc[c] = fmaf(av, w[c], acc[c]);
#pragma unroll
            for (int c = COARSEN - 1; c > 0; --c) w[c] = w[c - 1];
            w[0] = sb[SKEW(first - (k + s) - 1 + B_PAD)];
          }
        }
#pragma unroll
        for (int c = 0; c < COARSEN; ++c) add_compensated(total[c], lost[c], acc[c]);
      }
    }
#pragma unroll
    for (int c = 0; c < COARSEN; ++c)
      if (first + c < INTERVAL) out[first + c] = total[c];
  }
}
