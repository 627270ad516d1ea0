// The im2col + cuBLAS GEMM variants of the three layer passes and layer_pool.direct without a GPU: their
// spaces and refusals, cost against hand-computed numbers, every NVRTC program over the whole space of the
// families' test shapes, and the column mapping of layer_im2col_index.cuh (the kernels' own index code):
// GEMMs on CPU-built column matrices, in float64, reproduce each family's cpu_reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "harness/family.h"
#include "harness/variant.h"
#include "variants/layer_common/layer_epilogue.h"
#include "variants/layer_common/layer_gemm.h"

#include "tests/cpu/test_support.h"
#include "test_support.h"

using namespace convtune;
using namespace convtune::test;

namespace {

const char* const kGemmVariants[] = {"layer_fwd.im2col_gemm", "layer_bwd_data.gemm_col2im",
                                     "layer_bwd_filter.im2col_gemm"};

Problem first_test_problem_with_n(const std::string& family, int64_t n) {
  for (const Problem& p : find_family(family).test_problems())
    if (p.at("n") == n) return p;
  throw std::logic_error("no test problem with n = " + std::to_string(n));
}

// dims in the family's dims() order, as the families' test shapes list them.
Problem layer_fwd_problem(const std::vector<int64_t>& values) {
  return layer_problem("layer_fwd", find_family("layer_fwd").dims(), values);
}

std::vector<json> space_values(const ParamSpace& space, const std::string& name) { return space.find(name)->values; }

TEST(LayerGemmSpace, ChunksStopAtTheBatchAndMathIsFp32OrTf32) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* name : kGemmVariants) {
    const Variant& v = Registry::instance().get(name);
    const Problem big = find_family(v.family()).example();  // n = 32
    EXPECT_EQ(space_values(v.space(big, dev), "chunk"), (std::vector<json>{1, 2, 4, 8, 16, 32})) << name;
    const Problem three = first_test_problem_with_n(v.family(), 3);
    EXPECT_EQ(space_values(v.space(three, dev), "chunk"), (std::vector<json>{1, 2, 3})) << name;
    EXPECT_EQ(space_values(v.space(big, dev), "math"), (std::vector<json>{"fp32", "tf32"})) << name;
    EXPECT_EQ(v.complexity(), 3) << name;
  }
  const Variant& pool = Registry::instance().get("layer_pool.direct");
  EXPECT_EQ(pool.space(find_family("layer_pool").example(), dev).size(), 12u);
}

TEST(LayerGemmSpace, Tf32OnlyUnderPrecisionOneAndChunkWithinTheBatch) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const char* name : kGemmVariants) {
    const Variant& v = Registry::instance().get(name);
    Problem p = find_family(v.family()).example();
    p.dims["precision"] = 0;
    const Status strict = v.can_implement(p, {{"chunk", 4}, {"math", "tf32"}}, dev);
    EXPECT_FALSE(strict) << name;
    EXPECT_TRUE(contains(strict.reason, "precision")) << strict.reason;
    EXPECT_TRUE(v.can_implement(p, {{"chunk", 4}, {"math", "fp32"}}, dev)) << name;
    EXPECT_FALSE(v.can_implement(p, {{"chunk", 4}, {"math", "3xtf32"}}, dev)) << name;
    EXPECT_FALSE(v.can_implement(p, {{"chunk", 64}, {"math", "fp32"}}, dev)) << name;  // n = 32
    p.dims["precision"] = 1;
    EXPECT_TRUE(v.can_implement(p, {{"chunk", 4}, {"math", "tf32"}}, dev)) << name;
    EXPECT_DOUBLE_EQ(v.tolerance(p, {{"chunk", 4}, {"math", "tf32"}}).rel_l2, 3e-3) << name;  // TF32's fixed bound
    EXPECT_DOUBLE_EQ(v.tolerance(p, {{"chunk", 4}, {"math", "tf32"}}).max_rel, 3e-2) << name;
  }
}

TEST(LayerGemmSpace, RefusesAColBufferBeyondTwoGibibytes) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Variant& v = Registry::instance().get("layer_fwd.im2col_gemm");
  // C*R*S * P*Q = 2304 * 50176 floats: 462 MB per image; 4 images fit under 2 GiB, 8 do not.
  const Problem p = layer_fwd_problem({32, 256, 224, 224, 64, 3, 3, 1, 1, 1, 1});
  EXPECT_TRUE(v.can_implement(p, {{"chunk", 4}, {"math", "fp32"}}, dev));
  const Status big = v.can_implement(p, {{"chunk", 8}, {"math", "fp32"}}, dev);
  EXPECT_FALSE(big);
  EXPECT_TRUE(contains(big.reason, "col buffer")) << big.reason;
  DeviceInfo small = dev;
  small.global_mem_bytes = int64_t(1) << 30;  // a quarter: 256 MiB
  EXPECT_FALSE(v.can_implement(p, {{"chunk", 1}, {"math", "fp32"}}, small));
}

// n2 c3 7x9 k5 3x3 pad 1: P = 7, Q = 9, CRS = 27, PQ = 63; x 378, filter 135, y 630 elements, col 2 * 1701.
TEST(LayerGemmCost, HandComputedOnOneShape) {
  const std::vector<int64_t> shape = {2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1};
  const Config chunk1 = {{"chunk", 1}, {"math", "fp32"}}, chunk2 = {{"chunk", 2}, {"math", "fp32"}};
  const double col_bytes = 8.0 * 2 * 27 * 63;  // 27216
  std::vector<int64_t> fwd_dims = shape;
  fwd_dims.insert(fwd_dims.end(), {1, 1, 0});  // bias, relu, precision
  const Problem fwd = layer_fwd_problem(fwd_dims);
  const Cost f = Registry::instance().get("layer_fwd.im2col_gemm").cost(fwd, chunk2);
  EXPECT_DOUBLE_EQ(f.flops, 2.0 * 630 * 27);  // 34020
  EXPECT_DOUBLE_EQ(f.flops_variant, 34020.0);
  EXPECT_DOUBLE_EQ(f.bytes_min, 4.0 * (378 + 135 + 5 + 630));           // 4592
  EXPECT_DOUBLE_EQ(f.bytes_model, 4592.0 + col_bytes + 8.0 * 630);      // + the epilogue's pass over y

  std::vector<int64_t> bwd_dims = shape;
  bwd_dims.push_back(0);  // precision
  const Problem data = layer_problem("layer_bwd_data", find_family("layer_bwd_data").dims(), bwd_dims);
  const Cost d = Registry::instance().get("layer_bwd_data.gemm_col2im").cost(data, chunk1);
  EXPECT_DOUBLE_EQ(d.flops_variant, 34020.0);
  EXPECT_DOUBLE_EQ(d.bytes_min, 4.0 * (630 + 135 + 378));  // 4572
  EXPECT_DOUBLE_EQ(d.bytes_model, 4572.0 + col_bytes);

  const Problem filter = layer_problem("layer_bwd_filter", find_family("layer_bwd_filter").dims(), bwd_dims);
  const Variant& bf = Registry::instance().get("layer_bwd_filter.im2col_gemm");
  EXPECT_DOUBLE_EQ(bf.cost(filter, chunk1).bytes_model, 4572.0 + col_bytes + 8.0 * 135);  // dw read back once
  EXPECT_DOUBLE_EQ(bf.cost(filter, chunk2).bytes_model, 4572.0 + col_bytes + 8.0 * 135 * 2);  // 2 partials

  EXPECT_DOUBLE_EQ(gemm_details(LayerShape(fwd), chunk2).at("expansion").get<double>(), 9.0);  // R*S, stride 1
  EXPECT_EQ(gemm_details(LayerShape(fwd), chunk2).at("chunk"), 2);
}

// Pooling 3x3 stride 2 pad 1 on n1 c2 9x9: P = Q = 5; two outputs per thread: 3 threads per row, span 5.
TEST(LayerGemmCost, PoolDirectHandComputed) {
  const Problem p = layer_problem("layer_pool", find_family("layer_pool").dims(), {1, 2, 9, 9, 3, 3, 1, 1, 2, 2, 0});
  const Cost c = Registry::instance().get("layer_pool.direct").cost(p, {{"outputs_per_thread", 2}, {"block", 64}});
  EXPECT_DOUBLE_EQ(c.flops, 50.0 * 9);
  EXPECT_DOUBLE_EQ(c.bytes_min, 4.0 * (162 + 50));
  EXPECT_DOUBLE_EQ(c.bytes_model, 4.0 * (2 * 5 * 3 * 3 * 5 + 50));  // threads * R * span, plus y
}

// Per variant, the programs of its whole space on the test shapes: on the CPU a covering sample (every
// define's value at least once), all of them with CONVTUNE_NVRTC_ALL=1.
TEST(LayerGemmCompile, ProgramsOverTheSpaceOfTheTestShapes) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  std::vector<JitProgram> programs;
  for (const char* name : {"layer_fwd.im2col_gemm", "layer_bwd_data.gemm_col2im", "layer_bwd_filter.im2col_gemm",
                           "layer_pool.direct"}) {
    const Variant& v = Registry::instance().get(name);
    std::vector<JitProgram> space;
    for (const Problem& p : find_family(v.family()).test_problems())
      for (const Config& c : v.space(p, dev).enumerate())
        if (v.can_implement(p, c, dev))
          for (const JitProgram& program : v.programs(p, c)) space.push_back(program);
    EXPECT_FALSE(space.empty()) << name;
    for (const JitProgram& program : covering_programs(space)) programs.push_back(program);
  }
  expect_all_compile(programs);
}

// ---- the column mapping, simulated on the CPU -------------------------------------------------------

using test::random_inputs;

// One image's column matrix, rows (c, i, j), columns (p, q), as layer_im2col writes it.
std::vector<double> im2col(const LayerShape& l, const float* image) {
  const LayerColShape g = col_shape(l);
  std::vector<double> col(size_t(layer_col_rows(g)) * size_t(layer_col_cols(g)));
  for (int ci = 0; ci < g.c; ++ci)
    for (int i = 0; i < g.r; ++i)
      for (int j = 0; j < g.s; ++j)
        for (int pi = 0; pi < g.p; ++pi)
          for (int qi = 0; qi < g.q; ++qi) {
            const int source = layer_col_source(g, ci, i, j, pi, qi);
            col[size_t(layer_col_row(g, ci, i, j)) * size_t(layer_col_cols(g)) + size_t(pi * g.q + qi)] =
                source >= 0 ? double(image[source]) : 0.0;
          }
  return col;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, const Problem& p) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-9 * (1.0 + std::abs(want[i]))) << p.key() << " [" << i << "]";
}

TEST(LayerGemmIndex, ForwardIsFilterTimesIm2col) {
  for (const Problem& p : find_family("layer_fwd").test_problems()) {
    const LayerShape l(p);
    const auto in = random_inputs(p, 1);
    const int64_t crs = l.c * l.r * l.s, pq = l.p * l.q;
    std::vector<double> y(size_t(l.y_elements()));
    for (int64_t b = 0; b < l.n; ++b) {
      const std::vector<double> col = im2col(l, in[0].data() + b * l.c * l.h * l.w);
      for (int64_t k = 0; k < l.k; ++k)
        for (int64_t o = 0; o < pq; ++o) {
          double sum = p.at("bias") == 1 ? double(in[2][size_t(k)]) : 0.0;
          for (int64_t e = 0; e < crs; ++e) sum += double(in[1][size_t(k * crs + e)]) * col[size_t(e * pq + o)];
          y[size_t((b * l.k + k) * pq + o)] = activate(activation_of(p), sum);
        }
    }
    expect_close(y, cpu_reference(p, in), p);
  }
}

TEST(LayerGemmIndex, BackwardDataIsCol2imOfFilterTransposedTimesDy) {
  for (const Problem& p : find_family("layer_bwd_data").test_problems()) {
    const LayerShape l(p);
    const LayerColShape g = col_shape(l);
    const auto in = random_inputs(p, 2);
    const int64_t crs = l.c * l.r * l.s, pq = l.p * l.q;
    std::vector<double> dx(size_t(l.x_elements()));
    for (int64_t b = 0; b < l.n; ++b) {
      std::vector<double> col(size_t(crs * pq));
      for (int64_t e = 0; e < crs; ++e)
        for (int64_t o = 0; o < pq; ++o)
          for (int64_t k = 0; k < l.k; ++k)
            col[size_t(e * pq + o)] += double(in[1][size_t(k * crs + e)]) * double(in[0][size_t((b * l.k + k) * pq + o)]);
      for (int ci = 0; ci < g.c; ++ci)  // the gather of layer_col2im
        for (int yi = 0; yi < g.h; ++yi)
          for (int xi = 0; xi < g.w; ++xi) {
            double sum = 0;
            for (int i = 0; i < g.r; ++i)
              for (int j = 0; j < g.s; ++j) {
                const int reader = layer_col_reader(g, yi, xi, i, j);
                if (reader >= 0) sum += col[size_t(layer_col_row(g, ci, i, j) * pq + reader)];
              }
            dx[size_t(l.x_index(b, ci, yi, xi))] = sum;
          }
    }
    expect_close(dx, cpu_reference(p, in), p);
  }
}

TEST(LayerGemmIndex, BackwardFilterIsDyTimesIm2colTransposed) {
  for (const Problem& p : find_family("layer_bwd_filter").test_problems()) {
    const LayerShape l(p);
    const auto in = random_inputs(p, 3);
    const int64_t crs = l.c * l.r * l.s, pq = l.p * l.q;
    std::vector<double> dw(size_t(l.filter_elements()));
    for (int64_t b = 0; b < l.n; ++b) {
      const std::vector<double> col = im2col(l, in[0].data() + b * l.c * l.h * l.w);
      for (int64_t k = 0; k < l.k; ++k)
        for (int64_t e = 0; e < crs; ++e)
          for (int64_t o = 0; o < pq; ++o)
            dw[size_t(k * crs + e)] += double(in[1][size_t((b * l.k + k) * pq + o)]) * col[size_t(e * pq + o)];
    }
    expect_close(dw, cpu_reference(p, in), p);
  }
}

}  // namespace
