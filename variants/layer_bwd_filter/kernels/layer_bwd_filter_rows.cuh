// Row-staged backward-filter for few input maps, stride 1: dw[k,c,i,j] = sum over (image, p, q) of
// x[image, c, p-PAD_H+i, q-PAD_W+j] * dy[image, k, p, q].
// A block owns one input map c and MAPS output maps, with one warp per filter row i (R warps). It walks a
// contiguous range of (image, row p) pairs; while it computes on one, it stages by cp.async (16 bytes a
// copy when rows are 4-float multiples; sm_80 and later) dy's next row of its MAPS maps into the other of
// two buffers and the one x row of map c that the next row's window gains into a ring of R + 1 rows (all R
// at an image's start; zero outside the image). Then each lane takes 4 consecutive columns q per 128-column
// pass: the 4 + S - 1 x values it needs and each map's 4 dy values (one vector load) feed MAPS x S x 4
// multiply-adds into MAPS x S accumulators. (8 columns a lane measured slower on the H100: 148 registers.) The lanes' sums are warp-reduced at the end; each block writes its partial dw for its
// (c, maps) to the workspace [SPLITS][K*C*R*S] and the second kernel adds the splits in order.
// Defines: the shape (N C H W K R S PAD_H PAD_W U V P Q), MAPS, SPLITS, MIN_BLOCKS (blocks per SM the
// register count must allow; 1: the compiler's choice).

constexpr int kPasses = (Q + 127) / 128;
constexpr int kRowLength = kPasses * 128;  // dy row in shared memory, zero past Q
// Rows of 4-float multiples are copied 16 bytes at a time, others a float at a time.
constexpr int kVec = Q % 4 == 0 && W % 4 == 0 ? 4 : 1;
// x row in shared memory: column col at kXOffset + col (16-byte aligned), zero around the image's columns.
constexpr int kXOffset = 4 * ((PAD_W + 3) / 4);
constexpr int kXRowLength = 4 * ((kXOffset + kRowLength + S + 3) / 4);
constexpr int kXValues = 4 + S - 1;  // x values a lane reads: its 4 columns and the S - 1 after
// x rows live in a ring of R + 1 slots, row y of the image in slot (y + PAD_H) % kRing: the R rows the
// current output row reads plus the one being loaded for the next. Two rings alternate between images.
constexpr int kRing = R + 1;
constexpr int kDyFloats = MAPS * kRowLength, kRingFloats = kRing * kXRowLength;
constexpr int kRows = N * P;
constexpr int kRowsPerSplit = (kRows + SPLITS - 1) / SPLITS;
constexpr int kThreads = 32 * R;
constexpr int kFilterElements = K * C * R * S;
// Registers a thread may use so that MIN_BLOCKS blocks fit in a 64K-register SM (allocated 8 at a time).
constexpr int kMaxRegisters = MIN_BLOCKS > 1 ? 65536 / (MIN_BLOCKS * kThreads) / 8 * 8 : 255;

// kVec floats from global to shared memory, asynchronously; a copy of 0 bytes fills zero (its source is any
// valid address).
__device__ __forceinline__ void cp_async(float* dst, const float* src, bool valid) {
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if (kVec == 4)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(src), "r"(valid ? 16 : 0));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(to), "l"(src), "r"(valid ? 4 : 0));
}

// Starts copying dy's row p of maps k0 .. k0+MAPS-1 (those below K) into `dy_s`.
__device__ __forceinline__ void stage_dy(const float* __restrict__ dy, int image, int p, int k0, float* dy_s) {
  constexpr int kChunks = Q / kVec;
  for (int e = threadIdx.x; e < MAPS * kChunks; e += kThreads) {
    const int m = e / kChunks, q = e % kChunks * kVec;
    if (k0 + m < K) cp_async(dy_s + m * kRowLength + q, dy + ((size_t(image) * K + k0 + m) * P + p) * Q + q, true);
  }
}

// Starts copying the x rows that taps i_begin .. i_end-1 of output row p read into their ring slots,
// zero-filled outside the image's rows. Columns outside the image stay zero from the start.
__device__ __forceinline__ void stage_x(const float* __restrict__ x, int image, int c, int p, int i_begin, int i_end,
                                        float* ring) {
  constexpr int kChunks = W / kVec;
  for (int e = threadIdx.x; e < (i_end - i_begin) * kChunks; e += kThreads) {
    const int i = i_begin + e / kChunks, col = e % kChunks * kVec, y = p - PAD_H + i;
    const bool inside = y >= 0 && y < H;
    cp_async(ring + (p + i) % kRing * kXRowLength + kXOffset + col,
             inside ? x + ((size_t(image) * C + c) * H + y) * W + col : x, inside);
  }
}

extern "C" __global__ void __maxnreg__(kMaxRegisters)
    layer_bwd_filter_rows_kernel(const float* __restrict__ x, const float* __restrict__ dy, float*, void* workspace) {
  extern __shared__ float4 shared4[];
  // [2][MAPS][kRowLength] dy (one buffer per row parity), [2][kRing][kXRowLength] x (one ring per image parity)
  float* dy_buffers = reinterpret_cast<float*>(shared4);
  float* rings = dy_buffers + 2 * kDyFloats;
  for (int e = threadIdx.x; e < 2 * (kDyFloats + kRingFloats); e += kThreads) dy_buffers[e] = 0.f;
  __syncthreads();
  const int lane = threadIdx.x % 32, i = threadIdx.x / 32;
  const int c = blockIdx.y % C, k0 = (blockIdx.y / C) * MAPS;

  float acc[MAPS][S];
#pragma unroll
  for (int m = 0; m < MAPS; ++m)
#pragma unroll
    for (int j = 0; j < S; ++j) acc[m][j] = 0.f;

  const int first = blockIdx.x * kRowsPerSplit;
  const int last = first + kRowsPerSplit < kRows ? first + kRowsPerSplit : kRows;
  const int first_image = first / P;
  if (first < last) {
    stage_dy(dy, first_image, first % P, k0, dy_buffers);
    stage_x(x, first_image, c, first % P, 0, R, rings);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  for (int row = first; row < last; ++row) {
    const int image = row / P, p = row % P;
    if (row + 1 < last) {
      // The buffers written here were last read before the previous row's closing barrier.
      const int next_image = (row + 1) / P, next_p = (row + 1) % P;
      stage_dy(dy, next_image, next_p, k0, dy_buffers + ((row + 1 - first) & 1) * kDyFloats);
      float* next_ring = rings + ((next_image - first_image) & 1) * kRingFloats;
      if (next_image != image)
        stage_x(x, next_image, c, next_p, 0, R, next_ring);
      else
        stage_x(x, next_image, c, next_p, R - 1, R, next_ring);  // the one row the window gains
      asm volatile("cp.async.commit_group;\n" ::);
      asm volatile("cp.async.wait_group 1;\n" ::);
    } else {
      asm volatile("cp.async.wait_group 0;\n" ::);
    }
    __syncthreads();
    const float* dy_s = dy_buffers + ((row - first) & 1) * kDyFloats;
    const float* x_row = rings + ((image - first_image) & 1) * kRingFloats + (p + i) % kRing * kXRowLength;
#pragma unroll 1
    for (int pass = 0; pass < kPasses; ++pass) {
      const int q0 = pass * 128 + lane * 4;
      if (q0 >= Q) break;
      float xv[kXValues];
#pragma unroll
      for (int t = 0; t < kXValues; ++t) xv[t] = x_row[kXOffset - PAD_W + q0 + t];
#pragma unroll
      for (int m = 0; m < MAPS; ++m) {
        const float4 g = *reinterpret_cast<const float4*>(dy_s + m * kRowLength + q0);
#pragma unroll
        for (int j = 0; j < S; ++j) {
          float a = acc[m][j];
          a = fmaf(g.x, xv[j], a);
          a = fmaf(g.y, xv[j + 1], a);
          a = fmaf(g.z, xv[j + 2], a);
          acc[m][j] = fmaf(g.w, xv[j + 3], a);
        }
      }
    }
    __syncthreads();  // these buffers are refilled from the next row on
  }

  // Butterfly: every lane ends with the warp's sums; lane e % 32 stores entry e.
  float* partial = static_cast<float*>(workspace) + size_t(blockIdx.x) * kFilterElements;
#pragma unroll
  for (int m = 0; m < MAPS; ++m)
#pragma unroll
    for (int j = 0; j < S; ++j) {
      float v = acc[m][j];
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
      if ((m * S + j) % 32 == lane && k0 + m < K) partial[(((k0 + m) * C + c) * R + i) * S + j] = v;
    }
}

#include "layer_bwd_filter_sum_splits.cuh"
