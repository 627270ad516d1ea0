// The tiles of the FFT layer variants (fft_layer.h), host and device code, so that the CPU test runs the very
// index arithmetic the kernels run. Stride 1 only.
//
// A tile is a t x t window of a source map; its 2D transform times a filter's (the filter at the tile's
// origin, zeros elsewhere) is a circular correlation or convolution whose first or last v = t - taps + 1
// values per axis involve no wrapped term: those are a tile's valid outputs, and tiles step by v.
//   forward         y = x (*) w (correlation): x's tiles start at (tile * v - pad); Y = sum_c conj(W) X;
//                   output (tile * v + i) is tile element i.
//   backward-data   dx = dy * w (convolution): dy's tiles start at (tile * v + pad - (taps - 1));
//                   DX = sum_k W DY; output (tile * v + i) is tile element (taps - 1 + i).
//   backward-filter dw = x (*) dy over the batch: tiles of dy's v x v blocks (zeros past v) and of x from
//                   (tile * v - pad); DW = sum_tiles X conj(DY); dw(i, j) is element (i, j).
// Transforms are unnormalised: outputs are scaled by 1 / t^2.
#pragma once
#include <cstdint>

#include "variants/layer_common/layer_shape.h"

#if defined(__CUDACC__)
#define FFT_LAYER_HD __host__ __device__ __forceinline__
#else
#define FFT_LAYER_HD inline
#endif

namespace convtune {

// Where a tile sits: its image and the coordinates of its element (0, 0) in the tensor it is read from or
// written to (may be negative: padding).
struct FftTileOrigin {
  int image, y, x;
};

// The t x t windows of a batch of maps that make a transform's tiles: (image * tiles + tile) is a tile's
// column, (column * maps + map) the batch index of its transform. Zeros outside the source and past `extent`.
struct FftGather {
  int images, maps, src_h, src_w;  // the source tensor [images][maps][src_h][src_w]
  int tiles_y, tiles_x, step_y, step_x;
  int origin_y, origin_x;  // tile (0, 0)'s element (0, 0) in the source
  int extent_y, extent_x;  // elements of a tile taken from the source; the rest are zero
  int t;
  FFT_LAYER_HD int tiles() const { return tiles_y * tiles_x; }
  FFT_LAYER_HD int columns() const { return images * tiles(); }
  FFT_LAYER_HD FftTileOrigin origin(int column) const {
    const int tile = column % tiles();
    return {column / tiles(), origin_y + tile / tiles_x * step_y, origin_x + tile % tiles_x * step_x};
  }
  // Element (y, x) of map `map`'s tile at `o`: its source index, or -1 for a zero.
  FFT_LAYER_HD int64_t source(const FftTileOrigin& o, int map, int y, int x) const {
    const int sy = o.y + y, sx = o.x + x;
    if (y >= extent_y || x >= extent_x || sy < 0 || sy >= src_h || sx < 0 || sx >= src_w) return -1;
    return ((int64_t(o.image) * maps + map) * src_h + sy) * src_w + sx;
  }
};

// Outputs [images][maps][out_h][out_w] out of inverse-transformed tiles, batch-indexed as FftGather's (maps =
// the output's): the step_y x step_x outputs from a tile's origin are its elements from (read_y, read_x), cut
// at the edges.
struct FftScatter {
  int images, maps, out_h, out_w;
  int tiles_y, tiles_x, step_y, step_x;
  int read_y, read_x;
  int t;
  FFT_LAYER_HD int tiles() const { return tiles_y * tiles_x; }
  FFT_LAYER_HD int columns() const { return images * tiles(); }
  FFT_LAYER_HD FftTileOrigin origin(int column) const {
    const int tile = column % tiles();
    return {column / tiles(), tile / tiles_x * step_y, tile % tiles_x * step_x};
  }
  // Output (i, j) of the tile at `o` (i < step_y, j < step_x): its index in out, or -1 past the edge.
  FFT_LAYER_HD int64_t output(const FftTileOrigin& o, int map, int i, int j) const {
    const int y = o.y + i, x = o.x + j;
    if (y >= out_h || x >= out_w) return -1;
    return ((int64_t(o.image) * maps + map) * out_h + y) * out_w + x;
  }
};

// One pass's tiling at transform size t (t >= r and s; the layer's stride is 1).
struct FftLayerTiles {
  LayerPass pass;
  int t, step_y, step_x, tiles_y, tiles_x;
  int columns;   // images * tiles: the GEMMs' long dim (backward-filter: the summed one)
  int in_maps;   // maps of the tiled input (x: C; backward-data's dy: K)
  int out_maps;  // maps of the tiled output (forward: K; backward-data: C; backward-filter: none)
  FFT_LAYER_HD int bins() const { return t * (t / 2 + 1); }  // a real transform's Hermitian half
};

FFT_LAYER_HD int fft_ceil_div(int a, int b) { return (a + b - 1) / b; }

// Dims as in LayerShape: n c h w k r s pad_h pad_w, output p x q.
FFT_LAYER_HD FftLayerTiles fft_layer_tiles(LayerPass pass, int t, int n, int c, int h, int w, int k, int r, int s,
                                           int p, int q) {
  FftLayerTiles g{};
  g.pass = pass;
  g.t = t;
  g.step_y = t - r + 1;
  g.step_x = t - s + 1;
  // The tiled extent: the output's (forward, backward-data) or dy's (backward-filter).
  const int ty = pass == LayerPass::bwd_data ? h : p, tx = pass == LayerPass::bwd_data ? w : q;
  g.tiles_y = fft_ceil_div(ty, g.step_y);
  g.tiles_x = fft_ceil_div(tx, g.step_x);
  g.columns = n * g.tiles_y * g.tiles_x;
  g.in_maps = pass == LayerPass::bwd_data ? k : c;
  g.out_maps = pass == LayerPass::forward ? k : pass == LayerPass::bwd_data ? c : 0;
  return g;
}

// The gather of the pass's first operand: x (forward, backward-filter) or dy (backward-data).
FFT_LAYER_HD FftGather fft_input_gather(const FftLayerTiles& g, int n, int h, int w, int r, int s, int pad_h, int pad_w,
                                        int p, int q) {
  const bool data = g.pass == LayerPass::bwd_data;
  return {n,
          g.in_maps,
          data ? p : h,
          data ? q : w,
          g.tiles_y,
          g.tiles_x,
          g.step_y,
          g.step_x,
          data ? pad_h - (r - 1) : -pad_h,
          data ? pad_w - (s - 1) : -pad_w,
          g.t,
          g.t,
          g.t};
}

// Backward-filter's second gather: dy's step x step blocks, zeros past them.
FFT_LAYER_HD FftGather fft_gradient_gather(const FftLayerTiles& g, int n, int k, int p, int q) {
  return {n, k, p, q, g.tiles_y, g.tiles_x, g.step_y, g.step_x, 0, 0, g.step_y, g.step_x, g.t};
}

// The filters [k][c][r][s] as tiles (k, c) with the filter at the origin: the transform batch k * c + c.
FFT_LAYER_HD FftGather fft_filter_gather(int k, int c, int r, int s, int t) {
  return {k, c, r, s, 1, 1, 1, 1, 0, 0, t, t, t};
}

// Backward-filter's read: dw's r x s filters out of the corners of tiles (k, c).
FFT_LAYER_HD FftScatter fft_filter_crop(int k, int c, int r, int s, int t) { return {k, c, r, s, 1, 1, r, s, 0, 0, t}; }

// The output read of forward and backward-data.
FFT_LAYER_HD FftScatter fft_output_scatter(const FftLayerTiles& g, int n, int h, int w, int r, int s, int p, int q) {
  const bool data = g.pass == LayerPass::bwd_data;
  return {n,         g.out_maps, data ? h : p, data ? w : q, g.tiles_y, g.tiles_x, g.step_y, g.step_x,
          data ? r - 1 : 0, data ? s - 1 : 0, g.t};
}

// Two real tile rows x and y transformed as one complex row z = x + iy (C: a complex type with members x, y).
// Bin v of their spectra from z's bins v and -v (= t - v): X[v] = (Z[v] + conj Z[-v]) / 2,
// Y[v] = (Z[v] - conj Z[-v]) / 2i.
template <class C>
FFT_LAYER_HD void split_paired_bin(C z, C z_neg, C& x, C& y) {
  x = C{0.5f * (z.x + z_neg.x), 0.5f * (z.y - z_neg.y)};
  y = C{0.5f * (z.y + z_neg.y), 0.5f * (z_neg.x - z.x)};
}

// The inverse's join: from bin v of two Hermitian spectra X and Y, bins v and -v of Z = X + iY, whose inverse
// transform is x + iy: Z[v] = X[v] + iY[v], Z[-v] = conj X[v] + i conj Y[v].
template <class C>
FFT_LAYER_HD void join_paired_bin(C x, C y, C& z, C& z_neg) {
  z = C{x.x - y.y, x.y + y.x};
  z_neg = C{x.x + y.y, y.x - x.y};
}

}  // namespace convtune
