#include "harness/cuda_raii.h"
#include "harness/error.h"
#include "harness/family.h"
#include "harness/gpu_kernels.h"
#include "variants/layer_pool/layer_pool.h"

namespace convtune {
namespace {

__global__ void reference_pool_kernel(LayerShape l, const float* __restrict__ x, int64_t op, double* __restrict__ y) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < l.y_elements();
       o += int64_t(gridDim.x) * blockDim.x)
    y[o] = pool_at(l, x, op, o);
}

class LayerPoolFamily : public Family {
 public:
  std::string name() const override { return kLayerPool; }
  std::string summary() const override {
    return "NCHW pooling forward, window r x s, stride u/v, zero padding, P = (h+2pad_h-r)/u+1; op 0 = max "
           "(padding ignored), 1 = average over r*s (padded zeros count), 2 = average over the pixels inside";
  }
  std::vector<DimSpec> dims() const override {
    auto d = layer_shape_dims(true);
    d.push_back({"op", kPoolMax, kPoolAverageExcludingPadding,
                 "0 = max, 1 = average including padding, 2 = average excluding padding", true, kPoolMax});
    return d;
  }
  void check(const Problem& p, const std::string& where) const override { check_layer_shape(p, where); }
  std::vector<Operand> operands(const Problem& p) const override {
    const LayerShape l(p);
    return {{"x", l.x_elements()}, {"y", l.y_elements()}};
  }
  // One compare or add per (output, window tap); there are no multiplies.
  double direct_flops(const Problem& p) const override {
    const LayerShape l(p);
    return double(l.y_elements()) * double(l.r * l.s);
  }
  Problem example() const override {  // ResNet's stem pooling: 3x3 stride 2 pad 1 on 112x112x64
    return layer_problem(kLayerPool, dims(), {32, 64, 112, 112, 3, 3, 1, 1, 2, 2, kPoolMax});
  }
  // 2x2 stride 2 on odd sizes (the last row and column dropped), 3x3 stride 2 pad 1, overlapping windows
  // (stride 1), R != S, a 1x1 window, C = 1 and n > 1, each op. Values in dims() order:
  // n c h w r s pad_h pad_w u v op.
  std::vector<Problem> test_problems() const override {
    std::vector<Problem> out;
    for (const std::vector<int64_t>& v : std::vector<std::vector<int64_t>>{{1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0},
                                                                         {2, 3, 8, 8, 2, 2, 0, 0, 2, 2, 0},
                                                                         {1, 2, 9, 7, 2, 2, 0, 0, 2, 2, 1},
                                                                         {2, 4, 13, 11, 3, 3, 1, 1, 2, 2, 0},
                                                                         {1, 3, 13, 11, 3, 3, 1, 1, 2, 2, 1},
                                                                         {3, 1, 15, 17, 3, 3, 1, 1, 2, 2, 2},
                                                                         {1, 5, 10, 9, 3, 2, 2, 1, 1, 1, 2},
                                                                         {2, 2, 7, 7, 7, 7, 3, 3, 1, 1, 1},
                                                                         {1, 6, 12, 14, 5, 3, 0, 2, 3, 2, 0}})
      out.push_back(layer_problem(kLayerPool, dims(), v));
    return out;
  }
  // The window and stride are compile-time in pooling kernels, padding changes which pixels count, op
  // changes the operation; c is just the number of independent planes.
  std::vector<std::string> constraint_dims() const override { return {"r", "s", "u", "v", "pad_h", "pad_w", "op"}; }

  std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& in) const override {
    const LayerShape l(p);
    std::vector<double> y(size_t(l.y_elements()));
    for (int64_t o = 0; o < l.y_elements(); ++o) y[size_t(o)] = pool_at(l, in.at(0).data(), p.at("op"), o);
    return y;
  }
  void gpu_reference(const Problem& p, const std::vector<const float*>& in, double* out,
                     cudaStream_t s) const override {
    const LayerShape l(p);
    reference_pool_kernel<<<grid_for(l.y_elements(), 256), 256, 0, s>>>(l, in.at(0), p.at("op"), out);
    CT_CHECK_LAUNCH();
  }
};

}  // namespace

CONVTUNE_REGISTER_FAMILY(LayerPoolFamily);

}  // namespace convtune
