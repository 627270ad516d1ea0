#include "harness/cuda_raii.h"
#include "harness/error.h"
#include "harness/gpu_kernels.h"
#include "variants/layer_common/layer_family.h"
#include "variants/layer_common/layer_variant.h"
#include "variants/layer_fwd/layer_fwd.h"

namespace convtune {
namespace {

__global__ void reference_forward_kernel(LayerShape l, const float* __restrict__ x, const float* __restrict__ filter,
                                         const float* __restrict__ bias, Activation act, double* __restrict__ y) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < l.y_elements();
       o += int64_t(gridDim.x) * blockDim.x)
    y[o] = forward_at(l, x, filter, bias, act, o);
}

class LayerFwdFamily : public LayerConvolutionFamily {
 public:
  std::string name() const override { return kLayerFwd; }
  std::string summary() const override {
    return "NCHW convolution layer forward, cuDNN cross-correlation: y[n,k,p,q] = sum_{c,i,j} "
           "x[n,c,p*u-pad_h+i,q*v-pad_w+j] w[k,c,i,j] (+ bias[k]), then the activation relu (0 none, "
           "1 ReLU, 2 sigmoid, 3 tanh), zero padding, P = (h+2pad_h-r)/u+1; precision 0 = strict fp32, 1 = tf32 allowed";
  }
  std::vector<std::pair<std::string, std::string>> model_quantities() const override {
    return gemm_quantities(output_pixels(), "k", "c r * s *");
  }
  std::vector<Operand> operands(const Problem& p) const override {
    const LayerShape l(p);
    const double w_amplitude = squashes(activation_of(p)) ? unit_sum_amplitude(forward_sum_length(l)) : 1.0;
    std::vector<Operand> ops = {{"x", l.x_elements()}, {"filter", l.filter_elements(), w_amplitude}};
    if (p.at("bias") == 1) ops.push_back({"bias", l.k});
    ops.push_back({"y", l.y_elements()});
    return ops;
  }
  Tolerance output_tolerance(const Problem& p, const Tolerance& method) const override {
    return squashed_tolerance(activation_of(p), method);
  }
  // Odd sizes, C = 1 and K = 1, R != S, stride 2 and mixed strides, pad 0 and > 0, 1x1, n > 1, bias and
  // ReLU alone and together, bias + sigmoid, tanh alone, tf32, and K = 70 maps over C = 33 (two column tiles
  // of 64, a sum of 297 terms: partial GEMM tiles everywhere). Values in dims() order: n c h w k r s pad_h
  // pad_w u v bias relu precision (relu: the activation, 0 none, 1 ReLU, 2 sigmoid, 3 tanh).
  std::vector<Problem> test_problems() const override {
    std::vector<Problem> out;
    for (const std::vector<int64_t>& v : std::vector<std::vector<int64_t>>{{1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0},
                                                                         {2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 0},
                                                                         {1, 1, 13, 11, 1, 5, 3, 2, 1, 2, 2, 0, 1, 0},
                                                                         {3, 4, 17, 15, 8, 1, 1, 0, 0, 1, 1, 1, 0, 0},
                                                                         {2, 5, 31, 29, 7, 7, 7, 3, 3, 2, 2, 1, 2, 0},
                                                                         {1, 8, 10, 12, 3, 3, 2, 0, 1, 1, 2, 0, 0, 0},
                                                                         {4, 2, 6, 7, 16, 3, 3, 1, 1, 2, 1, 0, 3, 0},
                                                                         {1, 3, 9, 9, 4, 3, 3, 1, 1, 1, 1, 0, 0, 1},
                                                                         {2, 33, 9, 11, 70, 3, 3, 1, 1, 1, 1, 1, 1, 0}})
      out.push_back(layer_problem(kLayerFwd, dims(), v));
    return out;
  }

  std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& in) const override {
    const LayerShape l(p);
    const float* bias = p.at("bias") == 1 ? in.at(2).data() : nullptr;
    std::vector<double> y(size_t(l.y_elements()));
    for (int64_t o = 0; o < l.y_elements(); ++o)
      y[size_t(o)] = forward_at(l, in.at(0).data(), in.at(1).data(), bias, activation_of(p), o);
    return y;
  }
  void gpu_reference(const Problem& p, const std::vector<const float*>& in, double* out,
                     cudaStream_t s) const override {
    const LayerShape l(p);
    const float* bias = p.at("bias") == 1 ? in.at(2) : nullptr;
    reference_forward_kernel<<<grid_for(l.y_elements(), 256), 256, 0, s>>>(l, in.at(0), in.at(1), bias,
                                                                            activation_of(p), out);
    CT_CHECK_LAUNCH();
  }

 protected:
  std::vector<DimSpec> operation_dims() const override {
    return {{"bias", 0, 1, "1 = add bias[k] (an operand)", true, 0},
            {kActivationDim, 0, kActivationCount - 1, kActivationMeaning, true, 0}};
  }
};

}  // namespace

CONVTUNE_REGISTER_FAMILY(LayerFwdFamily);

}  // namespace convtune
