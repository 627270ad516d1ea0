#include "harness/reference.h"

#include <stdexcept>

#include "harness/gpu_kernels.h"

namespace convtune {

std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& inputs) {
  if (p.family != Family::conv2d)
    throw std::logic_error("no CPU reference for family " + family_name(p.family) + " yet");
  const Conv2d c(p);
  const auto& img = inputs.at(0);
  const auto& f = inputs.at(1);
  std::vector<double> out(static_cast<size_t>(c.h * c.w));
  for (int64_t i = 0; i < c.h; ++i)
    for (int64_t j = 0; j < c.w; ++j) {
      double acc = 0;
      for (int64_t m = -c.r; m <= c.r; ++m)
        for (int64_t n = -c.r; n <= c.r; ++n) {
          const int64_t y = i + m, x = j + n;
          if (y < 0 || y >= c.h || x < 0 || x >= c.w) continue;
          acc += double(img[y * c.w + x]) * double(f[(m + c.r) * c.fw() + (n + c.r)]);
        }
      out[i * c.w + j] = acc;
    }
  return out;
}

bool has_gpu_reference(Family f) { return f == Family::conv2d; }

void gpu_reference(const Problem& p, const std::vector<const float*>& inputs, double* out, cudaStream_t s) {
  if (p.family != Family::conv2d)
    throw std::logic_error("no GPU reference for family " + family_name(p.family) + " yet");
  const Conv2d c(p);
  reference_conv2d(inputs.at(0), inputs.at(1), out, c.h, c.w, static_cast<int>(c.r), s);
}

}  // namespace convtune
