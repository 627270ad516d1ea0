#include "convtune_runtime.h"

#include <iostream>
#include <set>
#include <stdexcept>

#include "harness/device.h"
#include "harness/dispatch.h"
#include "harness/error.h"
#include "harness/jit.h"
#include "harness/records.h"
#include "harness/sweep.h"
#include "harness/variant.h"

namespace convtune_runtime {

using convtune::json;

struct Conv2d::Impl {
  convtune::Problem problem;
  std::string candidate, rule;
  std::unique_ptr<convtune::JitCache> jit;  // declared before plan: outlives it
  std::unique_ptr<convtune::Plan> plan;
  const float* filter = nullptr;
  const float* in = nullptr;
  float* out = nullptr;

  void bind(cudaStream_t s) {
    convtune::Operands ops;
    ops.data = {const_cast<float*>(in), const_cast<float*>(filter), out};
    plan->bind(ops, s);
  }
};

Conv2d::Conv2d(const std::string& dispatch_json_path, int h, int w, int r) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  const std::string where = "convtune_runtime::Conv2d(" + dispatch_json_path + ", h=" + std::to_string(h) +
                            ", w=" + std::to_string(w) + ", r=" + std::to_string(r) + ")";
  try {
    m.problem = convtune::Problem::from_json({{"family", "conv2d"}, {"h", h}, {"w", w}, {"r", r}}, "conv2d");
    const json dispatch = convtune::read_json(dispatch_json_path);
    const convtune::Lookup pick = convtune::lookup(dispatch, m.problem);

    int ordinal = 0;
    if (convtune::DeviceInfo::count() == 0 || cudaGetDevice(&ordinal) != cudaSuccess) {
      cudaGetLastError();
      throw std::runtime_error("no usable CUDA device");
    }
    const convtune::DeviceInfo dev = convtune::DeviceInfo::query(ordinal);
    m.jit = std::make_unique<convtune::JitCache>(convtune::JitCache::default_dir(), dev.arch());

    // In order: the table's choice, the family's safe default, the simplest kernel. A later one is
    // used when an earlier one cannot run here (another GPU, a radius beyond a kernel's limit...).
    struct Try {
      std::string variant;
      json config;
      std::string rule;
    };
    std::vector<Try> tries = {{pick.entry.at("variant").get<std::string>(), pick.entry.at("config"), pick.rule}};
    const json defaults = dispatch.value("fallback", json::object()).value("defaults", json::object());
    if (defaults.contains("conv2d"))
      tries.push_back({defaults["conv2d"].at("variant").get<std::string>(), defaults["conv2d"].at("config"), "default"});
    if (const convtune::Variant* simplest = convtune::Registry::instance().find("conv2d.constant"))
      tries.push_back({simplest->name(), simplest->space(m.problem, dev).enumerate().front(), "default"});

    std::string why;
    std::set<std::string> tried;
    for (const Try& t : tries) {
      const std::string name = convtune::candidate_name(t.variant, t.config);
      if (!tried.insert(name).second) continue;
      try {
        const convtune::Variant& v = convtune::Registry::instance().get(t.variant);
        v.space(m.problem, dev).check_config(t.config, name);
        const convtune::Status st = v.can_implement(m.problem, t.config, dev);
        if (!st) throw std::runtime_error(st.reason);
        m.plan = v.prepare(m.problem, t.config, dev, *m.jit);
        m.candidate = name;
        m.rule = t.rule;
        // A fallback costs speed the application would not otherwise notice.
        if (!why.empty()) std::cerr << "convtune_runtime: using " << name << " for " << m.problem.key() << ":" << why << "\n";
        return;
      } catch (const std::exception& e) {
        why += "\n  " + name + " cannot run: " + e.what();
      }
    }
    throw std::runtime_error("no candidate can run on " + dev.name + ":" + why);
  } catch (const std::exception& e) {
    throw std::runtime_error(where + ": " + e.what());
  }
}

Conv2d::~Conv2d() = default;

const std::string& Conv2d::candidate() const { return impl_->candidate; }
const std::string& Conv2d::rule() const { return impl_->rule; }

// bind() takes all operands at once; rebinding costs a filter transform for some candidates (FFT),
// so it happens only when the filter or the run's pointers change.
void Conv2d::set_filter(const float* d_filter, cudaStream_t s) {
  if (!d_filter) throw std::runtime_error("convtune_runtime::Conv2d::set_filter: null filter");
  impl_->filter = d_filter;
  impl_->bind(s);
}

void Conv2d::run(const float* d_in, float* d_out, cudaStream_t s) {
  Impl& m = *impl_;
  if (!m.filter) throw std::runtime_error("convtune_runtime::Conv2d::run: call set_filter first");
  if (!d_in || !d_out) throw std::runtime_error("convtune_runtime::Conv2d::run: null input or output");
  if (d_in != m.in || d_out != m.out) {
    m.in = d_in;
    m.out = d_out;
    m.bind(s);
  }
  m.plan->run(s);
}

std::vector<std::string> available_variants() {
  std::vector<std::string> out;
  for (const convtune::Variant* v : convtune::Registry::instance().all()) out.push_back(v->name());
  return out;
}

}  // namespace convtune_runtime
