#include <algorithm>

#include "harness/cuda_raii.h"
#include "harness/error.h"
#include "harness/gpu_kernels.h"
#include "variants/layer_common/layer_family.h"
#include "variants/layer_bwd_filter/layer_bwd_filter.h"

namespace convtune {
namespace {

constexpr int kReduceThreads = 256;  // a power of two, for the tree reduction

// One block per filter-gradient element (few of them, each a long sum): the threads stride over the
// n*P*Q terms, then a shared-memory tree adds their partial sums.
__global__ void reference_bwd_filter_kernel(LayerShape l, const float* __restrict__ x, const float* __restrict__ dy,
                                            double* __restrict__ dw) {
  __shared__ double partial[kReduceThreads];
  for (int64_t e = blockIdx.x; e < l.filter_elements(); e += gridDim.x) {
    const Nchw tap = l.filter_coords(e);  // (k, c, i, j)
    double acc = 0;
    for (int64_t t = threadIdx.x; t < bwd_filter_terms(l); t += blockDim.x) acc += bwd_filter_term(l, x, dy, tap, t);
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int half = kReduceThreads / 2; half > 0; half /= 2) {
      if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) dw[e] = partial[0];
    __syncthreads();  // partial[0] is read before the next element overwrites it
  }
}

class LayerBwdFilterFamily : public LayerConvolutionFamily {
 public:
  std::string name() const override { return kLayerBwdFilter; }
  std::string summary() const override {
    return "NCHW convolution layer backward-filter dE/dW, the adjoint of layer_fwd's cross-correlation w.r.t. "
           "the filter: dw[k,c,i,j] = sum_{n,p,q} x[n,c,p*u-pad_h+i,q*v-pad_w+j] dy[n,k,p,q], zero padding; "
           "precision 0 = strict fp32, 1 = tf32 allowed";
  }
  std::vector<std::pair<std::string, std::string>> model_quantities() const override {
    return gemm_quantities("k", "c r * s *", output_pixels());
  }
  std::vector<Operand> operands(const Problem& p) const override {
    const LayerShape l(p);
    return {{"x", l.x_elements()}, {"dy", l.y_elements()}, {"dw", l.filter_elements()}};
  }
  // As layer_fwd's, plus sums longer than a block (n*P*Q = 4620 and 2112) and shorter than one (1, 42), and
  // rows of 4-float multiples (16 wide, 40 (image, row) pairs: row_tiled's bulk staging on sm_90).
  // Values in dims() order: n c h w k r s pad_h pad_w u v precision.
  std::vector<Problem> test_problems() const override {
    std::vector<Problem> out;
    for (const std::vector<int64_t>& v : std::vector<std::vector<int64_t>>{{1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0},
                                                                         {2, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 0},
                                                                         {1, 1, 13, 11, 1, 5, 3, 2, 1, 2, 2, 0},
                                                                         {3, 4, 17, 15, 8, 1, 1, 0, 0, 1, 1, 0},
                                                                         {2, 5, 31, 29, 7, 7, 7, 3, 3, 2, 2, 0},
                                                                         {1, 8, 10, 12, 3, 3, 2, 0, 1, 1, 2, 0},
                                                                         {4, 3, 33, 35, 2, 3, 3, 1, 1, 1, 1, 0},
                                                                         {2, 2, 66, 65, 3, 3, 2, 0, 1, 2, 2, 1},
                                                                         {2, 3, 20, 16, 5, 3, 3, 1, 1, 1, 1, 0}})
      out.push_back(layer_problem(kLayerBwdFilter, dims(), v));
    return out;
  }

  std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& in) const override {
    const LayerShape l(p);
    std::vector<double> dw(size_t(l.filter_elements()));
    for (int64_t e = 0; e < l.filter_elements(); ++e) {
      const Nchw tap = l.filter_coords(e);
      double acc = 0;
      for (int64_t t = 0; t < bwd_filter_terms(l); ++t)
        acc += bwd_filter_term(l, in.at(0).data(), in.at(1).data(), tap, t);
      dw[size_t(e)] = acc;
    }
    return dw;
  }
  void gpu_reference(const Problem& p, const std::vector<const float*>& in, double* out,
                     cudaStream_t s) const override {
    const LayerShape l(p);
    const int blocks = int(std::min<int64_t>(l.filter_elements(), 65536));
    reference_bwd_filter_kernel<<<blocks, kReduceThreads, 0, s>>>(l, in.at(0), in.at(1), out);
    CT_CHECK_LAUNCH();
  }
};

}  // namespace

CONVTUNE_REGISTER_FAMILY(LayerBwdFilterFamily);

}  // namespace convtune
