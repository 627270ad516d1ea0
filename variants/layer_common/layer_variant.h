// What the variants of the four layer families share: the math a config may use under the problem's
// precision, the tolerance of a long fp32 sum, the shape as compile-time defines for NVRTC kernels, the
// minimum traffic of each pass, and a plan that launches NVRTC kernels over the operands. Here beside
// layer_shape.h so that every layer folder includes it from one place.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/cuda_raii.h"
#include "harness/jit_options.h"
#include "harness/variant.h"
#include "variants/layer_common/layer_shape.h"

namespace convtune {

// ---- math -------------------------------------------------------------------------------------------
// The names kMathFp32, kMath3xTf32 and kMathTf32 are harness/variant.h's. A layer allows "tf32" only when
// the problem does (precision = 1).

bool tf32_allowed(const Problem& p);  // precision == 1 (pooling has no precision: false)
// A math name is allowed for this problem; the reason names the precision rule otherwise.
Status math_allowed(const Problem& p, const std::string& math);
std::string config_math(const Config& c);  // the config's "math", or fp32

// The tolerance of a method whose every output is a sum of `sum_length` products: fp32 and 3xtf32 get
// the direct fp32 bound, growing like sqrt(sum_length); tf32 a bound of TF32's 2^-11 rounding.
Tolerance layer_tolerance(int64_t sum_length, const std::string& math);
// Terms in one output's sum for each pass: c*r*s (forward), k*r*s (backward-data), n*P*Q (backward-filter).
int64_t forward_sum_length(const LayerShape& l);
int64_t bwd_data_sum_length(const LayerShape& l);
int64_t bwd_filter_sum_length(const LayerShape& l);
int64_t pass_sum_length(LayerPass pass, const LayerShape& l);  // the one of the three for `pass`

// ---- cost -------------------------------------------------------------------------------------------
// Each operand once: the inputs read, the output written (4-byte floats).
double operand_bytes(const Problem& p);

// ---- NVRTC ------------------------------------------------------------------------------------------
// The shape as defines: N C H W K R S PAD_H PAD_W U V P Q, so that kernels index with constants.
std::vector<std::string> layer_defines(const LayerShape& l);

struct LayerLaunch {
  std::string kernel;  // the __global__ function's name in the program
  dim3 grid, block;
  int dynamic_smem = 0;
  bool main = false;  // its attributes are the plan's (registers, occupancy); else the first launch's
  // grid.x counts tiles that the kernel strides over by gridDim.x: the plan may launch fewer CTAs
  // (persistent_grid_x in harness/jit.h).
  bool persistent = false;
};

// A launch's block, grid and shared memory fit the device; the reason names the limit otherwise.
Status launch_fits(const LayerLaunch& launch, const DeviceInfo& dev);

// Each operand i < alignments.size() starts on a multiple of alignments[i] bytes; the reason names the
// operand and what the kernel needs otherwise. Kernels that copy 16 bytes at a time need it of their inputs;
// cudaMalloc's buffers have it, an application's offset pointers may not.
Status operands_aligned(const std::vector<float*>& operands, const std::vector<size_t>& alignments);

// Launches one or more kernels of one NVRTC program in order; every kernel takes the operand pointers
// (inputs, then the output) followed by the plan's workspace pointer (nullptr when none).
class JitLayerPlan : public Plan {
 public:
  // sms: the device's multiprocessors, for persistent launches (0: a CTA a tile).
  JitLayerPlan(std::shared_ptr<Module> module, std::vector<LayerLaunch> launches, size_t workspace_bytes = 0,
               std::vector<size_t> alignments = {}, int sms = 0);
  void bind(const Operands& ops, cudaStream_t stream) override;
  void run(cudaStream_t stream) override;
  KernelAttributes attributes() const override { return attrs_; }  // of the main launch
  size_t workspace_bytes() const override { return workspace_.bytes(); }
  json details() const override { return details_; }
  void set_details(json d) { details_ = std::move(d); }

 private:
  std::shared_ptr<Module> module_;
  std::vector<LayerLaunch> launches_;
  std::vector<CUfunction> functions_;
  KernelAttributes attrs_;
  DeviceArray<char> workspace_;
  void* workspace_ptr_ = nullptr;
  std::vector<size_t> alignments_;  // bytes each operand must start on (operands_aligned)
  std::vector<float*> operands_;
  std::vector<void*> args_;  // made in bind: run() launches without building anything
  json details_ = json::object();
};

// A variant whose kernels are one NVRTC program with the shape as defines: it says its source, its
// config's defines and launches; this class checks the launches against the device, compiles, and
// makes the plan. The config's "math" (fp32 when it has none) is checked and recorded.
class JitLayerVariant : public Variant {
 public:
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override;
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override;
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo& dev,
                                JitCache& jit) const override;
  Math math_of(const Config& c) const override { return math_from_name(config_math(c)); }
  // Bytes each operand (inputs, then the output) must start on, checked in bind; none beyond a float's by
  // default.
  virtual std::vector<size_t> operand_alignments(const LayerShape&) const { return {}; }
  // The kernels the plan launches, in order, for a resolved config.
  virtual std::vector<LayerLaunch> launches(const LayerShape& l, const Config& c) const = 0;

 protected:
  virtual std::string source() const = 0;
  virtual std::vector<std::string> defines(const LayerShape& l, const Problem& p, const Config& c) const = 0;
  virtual size_t workspace_bytes(const LayerShape&, const Config&) const { return 0; }
  // Rules of this kernel beyond the launch limits (register budgets, divisibility, filling the GPU); yes by
  // default. Checked before launches(), which may assume them.
  virtual Status constraints(const LayerShape&, const Config&, const DeviceInfo&) const { return Status::yes(); }
};

}  // namespace convtune
