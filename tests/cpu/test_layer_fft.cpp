// The tiled FFT variants (variants/layer_common/fft_layer.h): the method run on the CPU in float64 through the
// kernels' own tile geometry (fft_layer_geometry.h: the gathers, including the filters', and the reads) and the
// GEMMs' products (which spectrum is conjugated,
// what is summed), against the float64 references; what they refuse; their workspace's batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

#include "harness/family.h"
#include "harness/variant.h"
#include "variants/layer_common/fft_layer.h"
#include "variants/layer_common/layer_epilogue.h"

#include "tests/cpu/test_support.h"

using namespace convtune;
using namespace convtune::test;

namespace {

using Spectrum = std::vector<std::complex<double>>;  // t x t, full (not the Hermitian half)

struct FftTestComplex {  // the members the kernels' float2 has, in double
  double x, y;
};

// The unnormalised 1D DFT of a complex row (inverse: the conjugate kernel).
std::vector<std::complex<double>> fft_test_row_dft(const std::vector<std::complex<double>>& in, bool inverse) {
  const int t = int(in.size());
  std::vector<std::complex<double>> out(in.size(), 0.0);
  for (int f = 0; f < t; ++f)
    for (int x = 0; x < t; ++x) out[size_t(f)] += in[size_t(x)] * std::polar(1.0, (inverse ? 2 : -2) * M_PI * f * x / t);
  return out;
}

// The unnormalised 2D DFT of a t x t tile (inverse: the conjugate kernel), row then column.
Spectrum fft_test_dft(const std::vector<std::complex<double>>& in, int t, bool inverse) {
  const size_t n = size_t(t);
  Spectrum rows(n * n), out(n * n);
  std::vector<std::complex<double>> line(n);
  for (size_t y = 0; y < n; ++y) {
    std::copy(in.begin() + y * n, in.begin() + (y + 1) * n, line.begin());
    const auto f = fft_test_row_dft(line, inverse);
    std::copy(f.begin(), f.end(), rows.begin() + y * n);
  }
  for (size_t x = 0; x < n; ++x) {
    for (size_t y = 0; y < n; ++y) line[y] = rows[y * n + x];
    const auto f = fft_test_row_dft(line, inverse);
    for (size_t y = 0; y < n; ++y) out[y * n + x] = f[y];
  }
  return out;
}

// The spectra of the tiles a gather makes: [column][map].
std::vector<Spectrum> fft_test_gathered(const std::vector<float>& src, const FftGather& g) {
  std::vector<Spectrum> out;
  for (int column = 0; column < g.columns(); ++column)
    for (int map = 0; map < g.maps; ++map) {
      const FftTileOrigin o = g.origin(column);
      std::vector<std::complex<double>> tile(size_t(g.t) * g.t);
      for (int y = 0; y < g.t; ++y)
        for (int x = 0; x < g.t; ++x) {
          const int64_t from = g.source(o, map, y, x);
          tile[size_t(y) * g.t + x] = from < 0 ? 0.0 : double(src[size_t(from)]);
        }
      out.push_back(fft_test_dft(tile, g.t, false));
    }
  return out;
}

// The method in float64: the products and sums the pass's GEMM forms, bin by bin, then the inverse transforms
// read out as the scatter (or the filter crop) reads them.
std::vector<double> fft_test_method(const Problem& p, LayerPass pass, int t, const std::vector<std::vector<float>>& in) {
  const LayerShape l(p);
  const int n = int(l.n), c = int(l.c), h = int(l.h), w = int(l.w), k = int(l.k), r = int(l.r), s = int(l.s);
  const int pp = int(l.p), q = int(l.q), points = t * t;
  const FftLayerTiles g = fft_layer_tiles(pass, t, l);
  const auto first = fft_test_gathered(in[0], fft_input_gather(g, n, h, w, r, s, int(l.pad_h), int(l.pad_w), pp, q));
  const auto second = pass == LayerPass::bwd_filter ? fft_test_gathered(in[1], fft_gradient_gather(g, n, k, pp, q))
                                                  : fft_test_gathered(in[1], fft_filter_gather(k, c, r, s, t));
  std::vector<double> out(size_t(p.output_elements()), std::nan(""));
  auto inverse = [&](const Spectrum& sum) {
    const Spectrum tile = fft_test_dft(sum, t, true);
    std::vector<double> real(static_cast<size_t>(points));
    for (int e = 0; e < points; ++e) real[size_t(e)] = tile[size_t(e)].real() / points;
    return real;
  };
  // The outputs of tile (column, map) as the scatter reads them.
  auto read_out = [&](const FftScatter& sc, int column, int map, const std::vector<double>& real, const float* bias,
                      Activation act) {
    const FftTileOrigin o = sc.origin(column);
    for (int i = 0; i < sc.step_y; ++i)
      for (int j = 0; j < sc.step_x; ++j) {
        const int64_t to = sc.output(o, map, i, j);
        if (to < 0) continue;
        double v = real[size_t(sc.read_y + i) * t + sc.read_x + j];
        if (bias) v += bias[map];
        out[size_t(to)] = activate(act, v);
      }
  };
  if (pass == LayerPass::bwd_filter) {  // DW[k][c] = sum over columns of X[column][c] conj(DY[column][k])
    for (int kk = 0; kk < k; ++kk)
      for (int cc = 0; cc < c; ++cc) {
        Spectrum sum(size_t(points), 0.0);
        for (int column = 0; column < g.columns; ++column)
          for (int e = 0; e < points; ++e)
            sum[size_t(e)] += first[size_t(column) * c + cc][size_t(e)] * std::conj(second[size_t(column) * k + kk][size_t(e)]);
        read_out(fft_filter_crop(k, c, r, s, t), kk, cc, inverse(sum), nullptr, Activation::none);
      }
    return out;
  }
  const FftScatter sc = fft_output_scatter(g, n, h, w, r, s, pp, q);
  const bool forward = pass == LayerPass::forward;
  const int sum_maps = forward ? c : k;  // forward: Y[k] = sum_c conj(W[k][c]) X[c]; backward-data: DX[c] = sum_k W[k][c] DY[k]
  const float* bias = forward && has_bias(p) ? in.at(2).data() : nullptr;
  for (int column = 0; column < g.columns; ++column)
    for (int map = 0; map < g.out_maps; ++map) {
      Spectrum sum(size_t(points), 0.0);
      for (int m = 0; m < sum_maps; ++m) {
        const Spectrum& filter = forward ? second[size_t(map) * c + m] : second[size_t(m) * c + map];
        for (int e = 0; e < points; ++e)
          sum[size_t(e)] += (forward ? std::conj(filter[size_t(e)]) : filter[size_t(e)]) *
                            first[size_t(column) * g.in_maps + m][size_t(e)];
      }
      read_out(sc, column, map, inverse(sum), bias, activation_of(p));
    }
  return out;
}

// n c h w k r s pad_h pad_w u v (+ bias and activation for the forward pass), strict fp32.
Problem fft_test_shape(const std::string& family, std::vector<int64_t> values, int64_t act = 1) {
  if (family == "layer_fwd") values.insert(values.end(), {1, act});
  values.push_back(0);
  return layer_problem(family, find_family(family).dims(), values);
}

}  // namespace

// In float64 the method is exact up to rounding, so any index, offset, conjugate or sum that is wrong shows
// as an error of order one: several tiles a map with cut edge tiles, r != s, no and full padding, one image
// and several, each activation.
TEST(LayerFft, MethodThroughTheTileGeometryMatchesTheReferences) {
  unsigned seed = 11;
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 13, 11, 4, 5, 3, 2, 1, 1, 1},
                                                    {1, 2, 9, 17, 3, 3, 3, 0, 2, 1, 1},
                                                    {3, 1, 20, 6, 2, 7, 7, 3, 3, 1, 1}};
  int checked = 0;
  for (const char* family : kLayerPassFamilies)
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Problem p = fft_test_shape(family, shapes[i], int64_t(i + 1));
      const auto in = random_inputs(p, seed++);
      for (int t : {8, 16}) {
        if (2 * std::max(p.at("r"), p.at("s")) - 1 > t) continue;
        const auto [rel_l2, max_rel] = reference_errors(fft_test_method(p, layer_pass_of(family), t, in), cpu_reference(p, in));
        EXPECT_LT(rel_l2, 1e-9) << p.key() << " t " << t;  // NaN (an output no tile wrote) fails
        EXPECT_LT(max_rel, 1e-9) << p.key() << " t " << t;
        ++checked;
      }
    }
  EXPECT_EQ(checked, 12);  // t = 8 fits the 3x3 shape only
}

// The kernels transform two real tile rows as one complex row: split_paired_bin must give each row's own
// spectrum, and join_paired_bin, from the two Hermitian halves, the complex spectrum whose inverse holds the
// rows in its real and imaginary parts. The kernels' own loops over the bins and rows are the GPU test's
// (GpuVariants.FftOnEveryTile).
TEST(LayerFft, PairedRowsSplitAndJoinAsTwoRealTransforms) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> value(-1, 1);
  for (int t : {8, 16, 32}) {
    const size_t n = size_t(t);
    std::vector<std::complex<double>> x(n), y(n), z(n), joined(n);
    for (int i = 0; i < t; ++i) {
      x[size_t(i)] = value(rng);
      y[size_t(i)] = value(rng);
      z[size_t(i)] = {x[size_t(i)].real(), y[size_t(i)].real()};
    }
    const auto X = fft_test_row_dft(x, false), Y = fft_test_row_dft(y, false), Z = fft_test_row_dft(z, false);
    for (int v = 0; v <= t / 2; ++v) {
      const std::complex<double> zv = Z[size_t(v)], zn = Z[size_t((t - v) % t)];
      FftTestComplex xs{}, ys{};
      split_paired_bin(FftTestComplex{zv.real(), zv.imag()}, FftTestComplex{zn.real(), zn.imag()}, xs, ys);
      EXPECT_NEAR(std::abs(std::complex<double>(xs.x, xs.y) - X[size_t(v)]), 0, 1e-12) << "t " << t << " bin " << v;
      EXPECT_NEAR(std::abs(std::complex<double>(ys.x, ys.y) - Y[size_t(v)]), 0, 1e-12) << "t " << t << " bin " << v;
      FftTestComplex jz{}, jn{};
      join_paired_bin(FftTestComplex{X[size_t(v)].real(), X[size_t(v)].imag()},
                      FftTestComplex{Y[size_t(v)].real(), Y[size_t(v)].imag()}, jz, jn);
      joined[size_t(v)] = {jz.x, jz.y};
      if (v > 0 && v < t / 2) joined[size_t(t - v)] = {jn.x, jn.y};  // as the inverse kernel takes them
    }
    const auto rows = fft_test_row_dft(joined, true);
    for (int i = 0; i < t; ++i) {
      EXPECT_NEAR(rows[size_t(i)].real() / t, x[size_t(i)].real(), 1e-12) << "t " << t << " element " << i;
      EXPECT_NEAR(rows[size_t(i)].imag() / t, y[size_t(i)].real(), 1e-12) << "t " << t << " element " << i;
    }
  }
}

TEST(LayerFft, RefusesWhatTheTiledFftCannotDo) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* family : kLayerPassFamilies) {
    const Variant& v = Registry::instance().get(std::string(family) + ".fft");
    const Config c{{"tile", 16}};
    EXPECT_TRUE(v.can_implement(fft_test_shape(family, {2, 3, 20, 20, 4, 7, 7, 3, 3, 1, 1}), c, dev).ok);
    const Status strided = v.can_implement(fft_test_shape(family, {2, 3, 20, 20, 4, 7, 7, 3, 3, 2, 2}), c, dev);
    EXPECT_FALSE(strided.ok);
    EXPECT_TRUE(contains(strided.reason, "stride 1")) << strided.reason;
    const Status small = v.can_implement(fft_test_shape(family, {2, 3, 20, 20, 4, 1, 1, 0, 0, 1, 1}), c, dev);
    EXPECT_FALSE(small.ok);
    EXPECT_TRUE(contains(small.reason, "under 3 taps")) << small.reason;
    const Status tight = v.can_implement(fft_test_shape(family, {2, 3, 20, 20, 4, 9, 9, 4, 4, 1, 1}), c, dev);
    EXPECT_FALSE(tight.ok);  // 16 < 2 * 9 - 1
    EXPECT_TRUE(contains(tight.reason, "fewer outputs a tile than filter taps")) << tight.reason;
    const Status odd = v.can_implement(fft_test_shape(family, {2, 3, 20, 20, 4, 3, 3, 1, 1, 1, 1}), {{"tile", 12}}, dev);
    EXPECT_FALSE(odd.ok);
    EXPECT_TRUE(contains(odd.reason, "tile 12 is not one of 8, 16, 32")) << odd.reason;
  }
}

// The space stops at the first tile that covers the tiled extent in one: a larger one only pads more.
TEST(LayerFft, SpaceStopsAtOneTileAMap) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = Registry::instance().get("layer_fwd.fft");
  const ParamSpace space = v.space(fft_test_shape("layer_fwd", {8, 64, 7, 7, 64, 7, 7, 3, 3, 1, 1}), dev);
  std::vector<int> tiles;
  for (const Config& c : space.enumerate())
    tiles.push_back(c.at("tile").get<int>());
  EXPECT_EQ(tiles, (std::vector<int>{16}));  // 7x7 outputs: one 16 x 16 tile (10 outputs a side) covers them
  const ParamSpace wide = v.space(fft_test_shape("layer_fwd", {8, 64, 56, 56, 64, 5, 5, 2, 2, 1, 1}), dev);
  tiles.clear();
  for (const Config& c : wide.enumerate())
    tiles.push_back(c.at("tile").get<int>());
  EXPECT_EQ(tiles, (std::vector<int>{16, 32}));  // 5x5 needs t >= 9
}
