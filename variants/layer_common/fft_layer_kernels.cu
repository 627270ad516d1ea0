#include "variants/layer_common/fft_layer_kernels.h"

#include <string>

#include "harness/error.h"
#include "variants/layer_common/kernels/layer_epilogue.cuh"

namespace convtune {
namespace {

// A block transforms kFftTiles<T> consecutive tiles: one thread two real tile rows as one complex row (then one
// column of the half spectrum), the tiles in shared memory between the passes, the spectra stored so that
// consecutive threads write consecutive tiles of one bin. Radix-2 in registers.
template <int T>
constexpr int kFftTiles = T == 32 ? 8 : T == 16 ? 16 : 32;  // 256 threads a block
template <int T>
constexpr int kFftThreads = kFftTiles<T> * T;
template <int T>
constexpr int kFftHalf = T / 2 + 1;  // columns of a real tile's spectrum
// A tile's half spectrum in shared memory, one float2 of padding after it: the passes that store or load
// spectra take consecutive tiles of one bin on consecutive threads, which would otherwise hit one bank.
template <int T>
constexpr int kFftHalfPitch = T * kFftHalf<T> + 1;
// Shared floats of a block: its real tiles (pitch T + 1), or their half spectra, in turn.
template <int T>
constexpr int kFftSharedFloats = kFftTiles<T> * 2 * kFftHalfPitch<T> > kFftTiles<T> * T * (T + 1)
                                     ? kFftTiles<T> * 2 * kFftHalfPitch<T>
                                     : kFftTiles<T> * T * (T + 1);

// Element (u, v) of tile i's half spectrum.
template <int T>
__device__ __forceinline__ float2& half_at(float* shared, int i, int u, int v) {
  return reinterpret_cast<float2*>(shared)[i * kFftHalfPitch<T> + u * kFftHalf<T> + v];
}

__host__ __device__ constexpr int log2_of(int n) { return n <= 1 ? 0 : 1 + log2_of(n / 2); }

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(fmaf(a.x, b.x, -a.y * b.y), fmaf(a.x, b.y, a.y * b.x));
}

// cos and sin of 2 pi k / 32, k < 16: every twiddle of the 8-, 16- and 32-point transforms. Indexed with
// constants once the transforms are unrolled, so the compiler takes them as immediates.
__host__ __device__ constexpr float circle_cos(int k) {
  constexpr float c[16] = {1.000000000e+00f, 9.807852804e-01f, 9.238795325e-01f, 8.314696123e-01f, 7.071067812e-01f, 5.555702330e-01f, 3.826834324e-01f, 1.950903220e-01f, 6.123233996e-17f, -1.950903220e-01f, -3.826834324e-01f, -5.555702330e-01f, -7.071067812e-01f, -8.314696123e-01f, -9.238795325e-01f, -9.807852804e-01f};
  return c[k];
}
__host__ __device__ constexpr float circle_sin(int k) {
  constexpr float s[16] = {0.000000000e+00f, 1.950903220e-01f, 3.826834324e-01f, 5.555702330e-01f, 7.071067812e-01f, 8.314696123e-01f, 9.238795325e-01f, 9.807852804e-01f, 1.000000000e+00f, 9.807852804e-01f, 9.238795325e-01f, 8.314696123e-01f, 7.071067812e-01f, 5.555702330e-01f, 3.826834324e-01f, 1.950903220e-01f};
  return s[k];
}

// In-place T-point transform, e^(-2 pi i k x / T) (inverse: e^(+...), unscaled). The twiddles 1 and -i
// (inverse: +i) of the first stages are exchanges and signs, not products.
template <int T, bool Inverse>
__device__ __forceinline__ void fft_in_registers(float2 (&a)[T]) {
#pragma unroll
  for (int i = 0; i < T; ++i) {
    // j must be a constant, or a[] leaves the registers for local memory: __brev folds, where a loop of bit
    // tests was left a loop at T = 8.
    const int j = __brev(unsigned(i)) >> (32 - log2_of(T));
    if (i < j) {
      const float2 t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }
#pragma unroll
  for (int stage = 1; stage <= log2_of(T); ++stage) {  // counted loops of fixed trips: unrolled, a[] in registers
    const int half = 1 << (stage - 1);
#pragma unroll
    for (int b = 0; b < T / 2; ++b) {
      const int j = b % half, top = (b / half) * 2 * half + j;
      const int k = j * (16 / half);  // the twiddle e^(-+2 pi i k / 32)
      const float2 x = a[top + half];
      float2 v;
      if (k == 0) {
        v = x;
      } else if (k == 8) {
        v = Inverse ? make_float2(-x.y, x.x) : make_float2(x.y, -x.x);
      } else {
        const float2 w = make_float2(circle_cos(k), Inverse ? circle_sin(k) : -circle_sin(k));
        v = cmul(x, w);
      }
      const float2 u = a[top];
      a[top] = make_float2(u.x + v.x, u.y + v.y);
      a[top + half] = make_float2(u.x - v.x, u.y - v.y);
    }
  }
}

// The column transforms of a block's half spectra, in place: one thread a column, the block's columns on
// consecutive threads (a tile's T/2 + 1 columns would leave most of a warp idle).
template <int T, bool Inverse>
__device__ __forceinline__ void column_pass(float* shared) {
  constexpr int kHalf = kFftHalf<T>;
  if (threadIdx.x >= kFftTiles<T> * kHalf) return;
  const int tile = threadIdx.x / kHalf, column = threadIdx.x % kHalf;
  float2 a[T];
#pragma unroll
  for (int u = 0; u < T; ++u) a[u] = half_at<T>(shared, tile, u, column);
  fft_in_registers<T, Inverse>(a);
#pragma unroll
  for (int u = 0; u < T; ++u) half_at<T>(shared, tile, u, column) = a[u];
}

template <int T>
__global__ void __launch_bounds__(kFftThreads<T>)
spectra_kernel(const float* __restrict__ src, float2* __restrict__ spectra, FftGather g, int batch) {
  constexpr int kTiles = kFftTiles<T>, kHalf = kFftHalf<T>, kPairs = T / 2;
  __shared__ float shared[kFftSharedFloats<T>];
  __shared__ int64_t base[kTiles];  // each tile's map in src, or -1 past the batch
  __shared__ int origin_y[kTiles], origin_x[kTiles];
  const int first = blockIdx.x * kTiles;
  if (threadIdx.x < kTiles) {
    const int b = first + threadIdx.x;
    const FftTileOrigin o = g.origin(b / g.maps);
    base[threadIdx.x] = b < batch ? (int64_t(o.image) * g.maps + b % g.maps) * g.src_h * g.src_w : -1;
    origin_y[threadIdx.x] = o.y;
    origin_x[threadIdx.x] = o.x;
  }
  __syncthreads();
  float(*real)[T][T + 1] = reinterpret_cast<float(*)[T][T + 1]>(shared);
  for (int e = threadIdx.x; e < kTiles * T * T; e += kFftThreads<T>) {  // lanes along a tile row: coalesced
    const int i = e / (T * T), y = e / T % T, x = e % T;
    const int sy = origin_y[i] + y, sx = origin_x[i] + x;
    const bool inside = base[i] >= 0 && y < g.extent_y && x < g.extent_x && sy >= 0 && sy < g.src_h && sx >= 0 &&
                        sx < g.src_w;
    real[i][y][x] = inside ? __ldg(src + base[i] + int64_t(sy) * g.src_w + sx) : 0.0f;
  }
  __syncthreads();
  // Rows y and y + T/2 of a tile as one complex row: one transform for two real ones.
  float2 a[T];
  const bool row_thread = threadIdx.x < kTiles * kPairs;
  const int tile = threadIdx.x / kPairs, row = threadIdx.x % kPairs;
  if (row_thread) {
#pragma unroll
    for (int x = 0; x < T; ++x) a[x] = make_float2(real[tile][row][x], real[tile][row + kPairs][x]);
    fft_in_registers<T, false>(a);
  }
  __syncthreads();  // the half spectra overwrite the real tiles
  if (row_thread) {
#pragma unroll
    for (int v = 0; v < kHalf; ++v)
      split_paired_bin(a[v], a[(T - v) % T], half_at<T>(shared, tile, row, v), half_at<T>(shared, tile, row + kPairs, v));
  }
  __syncthreads();
  column_pass<T, false>(shared);
  __syncthreads();
  for (int e = threadIdx.x; e < kTiles * T * kHalf; e += kFftThreads<T>) {  // consecutive tiles of a bin
    const int i = e % kTiles, bin = e / kTiles;
    if (first + i < batch) spectra[int64_t(bin) * batch + first + i] = half_at<T>(shared, i, bin / kHalf, bin % kHalf);
  }
}

template <int T, int Act>
__global__ void __launch_bounds__(kFftThreads<T>)
outputs_kernel(const float2* __restrict__ spectra, const float* __restrict__ bias_of_maps, float* __restrict__ out,
               FftScatter g, int batch, float scale) {
  constexpr int kTiles = kFftTiles<T>, kHalf = kFftHalf<T>, kPairs = T / 2;
  __shared__ float shared[kFftSharedFloats<T>];
  __shared__ int64_t base[kTiles];  // each tile's map in out, or -1 past the batch
  __shared__ int origin_y[kTiles], origin_x[kTiles];
  __shared__ float tile_bias[kTiles];
  const int first = blockIdx.x * kTiles;
  if (threadIdx.x < kTiles) {
    const int b = first + threadIdx.x, map = b % g.maps;
    const FftTileOrigin o = g.origin(b / g.maps);
    base[threadIdx.x] = b < batch ? (int64_t(o.image) * g.maps + map) * g.out_h * g.out_w : -1;
    origin_y[threadIdx.x] = o.y;
    origin_x[threadIdx.x] = o.x;
    tile_bias[threadIdx.x] = bias_of_maps && b < batch ? __ldg(bias_of_maps + map) : 0.0f;
  }
  for (int e = threadIdx.x; e < kTiles * T * kHalf; e += kFftThreads<T>) {
    const int i = e % kTiles, bin = e / kTiles;
    half_at<T>(shared, i, bin / kHalf, bin % kHalf) = first + i < batch ? spectra[int64_t(bin) * batch + first + i] : make_float2(0, 0);
  }
  __syncthreads();
  column_pass<T, true>(shared);  // columns first: the rows' Hermitian halves are then whole
  __syncthreads();
  // Rows y and y + T/2 inverted as one complex row Z = X + iY, X and Y Hermitian: Z's real part is row y, its
  // imaginary part row y + T/2.
  float2 a[T];
  const bool row_thread = threadIdx.x < kTiles * kPairs;
  const int tile = threadIdx.x / kPairs, row = threadIdx.x % kPairs;
  if (row_thread) {
#pragma unroll
    for (int v = 0; v < kHalf; ++v) {
      float2 z_neg;
      join_paired_bin(half_at<T>(shared, tile, row, v), half_at<T>(shared, tile, row + kPairs, v), a[v], z_neg);
      if (v > 0 && v < kPairs) a[T - v] = z_neg;  // bins 0 and t/2 are their own negatives
    }
    fft_in_registers<T, true>(a);
  }
  __syncthreads();  // the real rows overwrite the half spectra
  float(*real)[T][T + 1] = reinterpret_cast<float(*)[T][T + 1]>(shared);
  if (row_thread) {
#pragma unroll
    for (int x = 0; x < T; ++x) {
      real[tile][row][x] = a[x].x;
      real[tile][row + kPairs][x] = a[x].y;
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < kTiles * T * T; e += kFftThreads<T>) {  // lanes along a tile row
    const int i = e / (T * T), y = e / T % T - g.read_y, x = e % T - g.read_x;
    if (base[i] < 0 || y < 0 || y >= g.step_y || x < 0 || x >= g.step_x) continue;
    const int oy = origin_y[i] + y, ox = origin_x[i] + x;
    if (oy >= g.out_h || ox >= g.out_w) continue;
    out[base[i] + int64_t(oy) * g.out_w + ox] =
        layer_activation<Act>(fmaf(real[i][y + g.read_y][x + g.read_x], scale, tile_bias[i]));
  }
}

void check_transform(int t) {
  if (!fft_layer_transform_size(t))
    throw InputError("FFT layer transform size " + std::to_string(t) + "; allowed: 8, 16, 32");
}

template <int T>
void launch_spectra(const float* src, cuComplex* spectra, const FftGather& g, cudaStream_t s) {
  const int batch = g.columns() * g.maps;
  spectra_kernel<T><<<(batch + kFftTiles<T> - 1) / kFftTiles<T>, kFftThreads<T>, 0, s>>>(
      src, reinterpret_cast<float2*>(spectra), g, batch);
}

template <int T, int Act>
void launch_outputs(const cuComplex* spectra, const float* bias, float* out, const FftScatter& g, float scale,
                    cudaStream_t s) {
  const int batch = g.columns() * g.maps;
  outputs_kernel<T, Act><<<(batch + kFftTiles<T> - 1) / kFftTiles<T>, kFftThreads<T>, 0, s>>>(
      reinterpret_cast<const float2*>(spectra), bias, out, g, batch, scale);
}

template <int T>
void launch_outputs(const cuComplex* spectra, const float* bias, float* out, const FftScatter& g, float scale, int act,
                    cudaStream_t s) {
  switch (act) {
    case 0: return launch_outputs<T, 0>(spectra, bias, out, g, scale, s);
    case 1: return launch_outputs<T, 1>(spectra, bias, out, g, scale, s);
    case 2: return launch_outputs<T, 2>(spectra, bias, out, g, scale, s);
    case 3: return launch_outputs<T, 3>(spectra, bias, out, g, scale, s);
  }
  throw InputError("FFT layer activation " + std::to_string(act) + "; allowed: 0..3");
}

}  // namespace

void fft_layer_spectra(const float* src, cuComplex* spectra, const FftGather& g, cudaStream_t s) {
  check_transform(g.t);
  if (g.t == 8) launch_spectra<8>(src, spectra, g, s);
  if (g.t == 16) launch_spectra<16>(src, spectra, g, s);
  if (g.t == 32) launch_spectra<32>(src, spectra, g, s);
  CT_CHECK_LAUNCH();
}

void fft_layer_outputs(const cuComplex* spectra, const float* bias_of_maps, float* out, const FftScatter& g, float scale,
                       int act, cudaStream_t s) {
  check_transform(g.t);
  if (g.t == 8) launch_outputs<8>(spectra, bias_of_maps, out, g, scale, act, s);
  if (g.t == 16) launch_outputs<16>(spectra, bias_of_maps, out, g, scale, act, s);
  if (g.t == 32) launch_outputs<32>(spectra, bias_of_maps, out, g, scale, act, s);
  CT_CHECK_LAUNCH();
}

}  // namespace convtune
