#include "harness/dispatch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "harness/error.h"
#include "harness/family.h"
#include "harness/records.h"
#include "harness/run_summary.h"
#include "harness/select.h"
#include "harness/jit.h"
#include "harness/json_file.h"
#include "harness/perf_model.h"
#include "harness/plugin.h"
#include "harness/variant.h"

namespace convtune {
namespace {

// 6 significant digits, so that timing noise below that does not change the file's bytes.
double round6(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return std::strtod(buf, nullptr);
}

json rounded(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? json(round6(j[key].get<double>())) : json(nullptr);
}

double median_ms(const json& r) { return r.at("time").at("median_ms").get<double>(); }


std::string status_counts(const std::vector<json>& records) {
  std::map<std::string, int> n;
  for (const auto& r : records) ++n[r.value("status", "?")];
  std::string out;
  for (const auto& [s, k] : n) out += (out.empty() ? "" : ", ") + s + " " + std::to_string(k);
  return out.empty() ? "no records" : out;
}

std::string c_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += char(ch);
    } else if (ch < 0x20 || ch >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", ch);  // octal escapes stop after 3 digits: unambiguous
      out += buf;
    } else {
      out += char(ch);
    }
  }
  return out + "\"";
}

std::string c_double(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

// Per family: the candidate ok on the most problems. Preferred, in order: not a library, never wrong
// (wrong_result / runtime_error on any problem), ok on more problems, lower geometric-mean ratio to
// each problem's best, then the name (a fixed order).
json safe_defaults(const std::vector<json>& records, const std::vector<Choice>& choices) {
  std::map<std::string, double> best_ms;  // problem key -> the chosen best's time
  std::map<std::string, int> problems;    // family -> problems with an ok record
  for (const auto& c : choices) {
    best_ms[c.problem_key] = median_ms(c.best);
    ++problems[c.best.at("family").get<std::string>()];
  }
  struct Stats {
    json variant, config;
    bool library = false, failed = false;
    int ok = 0;
    double log_sum = 0;
    double geomean() const { return std::exp(log_sum / ok); }
  };
  std::map<std::string, std::map<std::string, Stats>> stats;  // family -> candidate -> stats
  std::map<std::pair<std::string, std::string>, const json*> latest_ok;  // as select_best: later replaces
  for (const auto& r : records) {
    const std::string st = r.value("status", "");
    const std::string fam = r.contains("family") ? r["family"].get<std::string>() : r.at("problem").at("family").get<std::string>();
    Stats& s = stats[fam][r.at("candidate").get<std::string>()];
    s.variant = r.at("variant");
    s.config = r.value("config", json::object());
    s.library = r.value("library", false);
    if (is_wrong(r)) s.failed = true;
    if (st == status::ok && r.contains("time")) latest_ok[{r.at("problem_key").get<std::string>(), r["candidate"].get<std::string>()}] = &r;
  }
  for (const auto& [key, r] : latest_ok) {
    Stats& s = stats[r->contains("family") ? (*r)["family"].get<std::string>() : (*r)["problem"]["family"].get<std::string>()][key.second];
    ++s.ok;
    s.log_sum += std::log(median_ms(*r) / best_ms.at(key.first));
  }
  json out = json::object();
  for (const auto& [fam, cands] : stats) {
    const std::pair<const std::string, Stats>* pick = nullptr;
    auto rank = [](const Stats& s, const std::string& name) {
      return std::make_tuple(s.library, s.failed, -s.ok, s.geomean(), name);
    };
    for (const auto& c : cands)
      if (c.second.ok > 0 && (!pick || rank(c.second, c.first) < rank(pick->second, pick->first))) pick = &c;
    if (!pick) continue;
    const Stats& s = pick->second;
    out[fam] = {{"variant", s.variant},        {"config", s.config},           {"candidate", pick->first},
                {"ok_problems", s.ok},         {"problems", problems[fam]},   {"geomean_ratio", round6(s.geomean())}};
  }
  return out;
}

}  // namespace

json make_dispatch(const json& summary, const std::vector<json>& records, bool with_model, const std::vector<json>& training) {
  const std::vector<Choice> choices = select_best(records);
  if (choices.empty())
    throw InputError("no ok records to export (" + status_counts(records) + "): every candidate failed or was skipped");
  json entries = json::array();
  std::set<std::string> families;
  for (const auto& c : choices) {
    const json& b = c.best;
    json e;
    e["problem"] = b.at("problem");
    e["problem_key"] = c.problem_key;
    e["family"] = b.at("family");
    e["variant"] = b.at("variant");
    e["config"] = b.value("config", json::object());
    e["candidate"] = b.at("candidate");
    e["median_ms"] = round6(median_ms(b));
    e["gbps_effective"] = rounded(b, "gbps_effective");
    e["roofline_fraction"] = rounded(b, "roofline_fraction");
    if (c.runner_up.is_null()) {
      e["runner_up"] = nullptr;
      e["margin"] = nullptr;
    } else {
      e["runner_up"] = {{"candidate", c.runner_up.at("candidate")}, {"median_ms", round6(median_ms(c.runner_up))}};
      e["margin"] = round6(c.margin);
    }
    e["ties"] = c.ties.size();
    if (b.contains("repeats")) {  // a table over repeated runs: the median of each run that measured it
      e["repeats"] = b["repeats"];
      for (json& m : e["repeats"]["median_ms"]) m = round6(m.get<double>());
    }
    // The fastest config of each library variant, for benchmarks beside the choice (convtune_bench).
    json baselines = json::array();
    for (const auto& [variant, rec] : c.best_per_variant)
      if (rec.value("library", false))
        baselines.push_back({{"variant", variant},
                             {"config", rec.value("config", json::object())},
                             {"median_ms", round6(median_ms(rec))}});
    e["baselines"] = baselines;
    json alternates = json::array();
    for (const json& a : c.alternates)
      alternates.push_back({{"variant", a.at("variant")},
                            {"config", a.value("config", json::object())},
                            {"candidate", a.at("candidate")},
                            {"median_ms", round6(median_ms(a))}});
    e["alternates"] = alternates;
    families.insert(e["family"].get<std::string>());
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const json& a, const json& b) { return a["problem_key"].get<std::string>() < b["problem_key"].get<std::string>(); });

  json constraints = json::object(), required = json::object();
  for (const auto& f : families) {
    constraints[f] = find_family(f).constraint_dims();
    required[f] = find_family(f).required_dims();
  }
  const json s = summary.is_object() ? summary : json::object();
  json table = {{"schema", kDispatchSchema},
          {"device", s.value("device", json(nullptr))},
          {"ceilings", s.value("ceilings", json(nullptr))},
          {"git_sha", s.value("git_sha", json(nullptr))},
          {"entries", entries},
          {"fallback",
           {{"rules", {"exact shape", "nearest shape of the same family with compatible constraints", "safe default"}},
            {"constraints", constraints},
            {"required", required},
            {"defaults", safe_defaults(records, choices)}}}};
  if (with_model) {
    std::vector<json> all = training;  // first: a run's own record of a candidate replaces another run's
    all.insert(all.end(), records.begin(), records.end());
    json model = fit_models(table, all, ModelOptions::from_env());
    if (!model.is_null()) table["model"] = std::move(model);
  }
  // The plug-ins the table names travel in it (manifest and sources): the runtime library needs nothing else.
  if (const json plugins = plugins_named_by(table, summary); !plugins.empty()) table["plugins"] = plugins;
  return table;
}

namespace {

// candidate_can_run with the variant's space on the problem given: its config completed by that space (which
// refuses a parameter it lacks), then can_implement.
bool config_can_run(const Variant& v, const ParamSpace& space, const json& config, const Problem& p,
                    const DeviceInfo& dev) {
  try {
    return bool(v.can_implement(p, space.complete_config(config, "candidate"), dev));
  } catch (const std::exception&) {
    return false;  // a config this convtune's variant does not have on this shape
  }
}

// Whether candidates can run a problem here, as the runtime prepares them: the variant registered, of the
// problem's family, its config completed by the shape's space (which refuses a parameter it lacks, e.g. a
// fused epilogue offered to a layer without one), then can_implement. One lookup asks about many configs of
// few variants: each variant's space on the problem is built once.
struct RunCheck {
  const CompiledTable* table;  // for can_run_entry
  const Problem* problem;
  const DeviceInfo* dev;
  std::map<const Variant*, std::optional<ParamSpace>> spaces = {};  // nullopt: space() refuses this shape

  bool can_run(const Variant* v, const json& config) {
    if (!v || v->family() != problem->family) return false;
    auto it = spaces.find(v);
    if (it == spaces.end()) {
      std::optional<ParamSpace> space;
      try {
        space = v->space(*problem, *dev);
      } catch (const std::exception&) {
      }
      it = spaces.emplace(v, std::move(space)).first;
    }
    return it->second && config_can_run(*v, *it->second, config, *problem, *dev);
  }
  bool can_run(const json& candidate) {
    return can_run(Registry::instance().find(candidate.at("variant").get<std::string>()),
                   candidate.contains("config") ? candidate["config"] : json::object());
  }
};

// rules::CanRun over a RunCheck.
bool runs_here(const rules::Entry& e, const int64_t*, void* context) {
  RunCheck& c = *static_cast<RunCheck*>(context);
  const ResolvedCandidate& r = c.table->resolved(e);
  return c.can_run(r.variant, r.config);
}

std::vector<int64_t> dims_of(const Problem& p) {
  std::vector<int64_t> dims;
  for (const auto& d : p.type().dims()) dims.push_back(p.at(d.name));
  return dims;
}

json entry_json(const DispatchTable::Pick& t, const rules::Entry& e, const std::string& rule) {
  const CompiledTable& c = *t.table;
  if (rule == "exact" || rule == "nearest") return c.source->at("entries").at(size_t(&e - c.entries.data()));
  json out = entry_candidate(e);
  out["family"] = e.family;
  return out;
}

}  // namespace

bool candidate_can_run(const json& candidate, const Problem& p, const DeviceInfo& dev) {
  return RunCheck{nullptr, &p, &dev}.can_run(candidate);
}

bool candidate_can_run(const Variant* v, const json& config, const Problem& p, const DeviceInfo& dev) {
  return RunCheck{nullptr, &p, &dev}.can_run(v, config);
}

std::vector<json> fallback_chain(const DispatchTable::Pick& t, const Problem& p, const DeviceInfo* dev, const Lookup& pick) {
  std::vector<json> out;
  std::set<std::string> seen;
  auto add = [&](const json& c, const std::string& rule) {
    const json config = c.value("config", json::object());
    const std::string name = c.value("candidate", candidate_name(c.at("variant").get<std::string>(), config));
    if (seen.insert(name).second)
      out.push_back({{"variant", c.at("variant")}, {"config", config}, {"candidate", name}, {"rule", rule}});
  };
  add(pick.entry, pick.rule);
  const rules::FamilyInfo* f = rules::find_family(t.view, p.family.c_str());
  if (pick.rule == "model" && f && f->model_index >= 0 && t.view.models) {
    const rules::Model& m = t.view.models[f->model_index];
    const std::vector<int64_t> dims = dims_of(p);
    RunCheck check{t.table, &p, dev};
    int top[kChainModel];
    const int n = rules::rank_by_model(m, *f, dims.data(), dev ? runs_here : nullptr, &check, top, nullptr, kChainModel);
    for (int i = 0; i < n; ++i) add(entry_candidate(m.candidates[top[i]]), "model");
  }
  if (f && f->default_index >= 0) add(entry_candidate(t.view.defaults[f->default_index]), "default");
  if (const json simplest = simplest_candidate(p.family); !simplest.is_null()) out.push_back(simplest);
  return out;
}

json simplest_candidate(const std::string& family) {
  const Variant* simplest = nullptr;
  for (const Variant* v : Registry::instance().of_family(family))
    if (!v->library() && (!simplest || std::make_pair(v->complexity(), v->name()) < std::make_pair(simplest->complexity(), simplest->name())))
      simplest = v;
  if (!simplest) return nullptr;
  return {{"variant", simplest->name()}, {"config", nullptr}, {"rule", "simplest"}};
}

namespace {

// lookup() with the caller's RunCheck, so that what it learnt (each variant's space on the shape) serves the
// caller's next questions.
Lookup lookup_checked(const DispatchTable::Pick& t, const Problem& p, const DeviceInfo* dev, RunCheck& check) {
  const std::vector<int64_t> dims = dims_of(p);
  const rules::Choice c = rules::select(t.view, p.family.c_str(), dims.data(), int(dims.size()),
                                        dev ? runs_here : nullptr, &check);
  if (!c.entry) {
    std::string covered;
    for (const auto& f : t.table->families) covered += (covered.empty() ? "" : ", ") + std::string(f.name);
    throw NoCandidate("the dispatch table has no candidate for " + p.key() +
                     (dev ? " that can run on " + dev->name : std::string()) + " (it covers: " +
                     (covered.empty() ? "nothing" : covered) + ")");
  }
  Lookup out{entry_json(t, *c.entry, c.rule), c.rule};
  if (out.rule == "model") {
    out.predicted_ratio = std::exp2(double(c.predicted));
    const json& source = *t.table->source;  // (value() would copy the whole model)
    if (!(source.contains("model") && source["model"].value("relative", false)))
      out.predicted_ms = table_floor_ms(*t.table->source, p) * out.predicted_ratio;
  }
  return out;
}

}  // namespace

Lookup lookup(const DispatchTable::Pick& t, const Problem& p, const DeviceInfo* dev) {
  RunCheck check{t.table, &p, dev};
  return lookup_checked(t, p, dev, check);
}

Lookup lookup(const json& dispatch, const Problem& p, const DeviceInfo* dev) {
  const DispatchTable table(dispatch);
  return lookup(table.pick(dev ? dev->name : "", dev ? std::to_string(dev->cc_major) + "." + std::to_string(dev->cc_minor) : "", p.family), p, dev);
}

size_t shortlist_model_top() {
  const char* env = std::getenv("CONVTUNE_TUNE_TOP");
  if (!env || !*env) return kShortlistModel;
  const std::string text = env;
  if (text.size() <= 2 && text.find_first_not_of("0123456789") == std::string::npos) {
    const size_t top = size_t(std::stoul(text));
    if (top >= 1 && top <= kShortlistModelMax) return top;
  }
  throw InputError("CONVTUNE_TUNE_TOP: '" + text + "'; allowed: 1 to " + std::to_string(kShortlistModelMax) +
                   " (the model's candidates first-use tuning times; unset: " + std::to_string(kShortlistModel) + ")");
}

std::vector<json> tuning_shortlist(const DispatchTable::Pick& t, const Problem& p, const DeviceInfo* dev, size_t model_top) {
  RunCheck check{t.table, &p, dev};
  const Lookup pick = lookup_checked(t, p, dev, check);
  std::vector<json> out;
  std::set<std::string> seen;
  auto add = [&](const json& c) {
    const json config = c.value("config", json::object());
    const std::string name = c.value("candidate", candidate_name(c.at("variant").get<std::string>(), config));
    if (dev && !check.can_run(c)) return;
    if (seen.insert(name).second) out.push_back({{"variant", c.at("variant")}, {"config", config}, {"candidate", name}});
  };
  add(pick.entry);
  if (pick.rule == "exact" || pick.rule == "default") return out;
  const std::vector<int64_t> dims = dims_of(p);
  const rules::FamilyInfo* f = rules::find_family(t.view, p.family.c_str());
  if (f->model_index >= 0 && t.view.models) {
    const rules::Model& m = t.view.models[f->model_index];
    // The model's top k, each other variant's best by the model, and every library algorithm (they
    // compile nothing, so timing them costs only their runs): where the model misjudges a whole variant or
    // algorithm (e.g. FFT on a large filter it was never trained near), timing still finds it.
    std::vector<int> order(size_t(m.candidate_count));
    const int n = rules::rank_by_model(m, *f, dims.data(), dev ? runs_here : nullptr, &check, order.data(), nullptr,
                                       m.candidate_count, m.candidate_count);  // all: the lookup's and the rest
    std::set<std::string> variants;
    for (int i = 0; i < n; ++i) {
      const rules::Entry& c = m.candidates[order[size_t(i)]];
      const Variant* v = Registry::instance().find(c.variant);
      if (size_t(i) < model_top || variants.count(c.variant) == 0 || (v && v->library())) add(entry_candidate(c));
      variants.insert(c.variant);
    }
  }
  int near[kShortlistEntries];
  const int n = rules::nearest_entries(t.view, *f, dims.data(), dev ? runs_here : nullptr, &check, near, int(kShortlistEntries));
  for (int k = 0; k < n; ++k) {
    const json& e = t.table->source->at("entries").at(size_t(near[k]));
    add(e);
    const json alternates = e.value("alternates", json::array());
    for (size_t a = 0; a + 1 < kShortlistPerEntry && a < alternates.size(); ++a) add(alternates[a]);
  }
  return out;
}

std::vector<json> tuning_shortlist(const json& dispatch, const Problem& p, const DeviceInfo* dev, size_t model_top) {
  const DispatchTable table(dispatch);
  return tuning_shortlist(table.pick(dev ? dev->name : "", dev ? std::to_string(dev->cc_major) + "." + std::to_string(dev->cc_minor) : "", p.family),
                          p, dev, model_top);
}

namespace {

std::string c_float(float x) {
  std::string s = shortest_float_text(x);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s + "f";
}

// One Entry initializer: {family, {dims}, variant, {params}, param_count, median_ms, candidate}.
std::string c_entry(const rules::Entry& e, int n_dims) {
  std::string out = "{" + c_string(e.family) + ", {";
  for (int i = 0; i < n_dims; ++i) out += (i ? ", " : "") + std::to_string(e.dims[i]);
  out += "}, " + c_string(e.variant) + ", {";
  for (int i = 0; i < e.param_count; ++i) {
    const rules::Param& p = e.params[i];
    out += std::string(i ? ", " : "") + "{" + c_string(p.name) + ", " +
           (p.str_value ? "0, " + c_string(p.str_value) : std::to_string(p.int_value) + ", nullptr") + "}";
  }
  return out + "}, " + std::to_string(e.param_count) + ", " + c_double(e.median_ms) + ", " + c_string(e.candidate) + "}";
}

int family_dims(const rules::Table& t, const char* family) {
  const rules::FamilyInfo* f = rules::find_family(t, family);
  return f ? f->n_dims : 0;
}

void c_names(std::ostringstream& o, const std::string& name, const char* const* names, int n) {
  o << "inline constexpr const char* " << name << "[] = {";
  for (int i = 0; i < n; ++i) o << (i ? ", " : "") << c_string(names[i]);
  o << (n ? "" : "nullptr") << "};\n";
}

// A family's model as arrays, and its Model initializer (returned).
std::string header_model(std::ostringstream& o, const rules::Model& m, int nodes, const rules::FamilyInfo& f, int index) {
  const int statics = rules::static_feature_count(m);
  const std::string k = "kModel" + std::to_string(index);
  c_names(o, k + "Variants", m.variants, m.variant_count);
  c_names(o, k + "Numeric", m.numeric, m.numeric_count);
  c_names(o, k + "StringKeys", m.string_keys, m.string_count);
  c_names(o, k + "StringValues", m.string_values, m.string_count);
  o << "inline constexpr Node " << k << "Nodes[] = {\n";
  for (int i = 0; i < nodes; ++i) {
    const rules::Node& n = m.nodes[i];
    o << "{" << n.feature << "," << c_float(n.threshold) << ",{" << n.next[0] << "," << n.next[1] << "}},\n";
  }
  o << "};\ninline constexpr int " << k << "Roots[] = {";
  for (int t = 0; t < m.tree_count; ++t) o << (t ? ", " : "") << m.roots[t];
  o << "};\ninline constexpr Entry " << k << "Candidates[] = {\n";
  for (int c = 0; c < m.candidate_count; ++c) o << "    " << c_entry(m.candidates[c], f.n_dims) << ",\n";
  o << "};\n// static_features() of each candidate, a row each.\ninline constexpr float " << k << "CandidateFeatures[] = {";
  for (int i = 0; i < m.candidate_count * statics; ++i) o << (i % 8 ? " " : "\n    ") << c_float(m.candidate_features[i]) << ",";
  o << (m.candidate_count * statics > 0 ? "" : "0.0f") << "\n};\n";
  c_names(o, k + "Traits", m.traits, m.trait_count);
  for (int q = 0; q < m.quantity_count; ++q) {
    o << "inline constexpr Step " << k << "Steps" << q << "[] = {";
    for (int i = 0; i < m.quantities[q].step_count; ++i)
      o << (i ? ", " : "") << "{" << m.quantities[q].steps[i].op << ", " << m.quantities[q].steps[i].arg << "}";
    o << "};\n";
  }
  o << "inline constexpr Quantity " << k << "Quantities[] = {";
  for (int q = 0; q < m.quantity_count; ++q)
    o << (q ? ", " : "") << "{" << c_string(m.quantities[q].name) << ", " << k << "Steps" << q << ", " << m.quantities[q].step_count << "}";
  o << (m.quantity_count ? "" : "{nullptr, nullptr, 0}") << "};\n";
  return "{" + k + "Variants, " + std::to_string(m.variant_count) + ", " + k + "Numeric, " + std::to_string(m.numeric_count) +
         ", " + k + "StringKeys, " + k + "StringValues, " + std::to_string(m.string_count) + ", " + c_float(m.base) + ", " +
         k + "Nodes, " + k + "Roots, " + std::to_string(m.tree_count) + ", " + k + "Candidates, " +
         std::to_string(m.candidate_count) + ", " + k + "CandidateFeatures, " + std::to_string(m.depth) + ", " + k +
         "Quantities, " + std::to_string(m.quantity_count) + ", " + k + "Traits, " + std::to_string(m.trait_count) + ", " +
         std::to_string(m.sms) + ", " + std::to_string(m.lookup_count) + "}";
}

// One table's arrays, kTable and select(). In a fleet header each table is a namespace of its own.
void header_table(std::ostringstream& o, const CompiledTable& c) {
  const json& src = *c.source;
  const std::string sha = src.contains("git_sha") && src["git_sha"].is_string() ? src["git_sha"].get<std::string>() : "";
  o << "inline constexpr char kDevice[] = " << c_string(c.view.device) << ";\n"
    << "inline constexpr char kArch[] = " << c_string(device_field(src, "arch")) << ";\n"
    << "inline constexpr char kComputeCapability[] = " << c_string(c.view.compute_capability) << ";\n"
    << "inline constexpr char kGitSha[] = " << c_string(sha) << ";\n\n";
  o << "inline constexpr FamilyInfo kFamilies[] = {\n";
  for (const rules::FamilyInfo& f : c.families) {
    std::string names, flags, required, defaults;
    for (int i = 0; i < f.n_dims; ++i) {
      names += (i ? ", " : "") + c_string(f.dims[i]);
      flags += std::string(i ? ", " : "") + (f.constraint[i] ? "true" : "false");
      required += std::string(i ? ", " : "") + (f.required[i] ? "true" : "false");
      defaults += (i ? ", " : "") + std::to_string(f.defaults[i]);
    }
    o << "    {" << c_string(f.name) << ", " << f.n_dims << ", {" << names << "}, {" << flags << "}, {" << required
      << "}, " << f.default_index << ", " << f.model_index << ", " << f.min_dims << ", {" << defaults << "}},\n";
  }
  // A zero-length array is ill-formed: an empty list gets one unused {} element (the counts say 0).
  o << "};\ninline constexpr int kFamilyCount = " << c.families.size() << ";\n\n"
    << "// Sorted by problem key; on equal distances the first wins.\ninline constexpr Entry kEntries[] = {\n";
  for (const rules::Entry& e : c.entries) o << "    " << c_entry(e, family_dims(c.view, e.family)) << ",\n";
  if (c.entries.empty()) o << "    {},\n";
  o << "};\ninline constexpr int kEntryCount = " << c.entries.size() << ";\n\n"
    << "// Per family, in kFamilies order: the candidate ok on the most problems.\ninline constexpr Entry kDefaults[] = {\n";
  for (const rules::Entry& e : c.defaults) o << "    " << c_entry(e, 0) << ",\n";
  if (c.defaults.empty()) o << "    {},\n";
  o << "};\n\n";
  std::vector<std::string> models;
  for (size_t i = 0; i < c.models.size(); ++i)
    models.push_back(header_model(o, c.models[i], int(c.node_lists[i].size()), *rules::find_family(c.view, c.model_families[i].c_str()), int(i)));
  o << "inline constexpr Model kModels[] = {\n";
  for (const auto& m : models) o << "    " << m << ",\n";
  if (models.empty()) o << "    {},\n";
  o << "};\n\ninline constexpr Table kTable = {kDevice, kComputeCapability, kFamilies, kFamilyCount, kEntries, kEntryCount, "
    << "kDefaults, " << (models.empty() ? "nullptr" : "kModels") << "};\n\n"
    << "// The candidate for a problem of `family` with dims in the family's order (rules above).\n"
    << "inline Choice select(const char* family, const int64_t* dims, int n_dims, CanRun can_run = nullptr,\n"
    << "                     void* context = nullptr) {\n"
    << "  return convtune_dispatch::select(kTable, family, dims, n_dims, can_run, context);\n}\n";
}

// The rules, verbatim, as the header's first part.
void header_prologue(std::ostringstream& o, const std::string& what) {
  o << "// Generated by `convtune export` from " << what
    << ".\n// Do not edit: re-export instead. Format and rules: docs/DISPATCH.md in convtune.\n"
    << "// What follows up to the tables is convtune's harness/dispatch_rules.h, verbatim.\n"
    << embedded_source("dispatch_rules.h") << "\nnamespace convtune_dispatch {\n\n";
}

}  // namespace

std::string make_header(const json& dispatch) {
  const DispatchTable table(dispatch);
  std::ostringstream o;
  header_prologue(o, "a tuning run on " + device_field(dispatch, "name") + " (" + device_field(dispatch, "arch") +
                         "), convtune " + (dispatch.contains("git_sha") && dispatch["git_sha"].is_string() ? dispatch["git_sha"].get<std::string>() : ""));
  header_table(o, table.table(0));
  o << "\n}  // namespace convtune_dispatch\n";
  return o.str();
}

std::string make_fleet_header(const json& fleet) {
  const DispatchTable table(fleet);
  std::ostringstream o;
  std::string models;
  for (size_t i = 0; i < table.size(); ++i) models += (models.empty() ? "" : ", ") + std::string(table.table(i).view.device);
  header_prologue(o, "tuning runs on " + models + " (a fleet table)");
  for (size_t i = 0; i < table.size(); ++i) {
    o << "namespace table" << i << " {\n\n";
    header_table(o, table.table(i));
    o << "\n}  // namespace table" << i << "\n\n";
  }
  o << "// One table per GPU model, as measured.\ninline constexpr Table kTables[] = {";
  for (size_t i = 0; i < table.size(); ++i) o << (i ? ", " : "") << "table" << i << "::kTable";
  o << "};\ninline constexpr int kTableCount = " << table.size() << ";\n\n";
  o << R"(struct FleetChoice {
  Choice choice;
  const Table* table;      // the table used (the first one for "default")
  const char* table_rule;  // "exact model" | "same architecture" | "default"
};

// The choice on the GPU the program runs on (its name and compute capability, e.g. "NVIDIA H100 80GB
// HBM3" and "9.0"): the table of that exact model; else of a model of the same architecture (of those that
// have the family); else no measured table applies and the family's safe default (of the first table) is used.
inline FleetChoice select(const char* device_name, const char* compute_capability, const char* family,
                          const int64_t* dims, int n_dims, CanRun can_run = nullptr, void* context = nullptr) {
  const char* rule = "";
  const int i = pick_table(kTables, kTableCount, device_name, compute_capability, &rule, family);
  if (i < 0) {
    static const Table defaults = defaults_only(kTables[0]);
    return {convtune_dispatch::select(defaults, family, dims, n_dims, can_run, context), &kTables[0], rule};
  }
  return {convtune_dispatch::select(kTables[i], family, dims, n_dims, can_run, context), &kTables[i], rule};
}

}  // namespace convtune_dispatch
)";
  return o.str();
}

json make_t4(const json& summary, const std::vector<json>& records) {
  static const std::map<std::string, std::string> invalidity = {
      {"ok", "correct"},          {"timeout", "timeout"},         {"compile_error", "compile"},
      {"runtime_error", "runtime"}, {"wrong_result", "correctness"}, {"skipped", "constraints"}};
  json results = json::array();
  for (const auto& r : records) {
    const std::string st = r.value("status", "");
    json configuration = {{"variant", r.value("variant", "")}};
    const json problem = r.value("problem", json::object()), config = r.value("config", json::object());
    for (const auto& [k, v] : problem.items()) configuration["problem." + k] = v;
    for (const auto& [k, v] : config.items()) configuration[k] = v;
    json times = {{"compilation_time", r.value("compile_ms", 0.0)}, {"runtimes", json::array()}};
    json measurements = json::array();
    if (st == "ok" && r.contains("time")) {
      times["runtimes"].push_back(r["time"]["median_ms"]);
      measurements.push_back({{"name", "time"}, {"value", r["time"]["median_ms"]}, {"unit", "ms"}});
      measurements.push_back({{"name", "gbps_effective"}, {"value", r.value("gbps_effective", 0.0)}, {"unit", "GB/s"}});
      measurements.push_back({{"name", "roofline_fraction"}, {"value", r.value("roofline_fraction", 0.0)}, {"unit", ""}});
    }
    auto inv = invalidity.find(st);
    results.push_back({{"timestamp", r.value("timestamp", "")},
                       {"configuration", configuration},
                       {"objectives", {"time"}},
                       {"times", times},
                       {"invalidity", inv == invalidity.end() ? "runtime" : inv->second},
                       {"correctness", st == "ok" ? 1 : 0},
                       {"measurements", measurements}});
  }
  const json s = summary.is_object() ? summary : json::object();
  return {{"schema_version", "1.0.0"},
          {"results", results},
          {"metadata", {{"tool", "convtune"}, {"device", s.value("device", json::object()).value("name", "")},
                        {"git_sha", s.value("git_sha", "")}}}};
}

RunTable read_run(const std::filesystem::path& run_folder) {
  if (!std::filesystem::is_directory(run_folder))
    throw InputError(run_folder.string() + ": not a run folder (no such directory)");
  RunTable t;
  t.folder = run_folder;
  t.summary = read_run_summary(run_folder);
  if (!t.summary.contains("device"))  // a table must say which GPU it was measured on
    throw InputError((run_folder / "summary.json").string() + ": device is missing; allowed: the GPU's name, arch "
                     "and limits, as convtune sweep writes them");
  ReadResult rr = read_records(run_folder / "records.jsonl");
  for (const auto& p : rr.problems) std::cerr << "warning: skipped an unreadable record: " << p << "\n";
  t.records = std::move(rr.records);
  return t;
}

namespace {
// make_dispatch of `records`; when nothing is ok, the InputError names `run`'s records file.
json dispatch_naming(const RunTable& run, const std::vector<json>& records) {
  try {
    return make_dispatch(run.summary, records, true, run.training);
  } catch (const InputError& e) {
    throw InputError(stored_records_file(run.folder / "records.jsonl").string() + ": " + e.what());
  }
}
}  // namespace

json run_dispatch(const RunTable& run) { return dispatch_naming(run, run.records); }

std::string device_field(const json& with_device, const char* key) {
  const json dev = with_device.is_object() ? with_device.value("device", json::object()) : json::object();
  return dev.is_object() ? dev.value(key, std::string()) : std::string();
}

json dispatch_over_repeats(const RunTable& run, const std::vector<RunTable>& repeats) {
  const std::string model = device_field(run.summary, "name");
  if (model.empty())
    throw InputError("export --repeat: " + run.folder.string() + "/summary.json has no device.name, so its repeats "
                     "cannot be checked to be of its GPU model");
  std::vector<const std::vector<json>*> records{&run.records};
  json sources = json::array();
  for (size_t i = 0; i < repeats.size(); ++i) {
    const RunTable& r = repeats[i];
    if (std::filesystem::equivalent(r.folder, run.folder))
      throw InputError("export --repeat " + r.folder.string() + ": the run itself; allowed: other runs of its GPU model");
    for (size_t j = 0; j < i; ++j)
      if (std::filesystem::equivalent(r.folder, repeats[j].folder))
        throw InputError("export --repeat " + r.folder.string() + ": given twice; allowed: each repeat once");
    if (device_field(r.summary, "name") != model)
      throw InputError("export --repeat " + r.folder.string() + ": device.name is '" + device_field(r.summary, "name") +
                       "'; allowed: '" + model + "', the GPU model of " + run.folder.string());
    sources.push_back({{"run", r.folder.string()},
                       {"started", r.summary.value("started", json())},
                       {"git_sha", r.summary.value("git_sha", json())}});
    records.push_back(&r.records);
  }
  json d = dispatch_naming(run, combine_repeats(records));
  d["repeats"] = sources;
  return d;
}

std::string dump_dispatch(const json& dispatch) {
  json shown = dispatch;
  std::vector<std::string> models;
  auto hold = [&](json& table) {
    if (!table.is_object() || !table.contains("model")) return;
    table["model"] = "\x01model " + std::to_string(models.size());  // a placeholder no table can hold
    models.push_back(dispatch.contains("tables") ? dispatch["tables"][models.size()]["model"].dump() : dispatch["model"].dump());
  };
  if (shown.contains("tables") && shown["tables"].is_array()) {
    for (json& t : shown["tables"]) {
      if (!t.contains("model")) models.push_back("");  // keep the index of each table
      else hold(t);
    }
  } else {
    hold(shown);
  }
  std::string text = shown.dump(2) + "\n";
  for (size_t i = 0; i < models.size(); ++i) {
    const std::string placeholder = json("\x01model " + std::to_string(i)).dump();
    const size_t at = text.find(placeholder);
    if (at != std::string::npos) text.replace(at, placeholder.size(), models[i]);
  }
  return text;
}

void attach_training(std::vector<RunTable>& runs, const std::vector<std::filesystem::path>& train) {
  for (const auto& folder : train) {
    RunTable t = read_run(folder);
    const std::string model = device_field(t.summary, "name");
    std::string models;
    auto run = runs.begin();
    for (; run != runs.end() && device_field(run->summary, "name") != model; ++run)
      models += (models.empty() ? "'" : ", '") + device_field(run->summary, "name") + "'";
    if (run == runs.end())
      throw InputError("export --train " + folder.string() + ": device.name is '" + model +
                       "'; allowed: the GPU models of the runs exported, " + models);
    std::error_code ignored;
    if (std::filesystem::equivalent(folder, run->folder, ignored))  // its records would count twice
      throw InputError("export --train " + folder.string() + ": the run itself; allowed: other runs of its GPU model");
    run->training.insert(run->training.end(), t.records.begin(), t.records.end());
  }
}

namespace {
// The three files of an export, built in memory so that a failure leaves the folder as it was.
struct RunExport {
  std::string dispatch, header, t4;
};

RunExport build_run_export(const std::filesystem::path& run_folder, const std::vector<std::filesystem::path>& repeats,
                           const std::vector<std::filesystem::path>& train) {
  std::vector<RunTable> t = {read_run(run_folder)};
  attach_training(t, train);
  std::vector<RunTable> read;
  for (const auto& folder : repeats) read.push_back(read_run(folder));
  try {
    const json dispatch = repeats.empty() ? run_dispatch(t[0]) : dispatch_over_repeats(t[0], read);
    return {dump_dispatch(dispatch), make_header(dispatch), make_t4(t[0].summary, t[0].records).dump(2) + "\n"};
  } catch (const json::exception& e) {  // a field of an unexpected kind that the checks on reading let by
    throw InputError("export: " + run_folder.string() + " holds a field of the wrong kind, nothing written: " + e.what());
  }
}
}  // namespace

void export_run(const std::filesystem::path& run_folder, const std::vector<std::filesystem::path>& repeats,
                const std::vector<std::filesystem::path>& train) {
  ModelOptions::from_env();  // a bad CONVTUNE_MODEL_OPTIONS is refused by name before a run is read
  const RunExport out = build_run_export(run_folder, repeats, train);
  write_text_atomically(run_folder / "dispatch.json", out.dispatch);
  write_text_atomically(run_folder / "convtune_dispatch.h", out.header);
  write_text_atomically(run_folder / "t4.json", out.t4);
}

}  // namespace convtune
