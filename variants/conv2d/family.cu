#include <tuple>

#include "harness/cuda_raii.h"
#include "harness/error.h"
#include "harness/family.h"
#include "variants/conv2d/conv2d.h"

namespace convtune {
namespace {

__global__ void reference_conv2d_kernel(const float* __restrict__ image, const float* __restrict__ filter,
                                        double* __restrict__ out, int64_t h, int64_t w, int r) {
  const int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t row = blockIdx.y * int64_t(blockDim.y) + threadIdx.y;
  if (row >= h || col >= w) return;
  image += blockIdx.z * h * w;  // image blockIdx.z of the batch
  out += blockIdx.z * h * w;
  const int fw = 2 * r + 1;
  double acc = 0;
  for (int m = -r; m <= r; ++m) {
    const int64_t y = row + m;
    if (y < 0 || y >= h) continue;
    for (int n = -r; n <= r; ++n) {
      const int64_t x = col + n;
      if (x < 0 || x >= w) continue;
      acc += double(image[y * w + x]) * double(filter[(m + r) * fw + (n + r)]);
    }
  }
  out[row * w + col] = acc;
}

class Conv2dFamily : public Family {
 public:
  std::string name() const override { return kConv2d; }
  std::string summary() const override {
    return "b images h x w, one filter (2r+1)^2, zero ghost cells, 'same' output, cross-correlation";
  }
  std::vector<DimSpec> dims() const override {
    return {{"h", 1, 1 << 16, "image height"},
            {"w", 1, 1 << 16, "image width"},
            {"r", 0, 32, "filter radius"},
            {"b", 1, kMaxConv2dBatch, "images in the batch, one filter for all", true, 1, false}};
  }
  std::vector<Operand> operands(const Problem& p) const override {
    const Conv2d c(p);
    return {{"image", c.pixels()}, {"filter", c.fw() * c.fw()}, {"output", c.pixels()}};
  }
  double direct_flops(const Problem& p) const override {
    const Conv2d c(p);
    return 2.0 * double(c.fw() * c.fw()) * double(c.pixels());
  }
  Problem example() const override { return {kConv2d, {{"h", 4096}, {"w", 4096}, {"r", 3}}}; }
  std::vector<Problem> test_problems() const override {
    std::vector<Problem> out;
    for (auto [h, w, r] : awkward_image_shapes())
      out.push_back({kConv2d, {{"h", h}, {"w", w}, {"r", r}, {"b", 1}}});
    for (auto [b, h, w, r] : awkward_batches())
      out.push_back({kConv2d, {{"h", h}, {"w", w}, {"r", r}, {"b", b}}});
    return out;
  }
  std::vector<std::string> constraint_dims() const override { return {"r"}; }  // compile-time in kernels
  // Every image's pixels together: what fills the GPU (a batch of small images as one large one), which no
  // single dim shows (the dispatch model's quantity).
  std::vector<std::pair<std::string, std::string>> model_quantities() const override {
    return {{"pixels", "b h * w *"}};
  }

  std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& inputs) const override {
    const Conv2d c(p);
    const auto& img = inputs.at(0);
    const auto& f = inputs.at(1);
    std::vector<double> out(static_cast<size_t>(c.pixels()));
    const auto tap = [&](int64_t m, int64_t n) { return double(f[m * c.fw() + n]); };
    for (int64_t k = 0; k < c.b; ++k) correlate_image(img.data() + k * c.h * c.w, c.h, c.w, c.r, tap, out.data() + k * c.h * c.w);
    return out;
  }

  void gpu_reference(const Problem& p, const std::vector<const float*>& inputs, double* out,
                     cudaStream_t s) const override {
    const Conv2d c(p);
    dim3 block(32, 8);
    dim3 grid(static_cast<unsigned>((c.w + 31) / 32), static_cast<unsigned>((c.h + 7) / 8), static_cast<unsigned>(c.b));
    reference_conv2d_kernel<<<grid, block, 0, s>>>(inputs.at(0), inputs.at(1), out, c.h, c.w, static_cast<int>(c.r));
    CT_CHECK_LAUNCH();
  }
};

}  // namespace

CONVTUNE_REGISTER_FAMILY(Conv2dFamily);

}  // namespace convtune
