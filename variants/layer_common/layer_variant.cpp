#include "variants/layer_common/layer_variant.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "harness/error.h"
#include "harness/family.h"

namespace convtune {

bool tf32_allowed(const Problem& p) { return p.dims.count("precision") && p.at("precision") == 1; }

Status math_allowed(const Problem& p, const std::string& math) {
  if (math == kMathFp32 || math == kMath3xTf32) return Status::yes();
  if (math == kMathTf32)
    return tf32_allowed(p) ? Status::yes() : Status::no("math tf32 needs precision = 1 (this problem is strict fp32)");
  return Status::no("unknown math '" + math + "'; allowed: fp32, 3xtf32, tf32");
}

Tolerance layer_tolerance(int64_t sum_length, const std::string& math) {
  if (math == kMathTf32) return {3e-3, 3e-2};  // each product rounded to 11 bits: ~5e-4 relative per term
  // Random signs: the rounding of a sum of m fp32 products grows like sqrt(m).
  const double rel = std::max(1e-5, 2e-7 * std::sqrt(double(sum_length)));
  return {rel, 10 * rel};
}

int64_t forward_sum_length(const LayerShape& l) { return l.c * l.r * l.s; }
int64_t bwd_data_sum_length(const LayerShape& l) { return l.k * l.r * l.s; }
int64_t bwd_filter_sum_length(const LayerShape& l) { return l.n * l.p * l.q; }
int64_t pass_sum_length(LayerPass pass, const LayerShape& l) {
  return pass == LayerPass::forward    ? forward_sum_length(l)
         : pass == LayerPass::bwd_data ? bwd_data_sum_length(l)
                                       : bwd_filter_sum_length(l);
}

double operand_bytes(const Problem& p) {
  double elements = 0;
  for (const Operand& o : p.type().operands(p)) elements += double(o.elements);
  return 4.0 * elements;
}

std::vector<std::string> layer_defines(const LayerShape& l) {
  return {define("N", l.n),         define("C", l.c),         define("H", l.h),
          define("W", l.w),         define("K", l.k),         define("R", l.r),
          define("S", l.s),         define("PAD_H", l.pad_h), define("PAD_W", l.pad_w),
          define("U", l.u),         define("V", l.v),         define("P", l.p),
          define("Q", l.q)};
}

Status launch_fits(const LayerLaunch& launch, const DeviceInfo& dev) {
  const int64_t threads = int64_t(launch.block.x) * launch.block.y * launch.block.z;
  if (threads > dev.max_threads_per_block)
    return Status::no(launch.kernel + ": block of " + std::to_string(threads) + " threads > device limit " +
                      std::to_string(dev.max_threads_per_block));
  if (launch.grid.y > 65535 || launch.grid.z > 65535)
    return Status::no(launch.kernel + ": grid.y or grid.z > 65535 blocks");
  if (launch.dynamic_smem > dev.max_smem_per_block_optin)
    return Status::no(launch.kernel + ": shared memory " + std::to_string(launch.dynamic_smem) +
                      " B > device limit " + std::to_string(dev.max_smem_per_block_optin) + " B");
  return Status::yes();
}

Status operands_aligned(const std::vector<float*>& operands, const std::vector<size_t>& alignments) {
  for (size_t i = 0; i < alignments.size() && i < operands.size(); ++i)
    if (reinterpret_cast<uintptr_t>(operands[i]) % alignments[i] != 0)
      return Status::no("operand " + std::to_string(i) + " does not start on a multiple of " +
                        std::to_string(alignments[i]) + " bytes, which this kernel's " +
                        std::to_string(alignments[i]) + "-byte copies need (cudaMalloc's buffers do)");
  return Status::yes();
}

JitLayerPlan::JitLayerPlan(std::shared_ptr<Module> module, std::vector<LayerLaunch> launches, size_t workspace_bytes,
                           std::vector<size_t> alignments, int sms)
    : module_(std::move(module)), launches_(std::move(launches)), workspace_(workspace_bytes),
      alignments_(std::move(alignments)) {
  for (LayerLaunch& l : launches_) {
    functions_.push_back(module_->function(l.kernel));
    const int threads = int(l.block.x * l.block.y * l.block.z);
    const KernelAttributes a = kernel_attributes(functions_.back(), threads, l.dynamic_smem);
    if (functions_.size() == 1 || l.main) attrs_ = a;
    if (l.persistent) l.grid.x = persistent_grid_x(l.grid, int64_t(a.blocks_per_sm) * sms);
  }
}

void JitLayerPlan::bind(const Operands& ops, cudaStream_t) {
  if (Status a = operands_aligned(ops.data, alignments_); !a) throw InputError(a.reason);
  operands_ = ops.data;
  workspace_ptr_ = workspace_.get();
  args_.clear();
  for (float*& p : operands_) args_.push_back(&p);
  args_.push_back(&workspace_ptr_);
}

void JitLayerPlan::run(cudaStream_t stream) {
  if (args_.empty()) throw std::logic_error("JitLayerPlan::run before bind");
  for (size_t i = 0; i < launches_.size(); ++i)
    launch(functions_[i], launches_[i].grid, launches_[i].block, unsigned(launches_[i].dynamic_smem), stream,
           args_.data());
}

std::string config_math(const Config& c) { return c.contains("math") ? c.at("math").get<std::string>() : kMathFp32; }

Status JitLayerVariant::can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const {
  if (p.family != family()) return Status::no("not a " + family() + " problem");
  if (Status m = math_allowed(p, config_math(c)); !m) return m;
  const LayerShape l(p);
  const Config resolved = resolve(p, c, dev);
  if (Status k = constraints(l, resolved, dev); !k) return k;
  for (const LayerLaunch& launch : launches(l, resolved))
    if (Status f = launch_fits(launch, dev); !f) return f;
  return Status::yes();
}

// A config not yet resolved (CPU compile tests) is resolved as on a device of unknown size.
std::vector<JitProgram> JitLayerVariant::programs(const Problem& p, const Config& c) const {
  const LayerShape l(p);
  JitProgram program{source(), layer_defines(l)};
  for (std::string& d : defines(l, p, resolve(p, c, DeviceInfo{}))) program.options.push_back(std::move(d));
  return {program};
}

std::unique_ptr<Plan> JitLayerVariant::prepare(const Problem& p, const Config& c, const DeviceInfo& dev,
                                               JitCache& jit) const {
  const LayerShape l(p);
  const Config resolved = resolve(p, c, dev);
  auto plan = std::make_unique<JitLayerPlan>(jit.module(programs(p, resolved).front()), launches(l, resolved),
                                             workspace_bytes(l, resolved), operand_alignments(l), dev.sms);
  json details = {{"math", config_math(c)}, {"deterministic", true}};
  for (const auto& [name, value] : resolved.items())  // what the config's rules gave here (a split count)
    if (!c.contains(name)) details[name] = value;
  plan->set_details(std::move(details));
  return plan;
}

}  // namespace convtune
