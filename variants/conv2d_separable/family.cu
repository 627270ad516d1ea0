#include <tuple>

#include "harness/error.h"
#include "harness/family.h"
#include "variants/conv2d/conv2d.h"
#include "variants/conv2d_separable/separable.h"

namespace convtune {
namespace {

constexpr int kMaxTaps = 2 * int(kMaxSeparableRadius) + 1;

// Reference row pass, float64: t(i, j) = sum_n in(i, j+n) * row(n+r).
__global__ void reference_rows_kernel(const float* __restrict__ image, const float* __restrict__ row,
                                      double* __restrict__ t, int64_t h, int64_t w, int r) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y;
  if (i >= h || j >= w) return;
  double acc = 0;
  for (int n = -r; n <= r; ++n) {
    const int64_t x = j + n;
    if (x >= 0 && x < w) acc += double(image[i * w + x]) * double(row[n + r]);
  }
  t[i * w + j] = acc;
}

// Reference column pass, float64, in place: out(i, j) = sum_m t(i+m, j) * col(m+r). One thread walks one
// column downwards with the 2r+1 values of t it needs in a ring (each stored twice, at k and k + fw, so the
// window is contiguous); row i of t is overwritten only after it entered the ring, and never read again.
// Needs no buffer beyond the output: the reference costs O(r) per output, not O(r^2).
__global__ void reference_columns_in_place_kernel(double* __restrict__ t, const float* __restrict__ col, int64_t h,
                                                  int64_t w, int r) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= w) return;
  const int fw = 2 * r + 1;
  double ring[2 * kMaxTaps];
  // Window of output 0: rows -r .. r of t; row y lives at slot (y + r) mod fw.
  for (int k = 0; k < fw; ++k) {
    const int64_t y = k - r;
    ring[k] = ring[k + fw] = (y >= 0 && y < h) ? t[y * w + j] : 0.0;
  }
  int s = 0;  // slot of row i - r, the window's first row
  for (int64_t i = 0; i < h; ++i) {
    const int64_t y = i + r + 1;  // enters the window of output i + 1, in the slot row i - r leaves
    const double next = y < h ? t[y * w + j] : 0.0;
    double acc = 0;
    for (int m = 0; m < fw; ++m) acc += ring[s + m] * double(col[m]);
    t[i * w + j] = acc;
    ring[s] = ring[s + fw] = next;
    s = s + 1 == fw ? 0 : s + 1;
  }
}

class SeparableFamily : public Family {
 public:
  std::string name() const override { return kConv2dSeparable; }
  std::string summary() const override {
    return "conv2d with a separable filter col(m) * row(n), given as the two vectors of 2r+1 taps (the separable "
           "flag is the family); image h x w, zero ghost cells, 'same' output, cross-correlation";
  }
  std::vector<DimSpec> dims() const override {
    return {{"h", 1, 1 << 16, "image height"},
            {"w", 1, 1 << 16, "image width"},
            {"r", 0, kMaxSeparableRadius, "filter radius (both vectors have 2r+1 taps)"}};
  }
  std::vector<Operand> operands(const Problem& p) const override {
    const Separable c(p);
    return {{"image", c.pixels()}, {"column_filter", c.fw()}, {"row_filter", c.fw()}, {"output", c.pixels()}};
  }
  // A row pass and a column pass of 2r+1 multiply-adds per output: the separable sum's own count (the
  // non-separable conv2d at the same shape counts (2r+1)^2).
  double direct_flops(const Problem& p) const override {
    const Separable c(p);
    return 2.0 * 2.0 * double(c.fw()) * double(c.pixels());
  }
  Problem example() const override { return {kConv2dSeparable, {{"h", 4096}, {"w", 4096}, {"r", 7}}}; }
  std::vector<Problem> test_problems() const override {
    std::vector<Problem> out;
    auto shapes = awkward_image_shapes();
    shapes.emplace_back(75, 132, 32);  // the family's largest radius, wider than many tiles, taller than the image
    for (auto [h, w, r] : shapes)
      out.push_back({kConv2dSeparable, {{"h", h}, {"w", w}, {"r", r}}});
    return out;
  }
  std::vector<std::string> constraint_dims() const override { return {"r"}; }  // compile-time in kernels

  // The definition itself, the double sum with the outer-product tap: simple and slow (O(r^2) per output).
  std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& inputs) const override {
    const Separable c(p);
    const auto& img = inputs.at(0);
    const auto& col = inputs.at(1);
    const auto& row = inputs.at(2);
    std::vector<double> out(static_cast<size_t>(c.pixels()));
    correlate_image(img.data(), c.h, c.w, c.r, [&](int64_t m, int64_t n) { return double(col[m]) * double(row[n]); },
                    out.data());
    return out;
  }

  void gpu_reference(const Problem& p, const std::vector<const float*>& inputs, double* out,
                     cudaStream_t s) const override {
    const Separable c(p);
    const int r = static_cast<int>(c.r);
    dim3 block(32, 8);
    dim3 grid(static_cast<unsigned>((c.w + 31) / 32), static_cast<unsigned>((c.h + 7) / 8));
    reference_rows_kernel<<<grid, block, 0, s>>>(inputs.at(0), inputs.at(2), out, c.h, c.w, r);
    CT_CHECK_LAUNCH();
    reference_columns_in_place_kernel<<<static_cast<unsigned>((c.w + 127) / 128), 128, 0, s>>>(out, inputs.at(1), c.h,
                                                                                              c.w, r);
    CT_CHECK_LAUNCH();
  }
};

}  // namespace

CONVTUNE_REGISTER_FAMILY(SeparableFamily);

}  // namespace convtune
