// Shared by the conv1d variants: the typed problem view helpers, the tolerance of a direct fp32 sum, and the
// plan base of the NVRTC kernels that correlate with the reversed filter (prepared in bind).
#pragma once
#include <cmath>
#include <memory>
#include <string>

#include "harness/cuda_raii.h"
#include "harness/jit_options.h"
#include "harness/variant.h"
#include "variants/conv1d/conv1d.h"

namespace convtune {

inline constexpr int64_t kMaxConstantTaps = 16384;     // 64 KiB of constant memory
inline constexpr double kMaxSpatialMultiplyAdds = 0x1p41;  // ~70 ms at 65 TFLOP/s: beyond, spatial is pointless


// A direct fp32 sum of m products: rounding grows like sqrt(m) (random signs), so the bound does too.
inline Tolerance direct_tolerance(int64_t taps) {
  const double rel = std::max(1e-5, 2e-7 * std::sqrt(double(taps)));
  return {rel, 10 * rel};
}

Status spatial_work_fits(const Conv1d& p);
Status shared_memory_fits(int64_t bytes, const DeviceInfo& dev);

class Conv1dKernelPlan : public Plan {
 public:
  // padded_taps: length of the reversed filter (zero-padded); constant: it goes to the module's c_filter.
  Conv1dKernelPlan(const Conv1d& p, std::shared_ptr<Module> module, int64_t padded_taps, bool constant);
  void bind(const Operands& ops, cudaStream_t stream) override;
  KernelAttributes attributes() const override { return attrs_; }

 protected:
  Conv1d p_;
  std::shared_ptr<Module> module_;
  KernelAttributes attrs_;
  DeviceArray<float> reversed_;
  CUdeviceptr constant_ = 0;
  const float* x_ = nullptr;
  float* y_ = nullptr;
};

}  // namespace convtune
