// The convolution-layer families without a GPU: layer_fwd's cross-correlation, bias and ReLU against
// hand-computed values; layer_bwd_data and layer_bwd_filter as its adjoints, by the identity
// <fwd(x, w), dy> = <x, bwd_data(dy, w)> = <w, bwd_filter(x, dy)> on random shapes and data; pooling's three
// ops by hand; the output-size, padding and size rules with clear errors; the operands and flop counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "harness/error.h"
#include "harness/family.h"

#include "tests/cpu/test_support.h"

using namespace convtune;
using namespace convtune::test;

namespace {

const char* const kLayerFamilies[] = {"layer_fwd", "layer_bwd_data", "layer_bwd_filter", "layer_pool"};

Problem layer(const std::string& family, json dims, const std::string& where = "p") {
  dims["family"] = family;
  return Problem::from_json(dims, where);
}


void expect_error_names(const std::string& error, const std::vector<std::string>& parts) {
  for (const auto& part : parts) EXPECT_TRUE(contains(error, part)) << "'" << error << "' lacks '" << part << "'";
}

std::vector<float> uniform(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> out(n);
  for (auto& value : out) value = dist(rng);
  return out;
}

double dot(const std::vector<double>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * double(b[i]);
  return sum;
}

double norm(const std::vector<double>& a) {
  double sum = 0;
  for (double value : a) sum += value * value;
  return std::sqrt(sum);
}

double norm(const std::vector<float>& a) { return norm(std::vector<double>(a.begin(), a.end())); }

// x = 1..9 as a 3 x 3 image: row y holds 3y+1, 3y+2, 3y+3.
const std::vector<float> kImage3x3 = {1, 2, 3, 4, 5, 6, 7, 8, 9};

}  // namespace

// ---- 1. the forward convention -------------------------------------------------------------------------

TEST(LayerForward, CrossCorrelationWithPadStrideBiasAndRelu) {
  // 3x3 image, pad 1, stride 2: P = Q = (3 + 2 - 3)/2 + 1 = 2, output (p, q) reads rows 2p-1..2p+1.
  // Filter 0 has taps (1,1) = 1 and (1,2) = 2: y = x[2p][2q] + 2 x[2p][2q+1] (column 3 is padding)
  //   = [1+4, 3+0, 7+16, 9+0] = [5, 3, 23, 9]. A flipped (true) convolution would read 2q-1 instead.
  // Filter 1 has tap (0,0) = -1: y = -x[2p-1][2q-1] = [0, 0, 0, -5] (only (1,1) is inside the image).
  std::vector<float> filter(2 * 9, 0.f);
  filter[0 * 9 + 1 * 3 + 1] = 1;
  filter[0 * 9 + 1 * 3 + 2] = 2;
  filter[1 * 9 + 0] = -1;
  const json shape = {{"n", 1}, {"c", 1}, {"h", 3}, {"w", 3}, {"k", 2}, {"r", 3}, {"s", 3},
                      {"pad_h", 1}, {"pad_w", 1}, {"u", 2}, {"v", 2}};
  json plain = shape, biased = shape, both = shape;
  biased["bias"] = 1;
  both["bias"] = 1;
  both["relu"] = 1;
  const std::vector<float> bias = {-4, 0.5};
  expect_values(cpu_reference(layer("layer_fwd", plain), {kImage3x3, filter}), {5, 3, 23, 9, 0, 0, 0, -5}, "plain");
  // + bias[k]: [1, -1, 19, 5, 0.5, 0.5, 0.5, -4.5]; ReLU after the bias zeroes -1 and -4.5.
  expect_values(cpu_reference(layer("layer_fwd", biased), {kImage3x3, filter, bias}),
                {1, -1, 19, 5, 0.5, 0.5, 0.5, -4.5}, "bias");
  expect_values(cpu_reference(layer("layer_fwd", both), {kImage3x3, filter, bias}), {1, 0, 19, 5, 0.5, 0.5, 0.5, 0},
                "bias + relu");
}

TEST(LayerForward, SumsOverInputMapsPerImage) {
  // n = 2, c = 2, 1 x 2 images, one 1x1 filter (10, 1): y[n][q] = 10 x[n][0][q] + x[n][1][q].
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, filter = {10, 1};
  const Problem p = layer("layer_fwd", {{"n", 2}, {"c", 2}, {"h", 1}, {"w", 2}, {"k", 1}, {"r", 1}, {"s", 1}});
  expect_values(cpu_reference(p, {x, filter}), {13, 24, 57, 68}, "1x1 over two maps");
  // R != S, no padding, stride 1: a 1 x 2 filter (1, -1) over each row: y = x[y][q] - x[y][q+1] = -1 each.
  const Problem rs = layer("layer_fwd", {{"n", 1}, {"c", 1}, {"h", 3}, {"w", 3}, {"k", 1}, {"r", 1}, {"s", 2}});
  expect_values(cpu_reference(rs, {kImage3x3, {1, -1}}), {-1, -1, -1, -1, -1, -1}, "1 x 2 filter");
}

// ---- 2. the backward passes are the forward's adjoints ------------------------------------------------

TEST(LayerBackward, AdjointIdentitiesOnRandomShapes) {
  std::mt19937 rng(2024);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 200; ++trial) {
    json shape = {{"n", pick(1, 3)}, {"c", pick(1, 4)}, {"k", pick(1, 4)}, {"r", pick(1, 4)}, {"s", pick(1, 4)},
                  {"u", pick(1, 3)}, {"v", pick(1, 3)}};
    shape["pad_h"] = pick(0, shape["r"].get<int64_t>() - 1);
    shape["pad_w"] = pick(0, shape["s"].get<int64_t>() - 1);
    shape["h"] = pick(std::max<int64_t>(1, shape["r"].get<int64_t>() - 2 * shape["pad_h"].get<int64_t>()), 12);
    shape["w"] = pick(std::max<int64_t>(1, shape["s"].get<int64_t>() - 2 * shape["pad_w"].get<int64_t>()), 12);
    const Problem fwd = layer("layer_fwd", shape), data = layer("layer_bwd_data", shape),
                  filt = layer("layer_bwd_filter", shape);
    const auto ops = fwd.operands();
    const auto x = uniform(size_t(ops[0].elements), rng), w = uniform(size_t(ops[1].elements), rng),
               dy = uniform(size_t(ops[2].elements), rng);
    const auto y = cpu_reference(fwd, {x, w}), dx = cpu_reference(data, {dy, w}), dw = cpu_reference(filt, {x, dy});
    ASSERT_EQ(int64_t(dx.size()), data.output_elements()) << data.key();
    ASSERT_EQ(int64_t(dw.size()), filt.output_elements()) << filt.key();
    const double forward = dot(y, dy);
    const double scale = norm(y) * norm(dy) + norm(x) * norm(dx) + norm(w) * norm(dw);  // bounds each side
    EXPECT_NEAR(dot(dx, x), forward, 1e-10 * scale) << "<x, bwd_data(dy, w)> on " << fwd.key();
    EXPECT_NEAR(dot(dw, w), forward, 1e-10 * scale) << "<w, bwd_filter(x, dy)> on " << fwd.key();
  }
}

TEST(LayerBackward, StrideLeavesUnreadPixelsZero) {
  // 1x1 filter (2), stride 2 on a 3 x 3 image: outputs read x[0][0], x[0][2], x[2][0], x[2][2].
  const json shape = {{"n", 1}, {"c", 1}, {"h", 3}, {"w", 3}, {"k", 1}, {"r", 1}, {"s", 1}, {"u", 2}, {"v", 2}};
  expect_values(cpu_reference(layer("layer_bwd_data", shape), {{1, 2, 3, 4}, {2}}), {2, 0, 4, 0, 0, 0, 6, 0, 8},
                "bwd_data");
  // dw = sum over outputs of x under the tap times dy = 1*1 + 3*2 + 7*3 + 9*4 = 64.
  expect_values(cpu_reference(layer("layer_bwd_filter", shape), {kImage3x3, {1, 2, 3, 4}}), {64}, "bwd_filter");
}

// ---- 3. pooling by hand ---------------------------------------------------------------------------------

TEST(LayerPool, ThreeByThreeStrideTwoPadOneEachOp) {
  // x = -(1..9); windows rows/cols 2p-1..2p+1: (0,0) sees {-1,-2,-4,-5}, (0,1) {-2,-3,-5,-6},
  // (1,0) {-4,-5,-7,-8}, (1,1) {-5,-6,-8,-9}. Max ignores the padding (a padded 0 would win).
  std::vector<float> x;
  for (float value : kImage3x3) x.push_back(-value);
  const json shape = {{"n", 1}, {"c", 1}, {"h", 3}, {"w", 3}, {"r", 3}, {"s", 3},
                      {"pad_h", 1}, {"pad_w", 1}, {"u", 2}, {"v", 2}};
  json max = shape, include = shape, exclude = shape;
  max["op"] = 0;
  include["op"] = 1;
  exclude["op"] = 2;
  expect_values(cpu_reference(layer("layer_pool", max), {x}), {-1, -2, -4, -5}, "max");
  expect_values(cpu_reference(layer("layer_pool", include), {x}), {-12.0 / 9, -16.0 / 9, -24.0 / 9, -28.0 / 9},
                "average including padding: / 9");
  expect_values(cpu_reference(layer("layer_pool", exclude), {x}), {-3, -4, -6, -7}, "average excluding padding: / 4");
}

TEST(LayerPool, TwoByTwoStrideTwoDropsTheOddEdge) {
  // 5 x 3 image, two maps, n = 1: P = (5-2)/2+1 = 2, Q = (3-2)/2+1 = 1; row 4 and column 2 are read by none.
  std::vector<float> x(30);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);  // map 0: 0..14, map 1: 15..29, row y at 3y
  const json shape = {{"n", 1}, {"c", 2}, {"h", 5}, {"w", 3}, {"r", 2}, {"s", 2}, {"u", 2}, {"v", 2}};
  json max = shape, average = shape;
  max["op"] = 0;
  average["op"] = 2;
  // map 0: {0,1,3,4} and {6,7,9,10}; map 1: those + 15.
  expect_values(cpu_reference(layer("layer_pool", max), {x}), {4, 10, 19, 25}, "max");
  expect_values(cpu_reference(layer("layer_pool", average), {x}), {2, 8, 17, 23}, "average");
  EXPECT_EQ(layer("layer_pool", max).output_elements(), 4);
}

// ---- 4. validation with clear errors --------------------------------------------------------------------

TEST(LayerProblem, EmptyOutputNamesTheExtent) {
  std::string e = input_error([] {
    layer("layer_fwd", {{"n", 1}, {"c", 1}, {"h", 2}, {"w", 8}, {"k", 1}, {"r", 3}, {"s", 3}}, "spec.problems[1]");
  });
  expect_error_names(e, {"spec.problems[1].h", "empty output", "h + 2*pad_h >= r"});
  e = input_error([] {
    layer("layer_bwd_filter", {{"n", 1}, {"c", 1}, {"h", 8}, {"w", 1}, {"k", 1}, {"r", 3}, {"s", 4}, {"pad_w", 1}});
  });
  expect_error_names(e, {"p.w", "w + 2*pad_w = 3 < s = 4", "w + 2*pad_w >= s"});
  // Padding rescues it: h = 1, r = 3, pad 1 gives P = 1.
  EXPECT_EQ(layer("layer_fwd", {{"n", 1}, {"c", 1}, {"h", 1}, {"w", 1}, {"k", 1}, {"r", 3}, {"s", 3}, {"pad_h", 1},
                                {"pad_w", 1}})
                .output_elements(),
            1);
}

TEST(LayerProblem, PaddingMustBeSmallerThanTheFilter) {
  std::string e = input_error([] {
    layer("layer_bwd_data", {{"n", 1}, {"c", 1}, {"h", 8}, {"w", 8}, {"k", 1}, {"r", 3}, {"s", 3}, {"pad_h", 3}});
  });
  expect_error_names(e, {"p.pad_h", "3 >= r = 3", "0..2"});
  e = input_error([] {
    layer("layer_pool", {{"n", 1}, {"c", 1}, {"h", 8}, {"w", 8}, {"r", 2}, {"s", 2}, {"pad_w", 2}, {"u", 2}, {"v", 2}});
  });
  expect_error_names(e, {"p.pad_w", "2 >= s = 2", "0..1"});
  e = input_error([] {
    layer("layer_fwd", {{"n", 1}, {"c", 1}, {"h", 8}, {"w", 8}, {"k", 1}, {"r", 1}, {"s", 1}, {"pad_h", 1}});
  });
  expect_error_names(e, {"p.pad_h", "allowed: 0..0"});
}

TEST(LayerProblem, UnknownOpMissingDimAndRanges) {
  std::string e = input_error([] {
    layer("layer_pool", {{"n", 1}, {"c", 1}, {"h", 4}, {"w", 4}, {"r", 2}, {"s", 2}, {"u", 2}, {"v", 2}, {"op", 3}});
  });
  expect_error_names(e, {"p.op", "0..2", "max", "average"});
  e = input_error([] { layer("layer_fwd", {{"n", 1}, {"c", 1}, {"h", 4}, {"w", 4}, {"r", 3}, {"s", 3}}); });
  expect_error_names(e, {"p.k", "missing"});
  // Pooling has no default stride (PyTorch's would be the window): it must be given.
  e = input_error([] { layer("layer_pool", {{"n", 1}, {"c", 1}, {"h", 4}, {"w", 4}, {"r", 2}, {"s", 2}}); });
  expect_error_names(e, {"p.u", "missing"});
  e = input_error([] {
    layer("layer_fwd", {{"n", 1}, {"c", 1}, {"h", 4}, {"w", 4}, {"k", 1}, {"r", 3}, {"s", 3}, {"relu", 4}});
  });
  expect_error_names(e, {"p.relu", "0..3"});
  e = input_error([] {
    layer("layer_bwd_data", {{"n", 1}, {"c", 1}, {"h", 4}, {"w", 4}, {"k", 1}, {"r", 3}, {"s", 3}, {"bias", 1}});
  });
  expect_error_names(e, {"p.bias", "unknown dimension", "precision"});
  e = input_error([] {
    layer("layer_bwd_filter", {{"n", 1}, {"c", 1}, {"h", 4}, {"w", 4}, {"k", 1}, {"r", 3}, {"s", 3}, {"precision", 2}});
  });
  expect_error_names(e, {"p.precision", "0..1", "tf32"});
}

TEST(LayerProblem, EveryTensorStaysUnderTwoToThe31) {
  // x: 32768 * 256 * 256 = 2^31 is one too many; one column less fits.
  std::string e = input_error([] {
    layer("layer_fwd", {{"n", 32768}, {"c", 1}, {"h", 256}, {"w", 256}, {"k", 1}, {"r", 1}, {"s", 1}});
  });
  expect_error_names(e, {"p.n, p.c, p.h, p.w", "input x", "n*c*h*w", "2147483648 elements", "fewer than 2^31"});
  EXPECT_NO_THROW(layer("layer_fwd", {{"n", 32768}, {"c", 1}, {"h", 256}, {"w", 255}, {"k", 1}, {"r", 1}, {"s", 1}}));
  // The largest dims together overflow int64 (2^64): still a clear error, not a wrapped product.
  e = input_error([] {
    layer("layer_pool",
          {{"n", 65536}, {"c", 65536}, {"h", 65536}, {"w", 65536}, {"r", 1}, {"s", 1}, {"u", 1}, {"v", 1}});
  });
  expect_error_names(e, {"p.n, p.c, p.h, p.w", "18446744073709551616 elements"});
  // filter: 65536 * 65536 * 1 * 1.
  e = input_error([] {
    layer("layer_bwd_data", {{"n", 1}, {"c", 65536}, {"h", 1}, {"w", 1}, {"k", 65536}, {"r", 1}, {"s", 1}});
  });
  expect_error_names(e, {"p.k, p.c, p.r, p.s", "filter", "k*c*r*s"});
  // output: 1024 * 65536 * 64 * 64 = 2^38 while x (2^22) and the filter (2^16) fit.
  e = input_error([] {
    layer("layer_bwd_filter", {{"n", 1024}, {"c", 1}, {"h", 64}, {"w", 64}, {"k", 65536}, {"r", 1}, {"s", 1}});
  });
  expect_error_names(e, {"p.n, p.k, p.h, p.w", "output y", "n*k*P*Q"});
}

// ---- 5. operands, flops, the families' own shapes ------------------------------------------------------

TEST(LayerProblem, OperandsInOrderWithTheOptionalBias) {
  // 2 x 3 x 7 x 9, 5 filters 3 x 2, pad (1, 0), stride (2, 1): P = (7+2-3)/2+1 = 4, Q = (9-2)/1+1 = 8.
  const json shape = {{"n", 2}, {"c", 3}, {"h", 7}, {"w", 9}, {"k", 5}, {"r", 3}, {"s", 2},
                      {"pad_h", 1}, {"pad_w", 0}, {"u", 2}, {"v", 1}};
  auto names_and_sizes = [](const Problem& p) {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& o : p.operands()) out.push_back({o.name, o.elements});
    return out;
  };
  using Ops = std::vector<std::pair<std::string, int64_t>>;
  json biased = shape;
  biased["bias"] = 1;
  EXPECT_EQ(names_and_sizes(layer("layer_fwd", shape)), (Ops{{"x", 378}, {"filter", 90}, {"y", 320}}));
  EXPECT_EQ(names_and_sizes(layer("layer_fwd", biased)), (Ops{{"x", 378}, {"filter", 90}, {"bias", 5}, {"y", 320}}));
  EXPECT_EQ(names_and_sizes(layer("layer_bwd_data", shape)), (Ops{{"dy", 320}, {"filter", 90}, {"dx", 378}}));
  EXPECT_EQ(names_and_sizes(layer("layer_bwd_filter", shape)), (Ops{{"x", 378}, {"dy", 320}, {"dw", 90}}));
  json pool = shape;
  pool.erase("k");
  EXPECT_EQ(names_and_sizes(layer("layer_pool", pool)), (Ops{{"x", 378}, {"y", 2 * 3 * 4 * 8}}));
  // Defaults: no bias, no ReLU, strict fp32; stride 1 and no padding for the convolutions.
  const Problem p = layer("layer_fwd", {{"n", 1}, {"c", 1}, {"h", 4}, {"w", 4}, {"k", 1}, {"r", 3}, {"s", 3}});
  EXPECT_EQ(p.at("bias"), 0);
  EXPECT_EQ(p.at("relu"), 0);
  EXPECT_EQ(p.at("precision"), 0);
  EXPECT_EQ(p.at("u"), 1);
  EXPECT_EQ(p.at("pad_w"), 0);
  EXPECT_EQ(p.output_elements(), 4);
}

TEST(LayerProblem, DirectFlopsByHand) {
  // N32 C64 56x56 K64 R3 pad1: P = Q = 56; 2 * 32*64*56*56 outputs * 64*9 taps.
  EXPECT_DOUBLE_EQ(find_family("layer_fwd").example().direct_flops(), 2.0 * 32 * 64 * 56 * 56 * 64 * 9);
  EXPECT_DOUBLE_EQ(find_family("layer_bwd_data").example().direct_flops(), 2.0 * 32 * 64 * 56 * 56 * 64 * 9);
  EXPECT_DOUBLE_EQ(find_family("layer_bwd_filter").example().direct_flops(), 2.0 * 32 * 64 * 56 * 56 * 64 * 9);
  // Pooling 3x3 stride 2 pad 1 on 112x112: P = Q = 56; one operation per (output, window tap).
  EXPECT_DOUBLE_EQ(find_family("layer_pool").example().direct_flops(), 32.0 * 64 * 56 * 56 * 9);
}

TEST(LayerFamilies, TestShapesAreValidSmallAndTheReferencesFillThem) {
  std::mt19937 rng(5);
  for (const char* name : kLayerFamilies) {
    const Family& fam = find_family(name);
    EXPECT_TRUE(contains(fam.summary(), "NCHW")) << name;
    const auto problems = fam.test_problems();
    EXPECT_GE(problems.size(), 6u) << name;
    EXPECT_LE(problems.size(), 10u) << name;
    for (Problem p : problems) {
      const Problem copy = p;
      validate(p, "test");
      EXPECT_EQ(p, copy) << "a test shape misses a default: " << p.key();
      EXPECT_LE(p.direct_flops(), 2e7) << "too large for the CPU reference: " << p.key();
      std::vector<std::vector<float>> inputs;
      const auto ops = p.operands();
      for (size_t i = 0; i + 1 < ops.size(); ++i) inputs.push_back(uniform(size_t(ops[i].elements), rng));
      const auto out = cpu_reference(p, inputs);
      EXPECT_EQ(int64_t(out.size()), p.output_elements()) << p.key();
      EXPECT_GT(norm(out), 0) << p.key();
    }
    for (const auto& d : fam.constraint_dims()) {
      const auto dims = fam.dims();
      EXPECT_TRUE(std::any_of(dims.begin(), dims.end(), [&](const DimSpec& s) { return s.name == d; }))
          << name << " constraint " << d;
    }
    EXPECT_NO_THROW(fam.example()) << name;
  }
}
