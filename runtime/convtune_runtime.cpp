#include "convtune_runtime.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

#include "harness/cuda_raii.h"
#include "harness/device.h"
#include "harness/dispatch.h"
#include "harness/fleet.h"
#include "harness/error.h"
#include "harness/family.h"
#include "harness/jit.h"
#include "harness/records.h"
#include "harness/json_file.h"
#include "harness/plugin.h"
#include "harness/variant.h"

namespace convtune_runtime {

using convtune::json;

namespace {

std::string describe(const std::string& path, const std::string& family, const std::map<std::string, int64_t>& dims) {
  std::string s = "convtune_runtime::Convolution(" + path + ", " + family;
  for (const auto& [k, v] : dims) s += ", " + k + "=" + std::to_string(v);
  return s + ")";
}

// The median of a few timed runs after two warm-up runs, on the application's own operands.
double median_run_ms(convtune::Plan& plan, cudaStream_t s) {
  convtune::Event start, stop;
  plan.run(s);
  plan.run(s);
  std::vector<float> ms(5);
  for (float& t : ms) {
    start.record(s);
    plan.run(s);
    stop.record(s);
    CT_CUDA(cudaEventSynchronize(stop.get()));
    CT_CUDA(cudaEventElapsedTime(&t, start.get(), stop.get()));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// A table file read, its plug-ins loaded and its rules compiled once a process, not once a Convolution: a
// fleet table is megabytes of JSON, and a network makes a Convolution for each of its dozens of layer
// passes. Keyed by the absolute path, read again when the file's size or modification time changes.
std::shared_ptr<const convtune::DispatchTable> loaded_table(const std::string& path) {
  namespace fs = std::filesystem;
  static std::mutex mutex;
  static std::map<std::string, std::pair<std::string, std::shared_ptr<const convtune::DispatchTable>>> tables;
  std::error_code absolute_error, size_error, time_error;  // any: no stamp, read every time (and not kept)
  const std::string key = fs::absolute(path, absolute_error).string();
  const auto size = fs::file_size(path, size_error);
  const auto modified = fs::last_write_time(path, time_error);
  const std::string stamp = absolute_error || size_error || time_error
                                ? std::string()
                                : std::to_string(size) + ":" + std::to_string(modified.time_since_epoch().count());
  std::lock_guard<std::mutex> lock(mutex);
  const auto known = tables.find(key);
  if (!stamp.empty() && known != tables.end() && known->second.first == stamp) return known->second.second;
  json dispatch = convtune::read_json(path);  // a missing or broken file: its error, as before
  try {  // the plug-ins the table carries; one that cannot load here leaves its entries to the fallbacks
    convtune::load_plugin_bundles(dispatch, path);
  } catch (const convtune::InputError& e) {
    std::cerr << "convtune_runtime: " << e.what() << "\n";
  }
  auto table = std::make_shared<const convtune::DispatchTable>(std::move(dispatch));
  if (!stamp.empty()) tables[key] = {stamp, table};
  return table;
}

}  // namespace

struct Convolution::Impl {
  convtune::Problem problem;
  std::vector<Operand> operands;
  std::string candidate, rule, table;
  std::shared_ptr<const convtune::DispatchTable> dispatch;  // what the choices were read from (kept alive)
  json choice;  // {"variant", "config"} of the candidate that runs
  std::unique_ptr<convtune::JitCache> jit;  // declared before plan: outlives it
  std::unique_ptr<convtune::Plan> plan;
  // tune_unseen on a shape the table did not measure: the shortlist's other candidates, timed against
  // plan at the first bind.
  struct Rival {
    std::string name;
    json choice;
    std::unique_ptr<convtune::Plan> plan;
  };
  std::vector<Rival> rivals;
  convtune::Operands ops;  // the last bind's, reused so that a bind allocates nothing
  bool bound = false;

  void init(const std::string& path, const std::string& family, const std::map<std::string, int64_t>& dims,
            bool tune_unseen, const json& first);
  void prepare_rivals(const std::vector<json>& shortlist, const convtune::DeviceInfo& dev);
  void tune(const convtune::Operands& ops, cudaStream_t s);
};

// Candidates that cannot run here are left out silently: the table's choice already can.
void Convolution::Impl::prepare_rivals(const std::vector<json>& shortlist, const convtune::DeviceInfo& dev) {
  for (const json& c : shortlist) {
    try {
      const convtune::Variant& v = convtune::Registry::instance().get(c.at("variant").get<std::string>());
      if (v.family() != problem.family) continue;
      const json config = v.space(problem, dev).complete_config(c.at("config"), c.at("candidate").get<std::string>());
      const std::string name = convtune::candidate_name(v.name(), config);
      if (name == candidate || !v.can_implement(problem, config, dev)) continue;
      rivals.push_back({name, json{{"variant", v.name()}, {"config", config}}, v.prepare(problem, config, dev, *jit)});
    } catch (const std::exception&) {
    }
  }
}

// Times plan and every rival on ops and keeps the fastest; a rival that fails is dropped.
void Convolution::Impl::tune(const convtune::Operands& ops, cudaStream_t s) {
  double best_ms = median_run_ms(*plan, s);
  for (Rival& rival : rivals) {
    try {
      rival.plan->bind(ops, s);
      const double ms = median_run_ms(*rival.plan, s);
      if (ms < best_ms) {
        best_ms = ms;
        std::swap(plan, rival.plan);
        candidate = rival.name;
        choice = rival.choice;
      }
    } catch (const std::exception&) {
    }
  }
  rivals.clear();
  rule = "tuned";
  plan->bind(ops, s);  // the last bind may have been a rival's; the output is rewritten by run
}

Convolution::Convolution(const std::string& dispatch_json_path, const std::string& family,
                         const std::map<std::string, int64_t>& dims, bool tune_unseen)
    : impl_(std::make_unique<Impl>()) {
  impl_->init(dispatch_json_path, family, dims, tune_unseen, nullptr);
}

Convolution::Convolution(const std::string& dispatch_json_path, const std::string& family,
                         const std::map<std::string, int64_t>& dims, const FirstChoice& first)
    : impl_(std::make_unique<Impl>()) {
  json parsed;
  try {
    parsed = json::parse(first.json);
    if (!parsed.is_object() || !parsed.contains("variant") || !parsed.contains("config"))
      throw std::runtime_error("an object with \"variant\" and \"config\" is expected");
  } catch (const std::exception& e) {
    throw std::runtime_error(describe(dispatch_json_path, family, dims) + ": FirstChoice " + first.json + ": " + e.what());
  }
  parsed["rule"] = "cached";
  impl_->init(dispatch_json_path, family, dims, false, parsed);
}

void Convolution::Impl::init(const std::string& dispatch_json_path, const std::string& family,
                             const std::map<std::string, int64_t>& dims, bool tune_unseen, const json& first) {
  Impl& m = *this;
  const std::string where = describe(dispatch_json_path, family, dims);
  try {
    json problem = json::object();
    for (const auto& [k, v] : dims) {
      if (k == "family") throw convtune::InputError("problem.family: give the family as its own argument, not a dim");
      problem[k] = v;
    }
    problem["family"] = family;
    m.problem = convtune::Problem::from_json(problem, "problem");
    for (const convtune::Operand& o : m.problem.operands()) m.operands.push_back({o.name, o.elements});

    m.dispatch = loaded_table(dispatch_json_path);
    int ordinal = 0;
    const bool have_gpu = convtune::DeviceInfo::count() > 0 && cudaGetDevice(&ordinal) == cudaSuccess;
    if (!have_gpu) cudaGetLastError();
    const convtune::DeviceInfo dev = have_gpu ? convtune::DeviceInfo::query(ordinal) : convtune::DeviceInfo{};
    // A fleet table: the table of this GPU's model, else of its architecture, else the defaults. The
    // table's own refusals (no entry for the family...) come before the missing GPU, as for one table.
    // Only candidates that can run this shape on this GPU are chosen among.
    const convtune::DispatchTable& table = *m.dispatch;
    const std::string cc = have_gpu ? std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor) : "";
    // The table's choice among what can run here; when nothing of the family can (a strict-fp32 layer and a
    // table measured with TF32 allowed, say), or the table has no entry of the family at all, the family's
    // simplest kernel: an application gets a correct result anywhere, tuned where the table measured.
    const convtune::DispatchTable::Pick picked = table.pick(dev.name, cc, m.problem.family);
    convtune::DeviceLookup on_device;
    std::vector<json> tries;
    try {
      on_device = convtune::lookup_on_device(table, dev.name, cc, m.problem, have_gpu ? &dev : nullptr);
    } catch (const convtune::NoCandidate&) {
      if (!have_gpu) throw;
      on_device.table_rule = picked.rule;
      on_device.table_device = picked.table->view.device;
      tries = {convtune::simplest_candidate(m.problem.family)};
    }
    if (!have_gpu) throw std::runtime_error("no usable CUDA device");
    const convtune::Lookup& pick = on_device.lookup;
    m.table = on_device.table_rule + (on_device.table_device.empty() ? "" : " (" + on_device.table_device + ")");
    m.jit = std::make_unique<convtune::JitCache>(convtune::JitCache::default_dir(), dev.arch());

    // In order (fallback_chain): the table's choice, the model's next, the family's default in the table,
    // the family's simplest kernel. A later one is used when an earlier one cannot be prepared here (a
    // library that refuses the shape, a kernel that fails to compile...).
    if (tries.empty()) tries = convtune::fallback_chain(picked, m.problem, &dev, pick);
    if (!first.is_null()) tries.insert(tries.begin(), first);
    std::string why;
    std::set<std::string> tried;
    for (const json& t : tries) {
      const std::string variant = t.at("variant").get<std::string>();
      std::string name = variant;
      try {
        const convtune::Variant& v = convtune::Registry::instance().get(variant);
        if (v.family() != m.problem.family)
          throw std::runtime_error("a variant of family " + v.family() + ", not " + m.problem.family);
        const convtune::ParamSpace space = v.space(m.problem, dev);
        json config = t.at("config");
        if (config.is_null()) {
          std::string refused;
          for (const convtune::Config& c : space.enumerate()) {
            const convtune::Status st = v.can_implement(m.problem, c, dev);
            if (st) {
              config = c;
              break;
            }
            if (refused.empty()) refused = st.reason;
          }
          if (config.is_null())
            throw std::runtime_error("no config of its space can run" + (refused.empty() ? "" : " (" + refused + ")"));
        }
        config = space.complete_config(config, convtune::candidate_name(variant, config));
        name = convtune::candidate_name(variant, config);
        if (!tried.insert(name).second) continue;
        const convtune::Status st = v.can_implement(m.problem, config, dev);
        if (!st) throw std::runtime_error(st.reason);
        m.plan = v.prepare(m.problem, config, dev, *m.jit);
        m.candidate = name;
        m.choice = json{{"variant", variant}, {"config", config}};
        m.rule = t.at("rule").get<std::string>();
        // A fallback costs speed the application would not otherwise notice.
        if (!why.empty())
          std::cerr << "convtune_runtime: using " << name << " for " << m.problem.key() << ":" << why << "\n";
        if (m.rule == "nearest") {  // once a process: why an unmeasured shape may be served less well
          static bool told = false;
          if (!told) std::cerr << "convtune_runtime: " << dispatch_json_path << " carries no performance model for "
                               << m.problem.family << " (exported without XGBoost, or by an older convtune): "
                               << "unmeasured shapes take the nearest rule\n";
          told = true;
        }
        if (tune_unseen && (m.rule == "nearest" || m.rule == "model")) m.prepare_rivals(on_device.shortlist, dev);
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

Convolution::~Convolution() = default;

const std::string& Convolution::family() const { return impl_->problem.family; }
const std::map<std::string, int64_t>& Convolution::dims() const { return impl_->problem.dims; }
const std::vector<Operand>& Convolution::operands() const { return impl_->operands; }
const std::string& Convolution::candidate() const { return impl_->candidate; }
std::string Convolution::choice() const { return impl_->choice.dump(); }
const std::string& Convolution::rule() const { return impl_->rule; }
const std::string& Convolution::table() const { return impl_->table; }

void Convolution::bind(const std::vector<const float*>& inputs, float* output, cudaStream_t s) {
  Impl& m = *impl_;
  // Built only for a refusal: the Python package binds on every call, so the common path allocates nothing.
  const auto where = [&m] { return "convtune_runtime::Convolution::bind(" + m.problem.key() + ")"; };
  if (inputs.size() + 1 != m.operands.size()) {
    std::string names;
    for (size_t i = 0; i + 1 < m.operands.size(); ++i) names += (i ? ", " : "") + m.operands[i].name;
    throw std::runtime_error(where() + ": " + std::to_string(inputs.size()) + " inputs given, " +
                             std::to_string(m.operands.size() - 1) + " expected (" + names + ")");
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) throw std::runtime_error(where() + ": null " + m.operands[i].name);
  if (!output) throw std::runtime_error(where() + ": null " + m.operands.back().name);
  m.ops.data.clear();  // keeps its capacity from the last bind
  for (const float* p : inputs) m.ops.data.push_back(const_cast<float*>(p));  // inputs are only read
  m.ops.data.push_back(output);
  m.bound = false;
  m.plan->bind(m.ops, s);
  if (!m.rivals.empty()) m.tune(m.ops, s);
  m.bound = true;
}

void Convolution::run(cudaStream_t s) {
  if (!impl_->bound)
    throw std::runtime_error("convtune_runtime::Convolution::run(" + impl_->problem.key() + "): call bind first");
  impl_->plan->run(s);
}

Conv2d::Conv2d(const std::string& dispatch_json_path, int h, int w, int r, bool tune_unseen)
    : conv_(dispatch_json_path, "conv2d", {{"h", h}, {"w", w}, {"r", r}}, tune_unseen) {}

void Conv2d::set_filter(const float* d_filter, cudaStream_t s) {
  if (!d_filter) throw std::runtime_error("convtune_runtime::Conv2d::set_filter: null filter");
  filter_ = d_filter;
  if (in_ && out_) conv_.bind({in_, filter_}, out_, s);  // else at the first run, which knows them
}

void Conv2d::run(const float* d_in, float* d_out, cudaStream_t s) {
  if (!filter_) throw std::runtime_error("convtune_runtime::Conv2d::run: call set_filter first");
  if (!d_in || !d_out) throw std::runtime_error("convtune_runtime::Conv2d::run: null input or output");
  if (d_in != in_ || d_out != out_) {
    conv_.bind({d_in, filter_}, d_out, s);
    in_ = d_in;
    out_ = d_out;
  }
  conv_.run(s);
}

std::map<std::string, int64_t> validate_problem(const std::string& family, const std::map<std::string, int64_t>& dims) {
  try {
    json problem = json::object();
    for (const auto& [k, v] : dims) {
      if (k == "family") throw convtune::InputError("problem.family: give the family as its own argument, not a dim");
      problem[k] = v;
    }
    problem["family"] = family;
    return convtune::Problem::from_json(problem, "problem").dims;
  } catch (const std::exception& e) {
    throw std::invalid_argument(e.what());
  }
}

std::vector<std::string> available_variants() {
  std::vector<std::string> out;
  for (const convtune::Variant* v : convtune::Registry::instance().all()) out.push_back(v->name());
  return out;
}

}  // namespace convtune_runtime
