#include "harness/spec.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include "harness/error.h"
#include "harness/family.h"
#include "harness/plugin.h"
#include "harness/strategy.h"

namespace convtune {

static std::vector<int64_t> expand_dim(const json& v, const std::string& where) {
  auto integer = [&](const json& x, const std::string& at) {
    if (!x.is_number_integer()) throw InputError(at + ": " + x.dump() + " is not an integer");
    return x.get<int64_t>();
  };
  if (v.is_number_integer()) return {v.get<int64_t>()};
  if (v.is_array()) {
    if (v.empty()) throw InputError(where + ": an empty list");
    std::vector<int64_t> out;
    for (size_t i = 0; i < v.size(); ++i) out.push_back(integer(v[i], where + "[" + std::to_string(i) + "]"));
    return out;
  }
  if (v.is_object() && v.size() == 1 && v.contains("range")) {
    const json& r = v["range"];
    if (!r.is_array() || r.size() < 2 || r.size() > 3)
      throw InputError(where + ".range: must be [first, last] or [first, last, step]");
    const int64_t a = integer(r[0], where + ".range[0]"), b = integer(r[1], where + ".range[1]");
    const int64_t step = r.size() == 3 ? integer(r[2], where + ".range[2]") : 1;
    if (step <= 0 || b < a) throw InputError(where + ".range: needs first <= last and a positive step");
    // In unsigned arithmetic: last - first of two int64 overflows an int64 (and a step past last would too).
    const uint64_t steps = (uint64_t(b) - uint64_t(a)) / uint64_t(step);
    if (steps > 100000) throw InputError(where + ".range: more than 100000 values");
    std::vector<int64_t> out;
    for (uint64_t i = 0; i <= steps; ++i) out.push_back(int64_t(uint64_t(a) + i * uint64_t(step)));  // wraps back in range
    return out;
  }
  if (v.is_object() && v.size() == 1 && v.contains("pow2")) {
    const json& r = v["pow2"];
    if (!r.is_array() || r.size() != 2) throw InputError(where + ".pow2: must be [first, last]");
    const int64_t a = integer(r[0], where + ".pow2[0]"), b = integer(r[1], where + ".pow2[1]");
    if (a <= 0 || b < a) throw InputError(where + ".pow2: needs 0 < first <= last");
    std::vector<int64_t> out;
    for (int64_t x = 1;; x *= 2) {
      if (x >= a) out.push_back(x);
      if (x > b / 2) break;  // the next would pass last, or overflow
    }
    if (out.empty()) throw InputError(where + ".pow2: no power of two in [" + std::to_string(a) + ", " + std::to_string(b) + "]");
    return out;
  }
  throw InputError(where + ": must be an integer, a list, {\"range\": [first, last, step]} or {\"pow2\": [first, last]}");
}

std::vector<Problem> expand_problems(const json& entry, const std::string& where) {
  if (!entry.is_object() || !entry.contains("family") || !entry["family"].is_string())
    throw InputError(where + ".family: missing; allowed: " + FamilyRegistry::instance().names_joined());
  std::string family;
  try {
    family = find_family(entry["family"].get<std::string>()).name();
  } catch (const InputError& e) {  // "unknown family ...": which entry
    throw InputError(where + ".family: " + e.what());
  }
  std::vector<std::map<std::string, int64_t>> shapes(1);
  for (const auto& [k, v] : entry.items()) {
    if (k == "family") continue;
    const auto vals = expand_dim(v, where + "." + k);
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto& s : shapes)
      for (int64_t x : vals) {
        auto t = s;
        t[k] = x;
        next.push_back(std::move(t));
      }
    shapes = std::move(next);
    if (shapes.size() > 100000) throw InputError(where + ": more than 100000 problems");
  }
  std::vector<Problem> out;
  for (auto& s : shapes) {
    Problem p;
    p.family = family;
    p.dims = std::move(s);
    validate(p, where);
    out.push_back(std::move(p));
  }
  return out;
}

// spec.plugins: plug-in folders (harness/plugin.h), registered like built-in variants.
static void load_spec_plugins(const json& list) {
  if (!list.is_array()) throw InputError("spec.plugins: " + list.dump() + " is not allowed; allowed: a list of plug-in folders");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "spec.plugins[" + std::to_string(i) + "]";
    if (!list[i].is_string()) throw InputError(where + ": " + list[i].dump() + " is not allowed; allowed: a folder path");
    try {
      load_plugins(list[i].get<std::string>());
    } catch (const InputError& e) {
      throw InputError(where + ": " + e.what());
    }
  }
}

SweepSpec SweepSpec::parse(const json& j) {
  if (!j.is_object()) throw InputError("spec: must be a JSON object");
  static const std::set<std::string> allowed = {"name", "description", "problems", "variants", "params",
                                                "strategy", "budget", "measure", "plugins"};
  for (const auto& [k, v] : j.items()) {
    (void)v;
    if (!allowed.count(k))
      throw InputError("spec." + k + ": unknown field; allowed: name, description, problems, variants, params, "
                       "strategy, budget, measure, plugins");
  }
  if (j.contains("plugins")) load_spec_plugins(j["plugins"]);  // before the variants are matched
  SweepSpec s;
  s.source = j;
  if (!j.contains("name")) throw InputError("spec.name: missing; a short name for the run folder, e.g. \"conv2d\"");
  if (!j["name"].is_string() || j["name"].get<std::string>().empty())
    throw InputError("spec.name: " + j["name"].dump() + "; allowed: a short name for the run folder, e.g. \"conv2d\"");
  s.name = j["name"].get<std::string>();
  for (char c : s.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
      throw InputError("spec.name: '" + s.name + "' may hold only letters, digits, '-' and '_'");
  if (!j.contains("problems")) throw InputError("spec.problems: missing; a list of {\"family\": ..., dims...}");
  if (!j["problems"].is_array() || j["problems"].empty())
    throw InputError("spec.problems: " + j["problems"].dump().substr(0, 60) +
                     "; allowed: a non-empty list of {\"family\": ..., dims...}");
  std::set<std::string> keys;  // a shape listed twice (a repeated value, overlapping grids) is measured once
  for (size_t i = 0; i < j["problems"].size(); ++i)
    for (auto& p : expand_problems(j["problems"][i], "spec.problems[" + std::to_string(i) + "]"))
      if (keys.insert(p.key()).second) s.problems.push_back(std::move(p));
  if (!j.contains("variants")) {
    s.variant_patterns = {"*"};
  } else {
    const json& v = j["variants"];
    if (!v.is_array() || v.empty()) throw InputError("spec.variants: must be a non-empty list of names or globs");
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) throw InputError("spec.variants[" + std::to_string(i) + "]: must be a string");
      const std::string pat = v[i].get<std::string>();
      try {
        Registry::instance().match(pat);
      } catch (const InputError& e) {
        throw InputError("spec.variants[" + std::to_string(i) + "]: " + e.what());
      }
      s.variant_patterns.push_back(pat);
    }
  }
  if (j.contains("params")) {
    if (!j["params"].is_object()) throw InputError("spec.params: must be an object {variant: {param: values}}");
    for (const auto& [name, over] : j["params"].items()) {
      if (!Registry::instance().find(name))
        throw InputError("spec.params." + name + ": unknown variant; allowed: " + Registry::instance().names_joined());
      if (!over.is_object()) throw InputError("spec.params." + name + ": must be an object {param: values}");
    }
    s.params = j["params"];
  }
  if (j.contains("strategy")) {
    std::string allowed;
    for (const auto& n : strategy_names()) allowed += (allowed.empty() ? "" : ", ") + n;
    if (!j["strategy"].is_string())
      throw InputError("spec.strategy: " + j["strategy"].dump() + " is not a strategy; allowed: " + allowed);
    s.strategy = j["strategy"].get<std::string>();
    if (std::find(strategy_names().begin(), strategy_names().end(), s.strategy) == strategy_names().end())
      throw InputError("spec.strategy: '" + s.strategy + "' is not a strategy; allowed: " + allowed);
  }
  if (j.contains("budget")) {
    const json& b = j["budget"];
    if (!b.is_object()) throw InputError("spec.budget: must be an object");
    for (const auto& [k, v] : b.items()) {
      if (k == "max_evaluations_per_problem") {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1000000000)
          throw InputError("spec.budget.max_evaluations_per_problem: " + v.dump() +
                           " is not allowed; allowed: an integer in 0..1000000000 (0 = no limit)");
        s.budget.max_evaluations_per_problem = v.get<int>();
      } else if (k == "candidate_timeout_s") {
        if (!v.is_number() || v.get<double>() <= 0)
          throw InputError("spec.budget.candidate_timeout_s: " + v.dump() + " is not allowed; allowed: a positive number of seconds");
        s.budget.candidate_timeout_s = v.get<double>();
      } else if (k == "seconds_per_problem" || k == "seconds_total") {
        if (!v.is_number() || v.get<double>() < 0)
          throw InputError("spec.budget." + k + ": " + v.dump() +
                           " is not allowed; allowed: a non-negative number of seconds (0 = no limit)");
        (k == "seconds_total" ? s.budget.seconds_total : s.budget.seconds_per_problem) = v.get<double>();
      } else {
        throw InputError("spec.budget." + k +
                         ": unknown field; allowed: max_evaluations_per_problem, seconds_per_problem, seconds_total, "
                         "candidate_timeout_s");
      }
    }
  }
  if (j.contains("measure")) s.measure = MeasureOptions::from_json(j["measure"], "spec.measure");
  // Check the parameter restrictions against each variant's space now, not mid-sweep.
  const DeviceInfo offline = DeviceInfo::offline_sm90();
  for (const auto& p : s.problems) {
    const std::vector<const Variant*> variants = s.variants_for(p);
    // A problem no variant can measure is a mistake in the spec, not an empty sweep.
    if (variants.empty())
      throw InputError("spec.variants: none is of the family " + p.family + " (spec.problems has " + p.key() +
                       "); add e.g. \"" + p.family + ".*\"");
    for (const Variant* v : variants) s.space_for(*v, p, offline);
  }
  return s;
}

SweepSpec SweepSpec::load(const std::string& path) {
  if (std::filesystem::is_directory(path))
    throw InputError("spec: '" + path + "' is a directory, not a spec file; give a JSON file such as sweeps/default.json");
  std::ifstream in(path);
  if (!in) throw InputError("spec: cannot read '" + path + "'");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError("spec: " + path + " is not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("plugins") || !j["plugins"].is_array()) return parse(j);
  json resolved = j;  // plug-in folders are relative to the spec's own folder; the source keeps them as written
  for (auto& p : resolved["plugins"])
    if (p.is_string() && std::filesystem::path(p.get<std::string>()).is_relative())
      p = (std::filesystem::path(path).parent_path() / p.get<std::string>()).lexically_normal().string();
  SweepSpec s = parse(resolved);
  s.source = j;
  return s;
}

std::vector<const Variant*> SweepSpec::variants_for(const Problem& p) const {
  std::vector<const Variant*> out;
  std::set<std::string> seen;
  for (const auto& pat : variant_patterns)
    for (const Variant* v : Registry::instance().match(pat))
      if (v->family() == p.family && seen.insert(v->name()).second) out.push_back(v);
  return out;
}

ParamSpace SweepSpec::space_for(const Variant& v, const Problem& p, const DeviceInfo& dev) const {
  ParamSpace space = v.space(p, dev);
  if (params.contains(v.name())) return space.restricted(params[v.name()], "spec.params." + v.name());
  return space;
}

}  // namespace convtune
