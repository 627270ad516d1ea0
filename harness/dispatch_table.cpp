#include "harness/dispatch_table.h"

#include "harness/variant.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "harness/error.h"
#include "harness/family.h"
#include "harness/params.h"
#include "harness/records.h"

namespace convtune {
namespace {

std::vector<std::string> names_in(const json& fallback, const char* key, const std::string& family,
                                  std::vector<std::string> otherwise) {
  const json c = fallback.value(key, json::object());
  return c.is_object() && c.contains(family) ? c[family].get<std::vector<std::string>>() : otherwise;
}

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string where_of(const json& table) {
  const json dev = table.value("device", json::object());
  return dev.is_object() && dev.contains("name") && dev["name"].is_string()
             ? "dispatch table of " + dev["name"].get<std::string>()
             : std::string("dispatch table");
}

}  // namespace

std::vector<rules::Step> compile_quantity(const std::string& program, const std::vector<std::string>& dims,
                                          const std::string& where) {
  std::vector<rules::Step> steps;
  std::istringstream tokens(program);
  int depth = 0;
  for (std::string token; tokens >> token;) {
    const size_t op = std::string("+-*/").find(token);
    if (token.size() == 1 && op != std::string::npos) {
      if (depth < 2) throw InputError(where + ": '" + token + "' without two values before it in \"" + program + "\"");
      steps.push_back({rules::kAdd + int(op), 0});
      --depth;
      continue;
    }
    const auto dim = std::find(dims.begin(), dims.end(), token);
    if (dim != dims.end()) {
      steps.push_back({rules::kPushDim, int64_t(dim - dims.begin())});
    } else if (token.find_first_not_of("0123456789") == std::string::npos && token.size() < 10) {
      steps.push_back({rules::kPushConstant, std::stoll(token)});
    } else {
      std::string allowed;
      for (const auto& d : dims) allowed += d + ", ";
      throw InputError(where + ": '" + token + "' in \"" + program + "\"; allowed: " + allowed + "integers, + - * /");
    }
    ++depth;
  }
  if (depth != 1 || steps.size() > size_t(rules::kMaxSteps))
    throw InputError(where + ": \"" + program + "\" must leave one value in at most " + std::to_string(rules::kMaxSteps) +
                     " steps");
  return steps;
}

json entry_candidate(const rules::Entry& e) {
  json config = json::object();
  for (int i = 0; i < e.param_count; ++i)
    config[e.params[i].name] = e.params[i].str_value ? json(e.params[i].str_value) : json(e.params[i].int_value);
  return {{"variant", e.variant}, {"config", config}, {"candidate", e.candidate}};
}

const ResolvedCandidate& CompiledTable::resolved(const rules::Entry& e) const {
  std::lock_guard<std::mutex> lock(resolved_mutex_);  // tables are shared by the runtime's threads
  auto it = resolved_.find(&e);
  if (it == resolved_.end()) {
    json candidate = entry_candidate(e);
    it = resolved_.emplace(&e, ResolvedCandidate{Registry::instance().find(e.variant), std::move(candidate["config"])}).first;
  }
  return it->second;  // (an unordered_map's elements stay where they are as it grows)
}

const char* DispatchTable::text(const std::string& s) { return strings_.emplace_back(s).c_str(); }

DispatchTable::DispatchTable(json dispatch) : source_(std::move(dispatch)) {
  if (!source_.is_object()) throw InputError("dispatch table: not a JSON object");
  fleet_ = source_.value("fleet", false);
  if (fleet_ && (!source_.contains("tables") || !source_["tables"].is_array() || source_["tables"].empty()))
    throw InputError("dispatch table: a fleet table needs a non-empty \"tables\" array");
  const json& tables = fleet_ ? source_["tables"] : source_;
  const size_t n = fleet_ ? tables.size() : 1;
  for (size_t i = 0; i < n; ++i) {
    tables_.push_back(std::make_unique<CompiledTable>());
    compile(fleet_ ? tables[i] : source_, *tables_.back());
    views_.push_back(tables_.back()->view);
  }
}

namespace {

// An entry, default or model candidate of `family` as rules::Entry (dims from "problem" when given).
rules::Entry make_entry(DispatchTable& t, const std::string& family, const json& e, const json* problem,
                        const std::string& where) {
  rules::Entry out{};
  out.family = t.text(family);
  if (problem) {
    const auto dims = find_family(family).dims();
    for (size_t i = 0; i < dims.size(); ++i) {
      const auto& d = dims[i];
      if (problem->contains(d.name) && (*problem)[d.name].is_number_integer())
        out.dims[i] = (*problem)[d.name].get<int64_t>();
      else if (d.has_default)
        out.dims[i] = d.default_value;
      else
        throw InputError(where + ": problem lacks dim '" + d.name + "'");
    }
  }
  if (!e.contains("variant") || !e["variant"].is_string()) throw InputError(where + ": no \"variant\" name");
  out.variant = t.text(e["variant"].get<std::string>());
  const json config = e.value("config", json::object());
  if (!config.is_object() || config.size() > size_t(rules::kMaxParams))
    throw InputError(where + ": config must be an object of at most " + std::to_string(rules::kMaxParams) + " tunables");
  for (const auto& [k, v] : config.items()) {  // sorted by name
    rules::Param& p = out.params[out.param_count++];
    p.name = t.text(k);
    if (v.is_number_integer() || v.is_boolean())
      p.int_value = v.is_boolean() ? int64_t(v.get<bool>()) : v.get<int64_t>();
    else if (v.is_string())
      p.str_value = t.text(v.get<std::string>());
    else
      throw InputError(where + ": tunable " + k + " is neither an integer nor a string");
  }
  out.median_ms = e.contains("median_ms") && e["median_ms"].is_number() ? e["median_ms"].get<double>() : 0.0;
  out.candidate = t.text(e.value("candidate", candidate_name(e["variant"].get<std::string>(), config)));
  return out;
}

const char* const* name_array(DispatchTable& t, CompiledTable& c, const std::vector<std::string>& names) {
  std::vector<const char*>& list = c.name_lists.emplace_back();
  for (const auto& n : names) list.push_back(t.text(n));
  return list.data();
}


std::vector<std::string> strings_at(const json& m, const char* key, const std::string& where) {
  if (!m.contains(key) || !m[key].is_array()) throw InputError(where + ": no \"" + key + "\" array");
  std::vector<std::string> out;
  for (const json& v : m[key]) {
    if (!v.is_string()) throw InputError(where + ": \"" + key + "\" must hold names");
    out.push_back(v.get<std::string>());
  }
  return out;
}

// One tree's nodes, appended to `nodes` with their links made absolute and its leaves linked to themselves
// (rules::Node); returns its depth. Throws on a link out of the tree or one that does not lead down (a
// corrupt file must not loop the rules), and on a leaf whose links are not -1.
int append_tree(std::vector<rules::Node>& nodes, const json& tree, int feature_count, const std::string& where) {
  const json& f = tree.at("feature");
  const size_t n = f.size(), first = nodes.size();
  if (n == 0) throw InputError(where + ": an empty tree");  // the walk below starts at its root
  for (const char* key : {"threshold", "yes", "no", "value"})
    if (!tree.at(key).is_array() || tree[key].size() != n) throw InputError(where + ": tree arrays differ in length");
  for (size_t i = 0; i < n; ++i) {
    rules::Node node{f[i].get<int>(), tree["threshold"][i].get<float>(), {tree["yes"][i].get<int>(), tree["no"][i].get<int>()}};
    const float value = tree["value"][i].get<float>();
    if (node.feature >= feature_count) throw InputError(where + ": a split on feature " + std::to_string(node.feature) +
                                                        " of " + std::to_string(feature_count));
    if (node.feature >= 0) {
      for (int& next : node.next) {
        if (next < 0 || next >= int(n)) throw InputError(where + ": a tree link out of the tree");
        next += int(first);
      }
    } else if (node.next[0] != -1 || node.next[1] != -1) {  // the format's leaf: what else reads the file agrees
      throw InputError(where + ": a leaf with links (a leaf's yes and no are -1)");
    } else {
      node.threshold = value;
    }
    nodes.push_back(node);
  }
  // Every node reached once from the root at most: a corrupt link must not loop the rules.
  std::vector<int> seen(n, 0);
  std::vector<std::pair<int, int>> stack = {{int(first), 0}};  // (node, its depth)
  int depth = 0;
  while (!stack.empty()) {
    const auto [i, d] = stack.back();
    stack.pop_back();
    if (seen[size_t(i) - first]++) throw InputError(where + ": a tree whose links meet or loop");
    rules::Node& node = nodes[size_t(i)];
    if (node.feature >= 0) {
      stack.push_back({node.next[0], d + 1});
      stack.push_back({node.next[1], d + 1});
    } else {
      node = {0, node.threshold, {i, i}};
      depth = std::max(depth, d);
    }
  }
  return depth;
}

// Whether a family's model was fitted on the dims this convtune gives the family. One of an older convtune,
// before a dim was added (conv2d's batch), is left out: the family takes the nearest rule, as a table without
// a model does (the runtime says so once). A model that names the same dims must match in every other way.
bool model_fits_dims(const json& m, const rules::FamilyInfo& f) {
  if (!m.is_object()) return true;  // compile_model names what is wrong
  if (!m.contains("dims")) {        // exported before models named their dims: judged by the feature count
    rules::Model probe{};
    for (const char* key : {"variants", "numeric", "strings"})
      if (!m.contains(key) || !m[key].is_array()) return true;
    probe.variant_count = int(m["variants"].size());
    probe.numeric_count = int(m["numeric"].size());
    probe.string_count = int(m["strings"].size());
    return m.value("feature_count", -1) == rules::feature_count(probe, f);
  }
  const json& dims = m["dims"];
  if (!dims.is_array() || int(dims.size()) != f.n_dims) return false;
  for (int i = 0; i < f.n_dims; ++i)
    if (!dims[size_t(i)].is_string() || dims[size_t(i)].get<std::string>() != f.dims[i]) return false;
  return true;
}

// A model's optional quantities, traits and SM count (rules::Model): absent in models made before them.
void compile_model_extras(DispatchTable& t, CompiledTable& c, const rules::FamilyInfo& f, const json& m,
                          const std::string& where, rules::Model& out) {
  const std::vector<std::string> dims(f.dims, f.dims + f.n_dims);
  std::vector<rules::Quantity>& quantities = c.quantity_lists.emplace_back();
  for (const json& q : m.value("quantities", json::array())) {
    const std::string name = q.at("name").get<std::string>();
    const std::vector<rules::Step>& steps =
        c.step_lists.emplace_back(compile_quantity(q.at("program").get<std::string>(), dims, where + ": quantity " + name));
    quantities.push_back({t.text(name), steps.data(), int(steps.size())});
  }
  if (quantities.size() > size_t(rules::kMaxQuantities))
    throw InputError(where + ": " + std::to_string(quantities.size()) + " quantities; allowed: at most " +
                     std::to_string(rules::kMaxQuantities));
  out.quantities = quantities.data();
  out.quantity_count = int(quantities.size());
  const auto traits = m.contains("traits") ? strings_at(m, "traits", where) : std::vector<std::string>{};
  out.traits = name_array(t, c, traits);
  out.trait_count = int(traits.size());
  out.sms = m.value("sms", 0);
}

// A model candidate's traits in the model's order (-1: none); a trait the model does not list is refused.
std::vector<int64_t> candidate_traits(const rules::Model& m, const json& cand, const std::string& where) {
  std::vector<int64_t> out(size_t(m.trait_count), -1);
  const json traits = cand.value("traits", json::object());
  for (const auto& [name, value] : traits.items()) {
    int i = 0;
    while (i < m.trait_count && name != m.traits[i]) ++i;
    if (i == m.trait_count || !value.is_number_integer())
      throw InputError(where + ": candidate " + cand.value("candidate", std::string("?")) + " has trait '" + name +
                       "', which is not an integer trait of the model");
    out[size_t(i)] = value.get<int64_t>();
  }
  return out;
}

rules::Model compile_model(DispatchTable& t, CompiledTable& c, const rules::FamilyInfo& f, const json& m,
                           const std::string& where) {
  try {
    rules::Model out{};
    const auto variants = strings_at(m, "variants", where), numeric = strings_at(m, "numeric", where);
    std::vector<std::string> keys, values;
    for (const json& kv : m.at("strings")) {
      keys.push_back(kv.at(0).get<std::string>());
      values.push_back(kv.at(1).get<std::string>());
    }
    out.variants = name_array(t, c, variants);
    out.variant_count = int(variants.size());
    out.numeric = name_array(t, c, numeric);
    out.numeric_count = int(numeric.size());
    out.string_keys = name_array(t, c, keys);
    out.string_values = name_array(t, c, values);
    out.string_count = int(keys.size());
    compile_model_extras(t, c, f, m, where, out);
    const int features = rules::feature_count(out, f);
    if (features > rules::kMaxFeatures || m.at("feature_count").get<int>() != features)
      throw InputError(where + ": made for " + m["feature_count"].dump() + " features, the family's dims and its tunables give " +
                       std::to_string(features) + " (a model of another convtune or another family?)");
    out.base = m.at("base").get<float>();
    std::vector<rules::Node>& nodes = c.node_lists.emplace_back();
    std::vector<int>& roots = c.root_lists.emplace_back();
    for (const json& tree : m.at("trees")) {
      roots.push_back(int(nodes.size()));
      out.depth = std::max(out.depth, append_tree(nodes, tree, features, where));
    }
    out.nodes = nodes.data();
    out.roots = roots.data();
    out.tree_count = int(roots.size());
    std::vector<rules::Entry>& cands = c.candidate_lists.emplace_back();
    for (const json& cand : m.at("candidates")) cands.push_back(make_entry(t, f.name, cand, nullptr, where));
    if (cands.size() > size_t(rules::kMaxCandidates))
      throw InputError(where + ": " + std::to_string(cands.size()) + " candidates; allowed: at most " +
                       std::to_string(rules::kMaxCandidates));
    out.candidates = cands.data();
    out.candidate_count = int(cands.size());
    const json lookup = m.value("lookup_candidates", json(0));  // tables before it: every candidate is the lookup's
    if (!lookup.is_number_integer() || lookup.get<int64_t>() < 0 || lookup.get<int64_t>() > out.candidate_count)
      throw InputError(where + ": lookup_candidates is " + lookup.dump() + "; allowed: 0 to the " +
                       std::to_string(out.candidate_count) + " candidates");
    out.lookup_count = lookup.get<int>();
    std::vector<float>& statics = c.feature_lists.emplace_back(cands.size() * size_t(rules::static_feature_count(out)));
    size_t i = 0;
    for (const json& cand : m.at("candidates")) {
      const std::vector<int64_t> traits = candidate_traits(out, cand, where);
      rules::static_features(out, cands[i], traits.data(), statics.data() + i * size_t(rules::static_feature_count(out)));
      ++i;
    }
    out.candidate_features = statics.data();
    return out;
  } catch (const json::exception& e) {
    throw InputError(where + ": malformed (" + std::string(e.what()) + ")");
  }
}

}  // namespace

void DispatchTable::compile(const json& table, CompiledTable& c) {
  const std::string where = where_of(table);
  c.source = &table;
  if (!table.contains("entries") || !table["entries"].is_array()) throw InputError(where + ": no \"entries\" array");
  const json fallback = table.value("fallback", json::object());
  const json defaults = fallback.value("defaults", json::object());
  const json model = table.value("model", json::object()).value("families", json::object());
  std::set<std::string> families;
  for (const json& e : table["entries"]) families.insert(e.value("family", std::string()));
  for (const auto& [f, d] : defaults.items()) families.insert(f);
  for (const auto& [f, m] : model.items()) families.insert(f);
  for (const std::string& f : families) {
    const Family& fam = find_family(f);
    const auto dims = fam.dims();
    if (dims.size() > size_t(rules::kMaxDims)) throw InputError(f + ": more dims than the rules hold");
    rules::FamilyInfo info{};
    info.name = text(f);
    info.n_dims = int(dims.size());
    const auto cons = names_in(fallback, "constraints", f, fam.constraint_dims());
    const auto required = names_in(fallback, "required", f, fam.required_dims());
    for (size_t i = 0; i < dims.size(); ++i) {
      info.dims[i] = text(dims[i].name);
      info.constraint[i] = listed(cons, dims[i].name);
      info.required[i] = listed(required, dims[i].name);
      info.defaults[i] = dims[i].default_value;
      if (!dims[i].has_default) info.min_dims = int(i) + 1;  // the dims after the last without a default may be left out
    }
    info.default_index = -1;
    if (defaults.contains(f)) {
      info.default_index = int(c.defaults.size());
      c.defaults.push_back(make_entry(*this, f, defaults[f], nullptr, where + ": default of " + f));
    }
    info.model_index = -1;
    c.families.push_back(info);
  }
  for (const json& e : table["entries"])
    c.entries.push_back(make_entry(*this, e.value("family", std::string()), e, &e.at("problem"),
                                   where + ": entry " + e.value("problem_key", std::string("?"))));
  for (auto& info : c.families)
    if (model.contains(info.name) && model_fits_dims(model[info.name], info)) {
      info.model_index = int(c.models.size());
      c.models.push_back(compile_model(*this, c, info, model[info.name], where + ": model of " + info.name));
      c.model_families.push_back(info.name);
    }
  const json dev = table.value("device", json::object());
  c.view = {text(dev.is_object() ? dev.value("name", "") : ""),
            text(dev.is_object() ? dev.value("compute_capability", "") : ""),
            c.families.data(),
            int(c.families.size()),
            c.entries.data(),
            int(c.entries.size()),
            c.defaults.data(),
            c.models.data()};
}

DispatchTable::Pick DispatchTable::pick(const std::string& device_name, const std::string& compute_capability,
                                        const std::string& family) const {
  if (!fleet_) return {tables_[0].get(), tables_[0]->view, "single table"};
  const char* rule = "";
  const int i = rules::pick_table(views_.data(), int(views_.size()), device_name.c_str(), compute_capability.c_str(), &rule,
                                  family.empty() ? nullptr : family.c_str());
  if (i < 0) return {tables_[0].get(), rules::defaults_only(tables_[0]->view), rule};
  return {tables_[size_t(i)].get(), tables_[size_t(i)]->view, rule};
}

}  // namespace convtune
