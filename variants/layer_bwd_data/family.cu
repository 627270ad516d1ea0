#include "harness/cuda_raii.h"
#include "harness/error.h"
#include "harness/gpu_kernels.h"
#include "variants/layer_common/layer_family.h"
#include "variants/layer_bwd_data/layer_bwd_data.h"

namespace convtune {
namespace {

__global__ void reference_bwd_data_kernel(LayerShape l, const float* __restrict__ dy,
                                          const float* __restrict__ filter, double* __restrict__ dx) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < l.x_elements();
       o += int64_t(gridDim.x) * blockDim.x)
    dx[o] = bwd_data_at(l, dy, filter, o);
}

class LayerBwdDataFamily : public LayerConvolutionFamily {
 public:
  std::string name() const override { return kLayerBwdData; }
  std::string summary() const override {
    return "NCHW convolution layer backward-data dE/dX, the adjoint of layer_fwd's cross-correlation (no bias, "
           "no ReLU): dx[n,c,y,x] = sum of dy[n,k,p,q] w[k,c,i,j] over p*u-pad_h+i = y, q*v-pad_w+j = x; "
           "precision 0 = strict fp32, 1 = tf32 allowed";
  }
  std::vector<std::pair<std::string, std::string>> model_quantities() const override {
    return gemm_quantities("n h * w *", "c", "k r * s *");
  }
  std::vector<Operand> operands(const Problem& p) const override {
    const LayerShape l(p);
    return {{"dy", l.y_elements()}, {"filter", l.filter_elements()}, {"dx", l.x_elements()}};
  }
  // As layer_fwd's, plus stride 2 with a 1x1 filter (every other pixel gets nothing) and a last row no
  // output reads (h = 10, r = 3, u = 2), and C = 70 over K = 33 (two column tiles of 64 in the GEMMs).
  // Values in dims() order: n c h w k r s pad_h pad_w u v precision.
  std::vector<Problem> test_problems() const override {
    std::vector<Problem> out;
    for (const std::vector<int64_t>& v : std::vector<std::vector<int64_t>>{{1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0},
                                                                         {2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 0},
                                                                         {1, 1, 13, 11, 1, 5, 3, 2, 1, 2, 2, 0},
                                                                         {3, 4, 17, 15, 8, 1, 1, 0, 0, 1, 1, 0},
                                                                         {2, 5, 31, 29, 7, 7, 7, 3, 3, 2, 2, 0},
                                                                         {1, 8, 10, 12, 3, 3, 2, 0, 1, 2, 1, 0},
                                                                         {2, 3, 9, 8, 4, 1, 1, 0, 0, 2, 2, 0},
                                                                         {1, 3, 9, 9, 4, 3, 3, 1, 1, 1, 1, 1},
                                                                         {2, 70, 9, 11, 33, 3, 3, 1, 1, 1, 1, 0}})
      out.push_back(layer_problem(kLayerBwdData, dims(), v));
    return out;
  }

  std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& in) const override {
    const LayerShape l(p);
    std::vector<double> dx(size_t(l.x_elements()));
    for (int64_t o = 0; o < l.x_elements(); ++o) dx[size_t(o)] = bwd_data_at(l, in.at(0).data(), in.at(1).data(), o);
    return dx;
  }
  void gpu_reference(const Problem& p, const std::vector<const float*>& in, double* out,
                     cudaStream_t s) const override {
    const LayerShape l(p);
    reference_bwd_data_kernel<<<grid_for(l.x_elements(), 256), 256, 0, s>>>(l, in.at(0), in.at(1), out);
    CT_CHECK_LAUNCH();
  }
};

}  // namespace

CONVTUNE_REGISTER_FAMILY(LayerBwdDataFamily);

}  // namespace convtune
