#include "harness/plugin.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>

#include "harness/cuda_raii.h"
#include "harness/error.h"
#include "harness/family.h"
#include "harness/json_file.h"

namespace convtune {
namespace fs = std::filesystem;

namespace {

// Where the device is not known (cost, tolerance, defines): an H100's limits, as planning without a GPU uses.
const DeviceInfo& planning_device() {
  static const DeviceInfo offline = DeviceInfo::offline_sm90();
  return offline;
}

Symbols device_symbols(const DeviceInfo& d) {
  return {{"max_threads_per_block", d.max_threads_per_block}, {"max_threads_per_sm", d.max_threads_per_sm},
          {"max_smem_per_block", d.max_smem_per_block},       {"max_smem_per_block_optin", d.max_smem_per_block_optin},
          {"max_smem_per_sm", d.max_smem_per_sm},             {"regs_per_block", d.regs_per_block},
          {"sms", d.sms},                                     {"l2_bytes", d.l2_bytes},
          {"warp_size", d.warp_size},                         {"cc", d.cc_major * 10 + d.cc_minor}};
}

// The values an expression may name for one candidate: dims, device limits, parameters, derived values.
// Empty with `why` set when the config gives a parameter no number.
Symbols candidate_symbols(const PluginManifest& m, const Problem& p, const Config& c, const DeviceInfo& dev,
                          std::string* why) {
  Symbols s = device_symbols(dev);
  for (const auto& d : *FamilyRegistry::instance().dims_of(p.family)) s[d.name] = double(p.at(d.name));  // left out: its default
  for (const auto& param : m.space.params()) {
    if (!c.contains(param.name) || !c[param.name].is_number()) {
      *why = "parameter " + param.name + " needs a number (config " + c.dump() + ")";
      return {};
    }
    s[param.name] = c[param.name].get<double>();
  }
  for (const auto& [name, e] : m.derived) s[name] = e->eval(s);
  return s;
}

std::string number(double v) {
  return std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e18 ? std::to_string(int64_t(v)) : std::to_string(v);
}

std::string shown_values(const Expr& e, const Symbols& s) {
  std::string out;
  for (const auto& name : e.used()) out += (out.empty() ? "" : ", ") + name + "=" + number(s.at(name));
  return out.empty() ? "" : " (" + out + ")";
}

// An expression's value as an integer in [lo, hi], or the reason it is not one.
bool integer_in(const Expr& e, const Symbols& s, int64_t lo, int64_t hi, const std::string& what, int64_t* out,
                std::string* why) {
  const double v = e.eval(s);
  if (!std::isfinite(v) || v != std::floor(v) || v < double(lo) || v > double(hi)) {
    *why = what + " '" + e.text() + "' = " + number(v) + shown_values(e, s) + " is not an integer in [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return false;
  }
  *out = int64_t(v);
  return true;
}

// Everything a launch needs, evaluated for one candidate.
struct PluginLaunch {
  dim3 grid, block;
  int dynamic_smem = 0;
  std::vector<std::string> defines;
  std::vector<int64_t> scalars;
};

// The -D options; they name no device limit (the manifest refuses that), so they hold for every device.
Status evaluate_defines(const PluginManifest& m, const Symbols& s, std::vector<std::string>* out) {
  std::string why;
  int64_t v = 0;
  for (const auto& [name, e] : m.defines) {
    if (!integer_in(*e, s, std::numeric_limits<int64_t>::min() / 2, std::numeric_limits<int64_t>::max() / 2,
                    "define " + name, &v, &why))
      return Status::no(why);
    out->push_back("-D" + name + "=" + std::to_string(v));
  }
  return Status::yes();
}

Status evaluate_launch(const PluginManifest& m, const Symbols& s, const DeviceInfo& dev, PluginLaunch* out) {
  std::string why;
  int64_t v = 0;
  const int64_t grid_max[3] = {(int64_t(1) << 31) - 1, 65535, 65535}, block_max[3] = {1024, 1024, 64};
  unsigned grid[3], block[3];
  for (int i = 0; i < 3; ++i) {
    const std::string axis = std::string("xyz").substr(size_t(i), 1);
    if (!integer_in(*m.grid[i], s, 1, grid_max[i], "grid." + axis, &v, &why)) return Status::no(why);
    grid[i] = unsigned(v);
    if (!integer_in(*m.block[i], s, 1, block_max[i], "block." + axis, &v, &why)) return Status::no(why);
    block[i] = unsigned(v);
  }
  const int64_t threads = int64_t(block[0]) * block[1] * block[2];
  if (threads > dev.max_threads_per_block)
    return Status::no("block of " + std::to_string(threads) + " threads > device limit " + std::to_string(dev.max_threads_per_block));
  if (!integer_in(*m.dynamic_smem, s, 0, dev.max_smem_per_block_optin, "dynamic_smem", &v, &why))
    return Status::no(why + " (the device's opt-in limit)");
  *out = {dim3(grid[0], grid[1], grid[2]), dim3(block[0], block[1], block[2]), int(v), {}, {}};
  if (const Status d = evaluate_defines(m, s, &out->defines); !d) return d;
  const int64_t scalar_max = m.scalars_int64 ? std::numeric_limits<int64_t>::max() / 2 : std::numeric_limits<int>::max();
  for (size_t i = 0; i < m.scalars.size(); ++i) {
    if (!integer_in(*m.scalars[i], s, -scalar_max, scalar_max, "scalars[" + std::to_string(i) + "]", &v, &why))
      return Status::no(why);
    out->scalars.push_back(v);
  }
  return Status::yes();
}

// Evaluates a candidate: its constraints, then its launch. Throws nothing a manifest can cause.
Status evaluate(const PluginManifest& m, const Problem& p, const Config& c, const DeviceInfo& dev, PluginLaunch* out) {
  if (p.family != m.family) return Status::no("not a " + m.family + " problem");
  const std::vector<Operand> operands = p.operands();
  std::vector<std::string> names;
  for (const auto& o : operands) names.push_back(o.name);
  if (names != m.operands)
    return Status::no("this problem's operands are " + json(names).dump() + ", the kernel takes " + json(m.operands).dump());
  std::string why;
  const Symbols s = candidate_symbols(m, p, c, dev, &why);
  if (!why.empty()) return Status::no(why);
  for (const auto& e : m.constraints) {
    const double v = e->eval(s);
    if (!std::isfinite(v) || v == 0) return Status::no("constraint '" + e->text() + "' fails" + shown_values(*e, s));
  }
  return evaluate_launch(m, s, dev, out);
}

class PluginPlan : public Plan {
 public:
  PluginPlan(std::shared_ptr<Module> module, const PluginManifest& m, const Problem& p, PluginLaunch launch)
      : module_(std::move(module)), launch_(std::move(launch)), int64_(m.scalars_int64) {
    fn_ = module_->function(m.entry);
    attrs_ = kernel_attributes(fn_, int(launch_.block.x * launch_.block.y * launch_.block.z), launch_.dynamic_smem);
    const std::vector<Operand> operands = p.operands();
    for (const auto& [symbol, operand] : m.constants) {
      size_t bytes = 0;
      const CUdeviceptr address = module_->global(symbol, &bytes);
      const size_t needed = size_t(operands.at(size_t(operand)).elements) * sizeof(float);
      if (bytes < needed)  // a runtime_error record: the kernel's declaration does not fit this problem
        throw std::runtime_error("__constant__ " + symbol + " holds " + std::to_string(bytes) + " bytes; operand " +
                                 operands[size_t(operand)].name + " needs " + std::to_string(needed));
      constants_.push_back({address, needed, operand});
    }
    if (int64_) wide_.assign(launch_.scalars.begin(), launch_.scalars.end());
    else narrow_.assign(launch_.scalars.begin(), launch_.scalars.end());
  }

  void bind(const Operands& ops, cudaStream_t stream) override {
    pointers_ = ops.data;
    for (const auto& c : constants_)
      CT_CUDA(cudaMemcpyAsync(reinterpret_cast<void*>(c.address), ops.data.at(size_t(c.operand)), c.bytes,
                              cudaMemcpyDeviceToDevice, stream));
  }

  void run(cudaStream_t stream) override {
    std::vector<void*> args;
    for (auto& p : pointers_) args.push_back(&p);
    if (int64_) for (auto& v : wide_) args.push_back(&v);
    else for (auto& v : narrow_) args.push_back(&v);
    launch(fn_, launch_.grid, launch_.block, unsigned(launch_.dynamic_smem), stream, args.data());
  }

  KernelAttributes attributes() const override { return attrs_; }

 private:
  struct Constant {
    CUdeviceptr address;
    size_t bytes;
    int operand;
  };
  std::shared_ptr<Module> module_;
  CUfunction fn_ = nullptr;
  PluginLaunch launch_;
  bool int64_;
  KernelAttributes attrs_;
  std::vector<Constant> constants_;
  std::vector<float*> pointers_;
  std::vector<long long> wide_;
  std::vector<int> narrow_;
};

}  // namespace

PluginVariant::PluginVariant(std::shared_ptr<const PluginManifest> m) : m_(std::move(m)) {}

Status PluginVariant::can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const {
  PluginLaunch launch;
  return evaluate(*m_, p, c, dev, &launch);
}

Cost PluginVariant::cost(const Problem& p, const Config& c) const {
  Cost cost{p.direct_flops(), p.direct_flops(), p.min_bytes(), p.min_bytes()};
  std::string why;
  const Symbols s = candidate_symbols(*m_, p, c, planning_device(), &why);
  if (!why.empty()) return cost;
  if (m_->flops) cost.flops_variant = m_->flops->eval(s);
  if (m_->bytes_model) cost.bytes_model = m_->bytes_model->eval(s);
  return cost;
}

Tolerance PluginVariant::tolerance(const Problem& p, const Config& c) const {
  Tolerance t = kDirectFp32Tolerance;
  std::string why;
  const Symbols s = candidate_symbols(*m_, p, c, planning_device(), &why);
  if (!why.empty()) return t;
  if (m_->rel_l2) t.rel_l2 = m_->rel_l2->eval(s);
  if (m_->max_rel) t.max_rel = m_->max_rel->eval(s);
  return t;
}

std::string PluginVariant::jit_source() const { return "plugin." + m_->variant + "." + m_->source_hash.substr(0, 8) + "." + m_->main_source; }

std::vector<JitProgram> PluginVariant::programs(const Problem& p, const Config& c) const {
  std::string why;
  const Symbols s = candidate_symbols(*m_, p, c, planning_device(), &why);
  std::vector<std::string> defines;
  const Status ok = why.empty() ? evaluate_defines(*m_, s, &defines) : Status::no(why);
  if (!ok) throw std::logic_error(name() + ": no program for a config it cannot run: " + ok.reason);
  return {JitProgram{jit_source(), defines}};
}

std::unique_ptr<Plan> PluginVariant::prepare(const Problem& p, const Config& c, const DeviceInfo& dev, JitCache& jit) const {
  PluginLaunch launch;
  const Status ok = evaluate(*m_, p, c, dev, &launch);
  if (!ok) throw std::logic_error(name() + " prepared where it cannot run: " + ok.reason);
  return std::make_unique<PluginPlan>(jit.module(JitProgram{jit_source(), launch.defines}), *m_, p, std::move(launch));
}

json PluginVariant::provenance() const {
  return {{"folder", m_->folder}, {"manifest", m_->manifest_path}, {"source_hash", m_->source_hash}};
}

}  // namespace convtune
