// Row-staged backward-filter for few input maps, stride 1: dw[k,c,i,j] = sum over (image, p, q) of
// x[image, c, p-PAD_H+i, q-PAD_W+j] * dy[image, k, p, q].
// A block owns one input map c and MAPS output maps, with one warp per filter row i (R warps). It walks a
// contiguous range of (image, row p) pairs. While it computes on one, it stages dy's next row of its MAPS
// maps into the other of two buffers, and the one x row of map c that the next row's window gains into a
// ring of R + 1 rows (all R at an image's start; zero outside the image). On sm_90 with rows of 4-float
// multiples one thread issues bulk copies completing on an mbarrier; otherwise every thread issues cp.async
// (16 bytes a copy where rows allow; sm_80 and later). Then each lane takes 4 consecutive columns q per
// 128-column pass: the 4 + S - 1 x values it needs and each map's 4 dy values (one vector load) feed
// MAPS x S x 4 multiply-adds into MAPS x S accumulators. (8 columns a lane measured slower on the H100: 148
// registers; 5 to 7, which leave no lane idle on 224-wide rows, too: scalar loads.) The lanes' sums are
// warp-reduced at the end; each block writes its partial dw for its (c, maps) to the workspace
// [SPLITS][K*C*R*S] and the second kernel adds the splits in order.
// Defines: the shape (N C H W K R S PAD_H PAD_W U V P Q), MAPS, SPLITS, MIN_BLOCKS (blocks per SM the
// register count must allow; 1: the compiler's choice).
#include "async_copy.cuh"

constexpr int kPasses = (Q + 127) / 128;
constexpr int kRowLength = kPasses * 128;  // dy row in shared memory, zero past Q
// Rows of 4-float multiples are copied 16 bytes at a time (bulk copies on sm_90), others a float at a time.
constexpr int kVec = Q % 4 == 0 && W % 4 == 0 ? 4 : 1;
// x row in shared memory: column col at kXOffset + col (16-byte aligned), zero around the image's columns.
constexpr int kXOffset = 4 * ((PAD_W + 3) / 4);
constexpr int kXRowLength = 4 * ((kXOffset + kRowLength + S + 3) / 4);
constexpr int kXValues = 4 + S - 1;  // x values a lane reads: its 4 columns and the S - 1 after
// A lane's window starts at kXOffset - PAD_W + q0 (q0 a multiple of 4): read from the 16-byte boundary
// kXShift floats below it (kXAligned is 0: kXOffset - PAD_W is 0..3), in kXLoads float4s; the highest read,
// kRowLength - 4 + 4 * kXLoads - 1, stays inside kXRowLength since kXShift <= kXOffset.
constexpr int kXShift = (kXOffset - PAD_W) % 4, kXAligned = kXOffset - PAD_W - kXShift;
constexpr int kXLoads = (kXShift + kXValues + 3) / 4;
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

// On sm_90 with 4-float rows, one thread stages a row as bulk copies (cp.async.bulk, one per dy map and x
// row) that complete on an mbarrier, and the other threads issue no copies (only the zero fills of rows
// outside the image): on the C3 224²
// layer 8% fewer instructions and 8% less time than per-thread cp.async. Elsewhere every thread issues
// cp.async copies.
constexpr bool kBulk = kHasBulkCopy && kVec == 4;

// Starts copying dy's row p of maps k0 .. k0+MAPS-1 (those below K) and the x rows that taps i_begin ..
// R-1 of output row p read (into their ring slots; zero outside the image's rows) for one (image, row).
// Columns outside the image stay zero from the start. Bulk: thread 0 issues the copies on `bar`, every
// thread zero-fills the rows outside the image (seen by all after the caller's next barrier).
__device__ __forceinline__ void stage_row(const float* __restrict__ x, const float* __restrict__ dy, int image, int c,
                                          int p, int k0, int i_begin, float* dy_s, float* ring,
                                          unsigned long long* bar) {
  if (kBulk) {
    for (int i = i_begin; i < R; ++i) {
      const int y = p - PAD_H + i;
      if (y >= 0 && y < H) continue;
      for (int col = threadIdx.x; col < W; col += kThreads) ring[(p + i) % kRing * kXRowLength + kXOffset + col] = 0.f;
      bulk_fence();  // the zero fills before a later bulk copy into the same slot
    }
    if (threadIdx.x != 0) return;
    const int maps = K - k0 < MAPS ? K - k0 : MAPS;
    int rows = 0;
    for (int i = i_begin; i < R; ++i) rows += p - PAD_H + i >= 0 && p - PAD_H + i < H;
    bulk_expect(bar, unsigned(maps * Q + rows * W) * 4u);
    for (int m = 0; m < maps; ++m)
      bulk_copy(dy_s + m * kRowLength, dy + ((size_t(image) * K + k0 + m) * P + p) * Q, Q * 4u, bar);
    for (int i = i_begin; i < R; ++i) {
      const int y = p - PAD_H + i;
      if (y >= 0 && y < H)
        bulk_copy(ring + (p + i) % kRing * kXRowLength + kXOffset, x + ((size_t(image) * C + c) * H + y) * W, W * 4u,
                  bar);
    }
    return;
  }
  constexpr int kDyChunks = Q / kVec;
  for (int e = threadIdx.x; e < MAPS * kDyChunks; e += kThreads) {
    const int m = e / kDyChunks, q = e % kDyChunks * kVec;
    if (k0 + m < K)
      cp_async<4 * kVec>(dy_s + m * kRowLength + q, dy + ((size_t(image) * K + k0 + m) * P + p) * Q + q, true);
  }
  constexpr int kXChunks = W / kVec;
  for (int e = threadIdx.x; e < (R - i_begin) * kXChunks; e += kThreads) {
    const int i = i_begin + e / kXChunks, col = e % kXChunks * kVec, y = p - PAD_H + i;
    const bool inside = y >= 0 && y < H;
    cp_async<4 * kVec>(ring + (p + i) % kRing * kXRowLength + kXOffset + col,
             inside ? x + ((size_t(image) * C + c) * H + y) * W + col : x, inside);
  }
  cp_async_commit();
}

extern "C" __global__ void __maxnreg__(kMaxRegisters)
    layer_bwd_filter_rows_kernel(const float* __restrict__ x, const float* __restrict__ dy, float*, void* workspace) {
  extern __shared__ float4 shared4[];
  // [2][MAPS][kRowLength] dy (one buffer per row parity), [2][kRing][kXRowLength] x (one ring per image
  // parity), then the bulk path's two mbarriers (one per dy buffer).
  float* dy_buffers = reinterpret_cast<float*>(shared4);
  float* rings = dy_buffers + 2 * kDyFloats;
  unsigned long long* bars = reinterpret_cast<unsigned long long*>(rings + 2 * kRingFloats);
  for (int e = threadIdx.x; e < 2 * (kDyFloats + kRingFloats); e += kThreads) dy_buffers[e] = 0.f;
  if (kBulk && threadIdx.x == 0) bulk_init(bars), bulk_init(bars + 1);
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
  if (first < last) stage_row(x, dy, first_image, c, first % P, k0, 0, dy_buffers, rings, bars);
  if (kBulk) __syncthreads();  // the first row's zero fills
  for (int row = first; row < last; ++row) {
    const int image = row / P, p = row % P, step = row - first;
    if (row + 1 < last) {
      // The buffers written here were last read before the previous row's closing barrier.
      const int next_image = (row + 1) / P, next_p = (row + 1) % P;
      float* next_ring = rings + ((next_image - first_image) & 1) * kRingFloats;
      // A new image needs all R rows; otherwise the one row the window gains.
      stage_row(x, dy, next_image, c, next_p, k0, next_image != image ? 0 : R - 1,
                dy_buffers + ((step + 1) & 1) * kDyFloats, next_ring, bars + ((step + 1) & 1));
      if (!kBulk) cp_async_wait<1>();
    } else if (!kBulk) {
      cp_async_wait<0>();
    }
    if (kBulk)
      bulk_wait(bars + (step & 1), unsigned(step >> 1) & 1u);  // the n-th use of a buffer completes phase n
    else
      __syncthreads();
    const float* dy_s = dy_buffers + (step & 1) * kDyFloats;
    const float* x_row = rings + ((image - first_image) & 1) * kRingFloats + (p + i) % kRing * kXRowLength;
#pragma unroll 1
    for (int pass = 0; pass < kPasses; ++pass) {
      const int q0 = pass * 128 + lane * 4;
      if (q0 >= Q) break;
      // The window as whole float4s from the 16-byte boundary below it: a warp's 16-byte-strided scalar or
      // 8-byte loads cost as many shared-memory wavefronts as its 16-byte ones.
      float xv[4 * kXLoads];
#pragma unroll
      for (int v = 0; v < kXLoads; ++v) {
        const float4 w = *reinterpret_cast<const float4*>(x_row + kXAligned + q0 + 4 * v);
        xv[4 * v] = w.x, xv[4 * v + 1] = w.y, xv[4 * v + 2] = w.z, xv[4 * v + 3] = w.w;
      }
#pragma unroll
      for (int m = 0; m < MAPS; ++m) {
        const float4 g = *reinterpret_cast<const float4*>(dy_s + m * kRowLength + q0);
#pragma unroll
        for (int j = 0; j < S; ++j) {
          float a = acc[m][j];
          a = fmaf(g.x, xv[kXShift + j], a);
          a = fmaf(g.y, xv[kXShift + j + 1], a);
          a = fmaf(g.z, xv[kXShift + j + 2], a);
          acc[m][j] = fmaf(g.w, xv[kXShift + j + 3], a);
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
