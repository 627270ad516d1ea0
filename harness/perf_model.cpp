#include "harness/perf_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <cstdlib>
#include <stdexcept>

#ifdef CONVTUNE_HAVE_XGBOOST
#include <xgboost/c_api.h>
#include <xgboost/version_config.h>
#endif

#include "harness/dispatch_rules.h"
#include "harness/dispatch_table.h"
#include "harness/error.h"
#include "harness/family.h"
#include "harness/params.h"
#include "harness/records.h"
#include "harness/variant.h"
#include "harness/select.h"

namespace convtune {
namespace rules = convtune_dispatch;

double table_floor_ms(const json& table, const Problem& p) {
  const json c = table.is_object() ? table.value("ceilings", json::object()) : json::object();
  const double copy = c.is_object() && c.value("copy_gbps", 0.0) > 0 ? c["copy_gbps"].get<double>() : 3000.0;
  const double fma = c.is_object() && c.value("fp32_gflops", 0.0) > 0 ? c["fp32_gflops"].get<double>() : 60000.0;
  return std::max(p.min_bytes() / (copy * 1e9), p.direct_flops() / (fma * 1e9)) * 1e3;
}

namespace {

// A number that is the whole of `text` (no "5x", no "nan"), within [low, high], open at low where asked.
bool read_number(const std::string& text, double low, double high, bool open_low, double& out) {
  return read_whole_number(text, out) && (open_low ? out > low : out >= low) && out <= high;
}

struct OptionRule {
  const char* key;
  double low, high;
  bool open_low, integer;
  const char* allowed;  // for the error
  std::function<void(ModelOptions&, double)> set;
};

const std::vector<OptionRule>& option_rules() {
  static const std::vector<OptionRule> rules = {
      {"rounds", 1, 10000, false, true, "an integer 1 to 10000", [](ModelOptions& o, double v) { o.rounds = int(v); }},
      {"depth", 1, 20, false, true, "an integer 1 to 20", [](ModelOptions& o, double v) { o.depth = int(v); }},
      {"eta", 0, 1, true, false, "a number in (0, 1]", [](ModelOptions& o, double v) { o.eta = v; }},
      {"clip", 0, 100, true, false, "a number in (0, 100]", [](ModelOptions& o, double v) { o.clip = v; }},
      {"max_candidates", 1, 256, false, true, "an integer 1 to 256",
       [](ModelOptions& o, double v) { o.max_candidates = size_t(v); }},
      {"tune_candidates", 0, 256, false, true, "an integer 0 to 256",
       [](ModelOptions& o, double v) { o.tune_candidates = size_t(v); }},
      {"near_weight", 0, 1000, true, false, "a number in (0, 1000]", [](ModelOptions& o, double v) { o.near_weight = v; }},
      {"relative", 0, 1, false, true, "0 or 1", [](ModelOptions& o, double v) { o.relative = v != 0; }},
      {"within", 1, 10, true, false, "a number in (1, 10]", [](ModelOptions& o, double v) { o.within = v; }},
      {"mix", 0, 100, false, false, "a number in [0, 100]", [](ModelOptions& o, double v) { o.mix = v; }},
      {"cover", 0, 1000, false, true, "an integer 0 to 1000", [](ModelOptions& o, double v) { o.cover = size_t(v); }},
      {"gamma", 0, 1e6, false, false, "a number in [0, 1e6]", [](ModelOptions& o, double v) { o.gamma = v; }},
      {"others", 0, 1, false, true, "0 or 1", [](ModelOptions& o, double v) { o.others = v != 0; }},
      {"colsample", 0, 1, true, false, "a number in (0, 1]", [](ModelOptions& o, double v) { o.colsample = v; }},
      {"subsample", 0, 1, true, false, "a number in (0, 1]", [](ModelOptions& o, double v) { o.subsample = v; }},
      {"min_child", 0, 1e6, false, false, "a number in [0, 1e6]", [](ModelOptions& o, double v) { o.min_child = v; }},
      {"lambda", 0, 1e6, false, false, "a number in [0, 1e6]", [](ModelOptions& o, double v) { o.lambda = v; }},
      {"parallel", 1, 64, false, true, "an integer 1 to 64", [](ModelOptions& o, double v) { o.parallel = int(v); }},
      {"seed", 0, 1e6, false, true, "an integer 0 to 1000000", [](ModelOptions& o, double v) { o.seed = int(v); }},
  };
  return rules;
}

}  // namespace

ModelOptions ModelOptions::from_env() {
  ModelOptions o;
  const char* env = std::getenv("CONVTUNE_MODEL_OPTIONS");
  std::stringstream list(env ? env : "");
  for (std::string item; std::getline(list, item, ',');) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const auto& rules = option_rules();
    const auto rule = std::find_if(rules.begin(), rules.end(), [&](const OptionRule& r) { return key == r.key; });
    if (rule == rules.end()) {
      std::string keys;
      for (const OptionRule& r : rules) keys += (keys.empty() ? "" : ", ") + std::string(r.key);
      throw InputError("CONVTUNE_MODEL_OPTIONS: '" + item + "'; allowed: key=value pairs of " + keys);
    }
    double v = 0;
    if (!read_number(value, rule->low, rule->high, rule->open_low, v) || (rule->integer && v != std::floor(v)))
      throw InputError("CONVTUNE_MODEL_OPTIONS: '" + item + "'; allowed: " + key + " " + rule->allowed);
    rule->set(o, v);
  }
  return o;
}

std::string shortest_float_text(float x) {
  char buf[32];
  for (int digits = 6; digits <= 9; ++digits) {  // 9 always suffice
    std::snprintf(buf, sizeof buf, "%.*g", digits, double(x));
    if (std::isnan(x) || (std::strtof(buf, nullptr) == x && float(std::strtod(buf, nullptr)) == x)) break;
  }
  return buf;
}

std::vector<std::string> cover_order(const std::vector<std::string>& kept, const std::vector<std::string>& by_count,
                                     const std::map<std::string, std::set<std::string>>& near_problems, size_t slots,
                                     size_t reserved) {
  const size_t head = slots > reserved ? std::min(slots - reserved, by_count.size()) : 0;
  std::vector<std::string> out(by_count.begin(), by_count.begin() + long(head));
  std::vector<std::string> rest(by_count.begin() + long(head), by_count.end());
  std::set<std::string> covered;
  for (const std::vector<std::string>* list : {&kept, static_cast<const std::vector<std::string>*>(&out)})
    for (const std::string& c : *list)
      if (near_problems.count(c)) covered.insert(near_problems.at(c).begin(), near_problems.at(c).end());
  while (out.size() < slots && !rest.empty()) {
    size_t pick = 0, pick_gain = 0;
    for (size_t j = 0; j < rest.size(); ++j) {
      const auto it = near_problems.find(rest[j]);
      size_t gain = 0;
      if (it != near_problems.end())
        for (const std::string& p : it->second) gain += !covered.count(p);
      if (gain > pick_gain) pick = j, pick_gain = gain;
    }
    if (pick_gain == 0) break;
    covered.insert(near_problems.at(rest[pick]).begin(), near_problems.at(rest[pick]).end());
    out.push_back(rest[pick]);
    rest.erase(rest.begin() + long(pick));
  }
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

namespace {

constexpr size_t kMinModelProblems = 3;

// What a candidate's variant derives from its config for the model (Variant::model_traits); none for a
// variant not registered here.
std::vector<std::pair<std::string, int64_t>> traits_of(const std::string& variant, const json& config) {
  const Variant* v = Registry::instance().find(variant);
  return v ? v->model_traits(config) : std::vector<std::pair<std::string, int64_t>>{};
}

// One family's training set: the latest ok full-fidelity record of each (problem, candidate), and the
// candidates that gave a wrong result or failed at run time on any problem.
struct FamilyData {
  std::map<std::pair<std::string, std::string>, const json*> latest;  // (problem key, candidate) -> record
  std::set<std::string> problems, failed;
};

std::map<std::string, FamilyData> training_records(const std::vector<json>& records) {
  std::map<std::string, FamilyData> out;
  for (const json& r : records) {
    if (is_wrong(r)) out[r.at("family").get<std::string>()].failed.insert(r.at("candidate").get<std::string>());
    if (r.value("status", "") != status::ok || !r.contains("time") || r.value("fidelity", "full") == "brief") continue;
    FamilyData& d = out[r.at("family").get<std::string>()];
    const std::string key = r.at("problem_key").get<std::string>();
    d.latest[{key, r.at("candidate").get<std::string>()}] = &r;  // a later record replaces an earlier one
    d.problems.insert(key);
  }
  return out;
}

// What the model chooses among: every candidate the table names for the family (choices, alternates,
// baselines, the default) and each variant's fastest config on each problem; a library's configs first, the
// others ranked by how many problems they were within 10% of the best on, then by name, the last `cover` of
// the `cap` slots by cover_order; at most `cap`. Never
// one that failed on a training shape (cuDNN's winograd_nonfused misses strict fp32's tolerance at 5x5 on
// some shapes and passes on others: on a shape nobody verified it could be either).
std::vector<json> model_candidates(const json& table, const std::string& family, const FamilyData& data, size_t cap,
                                   size_t cover, size_t tune_cap) {
  std::map<std::string, json> named;
  auto add = [&](const json& c) {
    const json config = c.value("config", json::object());
    const std::string name = c.value("candidate", candidate_name(c.at("variant").get<std::string>(), config));
    if (data.failed.count(name)) return;
    named.emplace(name, json{{"variant", c.at("variant")}, {"config", config}, {"candidate", name}});
  };
  for (const json& e : table.at("entries")) {
    if (e.at("family") != family) continue;
    add(e);
    for (const json& a : e.value("alternates", json::array())) add(a);
    for (const json& b : e.value("baselines", json::array())) add(b);
  }
  const json defaults = table.value("fallback", json::object()).value("defaults", json::object());
  if (defaults.contains(family)) add(defaults[family]);
  std::map<std::string, double> best;
  std::map<std::pair<std::string, std::string>, const json*> variant_best;  // (problem, variant) -> fastest
  for (const auto& [key, r] : data.latest) {
    const double ms = r->at("time").at("median_ms").get<double>();
    auto it = best.find(key.first);
    if (it == best.end() || ms < it->second) best[key.first] = ms;
    const json*& vb = variant_best[{key.first, r->at("variant").get<std::string>()}];
    if (!vb || ms < vb->at("time").at("median_ms").get<double>()) vb = r;
  }
  for (const auto& [key, r] : variant_best) add(*r);  // so that each variant's best configs compete
  std::map<std::string, int> near_best;
  std::map<std::string, std::set<std::string>> near_problems;  // candidate -> problems it is within 1.10x on
  for (const auto& [key, r] : data.latest)
    if (r->at("time").at("median_ms").get<double>() <= 1.1 * best[key.first]) {
      ++near_best[key.second];
      near_problems[key.second].insert(key.first);
    }
  // A library's algorithms first (a handful, each winning on its own kind of shape, e.g. FFT at large
  // filters): where the model misjudges such a shape, first-use tuning still has each algorithm to time.
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& [name, c] : named) {
    const Variant* v = Registry::instance().find(c.at("variant").get<std::string>());
    ranked.push_back({v && v->library() ? std::numeric_limits<int>::min() : -near_best[name], name});
  }
  std::sort(ranked.begin(), ranked.end());
  if (cover) {
    const auto libraries = size_t(std::count_if(ranked.begin(), ranked.end(), [](const auto& r) {
      return r.first == std::numeric_limits<int>::min();
    }));
    std::vector<std::string> library_names, by_count;
    for (size_t i = 0; i < ranked.size(); ++i) (i < libraries ? library_names : by_count).push_back(ranked[i].second);
    by_count = cover_order(library_names, by_count, near_problems, cap > libraries ? cap - libraries : 0, cover);
    for (size_t i = libraries; i < ranked.size(); ++i) ranked[i].second = by_count[i - libraries];
  }
  std::vector<json> out;  // the first `cap` the lookup's; up to tune_cap by count after them, first-use tuning's
  for (size_t i = 0; i < ranked.size() && i < std::max(cap, tune_cap); ++i) {
    json c = named[ranked[i].second];
    const auto traits = traits_of(c.at("variant").get<std::string>(), c.at("config"));
    if (!traits.empty()) c["traits"] = json(std::map<std::string, int64_t>(traits.begin(), traits.end()));
    out.push_back(std::move(c));
  }
  return out;
}

// The feature layout of a family's model: its variants, integer tunables and (name, value) pairs, sorted.
// With the family's model quantities (name, program) and its variants' traits.
struct Layout {
  std::vector<std::string> variants, numeric, traits;
  std::vector<std::pair<std::string, std::string>> strings, quantities;
};

Layout layout_of(const std::string& family, const FamilyData& data) {
  std::set<std::string> variants, numeric, traits;
  std::set<std::pair<std::string, std::string>> strings;
  for (const auto& [key, r] : data.latest) {
    variants.insert(r->at("variant").get<std::string>());
    const json config = r->value("config", json::object());
    for (const auto& [k, v] : config.items()) {
      if (v.is_string()) strings.insert({k, v.get<std::string>()});
      else numeric.insert(k);
    }
    for (const auto& [name, value] : traits_of(r->at("variant").get<std::string>(), config)) traits.insert(name);
  }
  return {{variants.begin(), variants.end()}, {numeric.begin(), numeric.end()}, {traits.begin(), traits.end()},
          {strings.begin(), strings.end()}, find_family(family).model_quantities()};
}

// The layout as the rules see it; `names` holds the text it points into.
struct RulesLayout {
  std::vector<const char*> variants, numeric, keys, values, traits;
  std::vector<std::vector<rules::Step>> steps;
  std::vector<rules::Quantity> quantities;
  rules::Model model{};
  rules::FamilyInfo family{};
};

void fill_rules_layout(const Layout& l, const std::string& family, RulesLayout& out) {
  for (const auto& v : l.variants) out.variants.push_back(v.c_str());
  for (const auto& n : l.numeric) out.numeric.push_back(n.c_str());
  for (const auto& [k, v] : l.strings) {
    out.keys.push_back(k.c_str());
    out.values.push_back(v.c_str());
  }
  out.model.variants = out.variants.data();
  out.model.variant_count = int(out.variants.size());
  out.model.numeric = out.numeric.data();
  out.model.numeric_count = int(out.numeric.size());
  out.model.string_keys = out.keys.data();
  out.model.string_values = out.values.data();
  out.model.string_count = int(out.keys.size());
  out.family.name = family.c_str();
  out.family.n_dims = int(find_family(family).dims().size());
  std::vector<std::string> dims;
  for (const auto& d : find_family(family).dims()) dims.push_back(d.name);
  if (l.quantities.size() > size_t(rules::kMaxQuantities))
    throw InputError(family + ": " + std::to_string(l.quantities.size()) + " model quantities; allowed: at most " +
                     std::to_string(rules::kMaxQuantities));
  for (const auto& [name, program] : l.quantities) out.steps.push_back(compile_quantity(program, dims, family + " quantity " + name));
  for (size_t i = 0; i < l.quantities.size(); ++i)
    out.quantities.push_back({l.quantities[i].first.c_str(), out.steps[i].data(), int(out.steps[i].size())});
  for (const auto& t : l.traits) out.traits.push_back(t.c_str());
  out.model.quantities = out.quantities.data();
  out.model.quantity_count = int(out.quantities.size());
  out.model.traits = out.traits.data();
  out.model.trait_count = int(out.traits.size());
}

// A record's traits in the layout's order (-1: none).
std::vector<int64_t> record_traits(const Layout& l, const json& r) {
  std::vector<int64_t> out(l.traits.size(), -1);
  for (const auto& [name, value] : traits_of(r.at("variant").get<std::string>(), r.value("config", json::object())))
    out[size_t(std::find(l.traits.begin(), l.traits.end(), name) - l.traits.begin())] = value;
  return out;
}

// A record's candidate as a rules::Entry; its text stays in `r`.
rules::Entry record_entry(const json& r, std::vector<std::string>& text) {
  rules::Entry e{};
  text.push_back(r.at("variant").get<std::string>());
  e.variant = text.back().c_str();
  const json config = r.value("config", json::object());
  for (const auto& [k, v] : config.items()) {
    if (e.param_count == rules::kMaxParams)
      throw InputError(r.value("candidate", e.variant) + ": more than " + std::to_string(rules::kMaxParams) +
                       " tunables; the dispatch rules hold at most that many (raise kMaxParams)");
    rules::Param& p = e.params[e.param_count++];
    text.push_back(k);
    p.name = text.back().c_str();
    if (v.is_string()) {
      text.push_back(v.get<std::string>());
      p.str_value = text.back().c_str();
    } else {
      p.int_value = v.is_boolean() ? int64_t(v.get<bool>()) : v.get<int64_t>();
    }
  }
  return e;
}

std::vector<int64_t> problem_dims(const json& problem, const std::string& family) {
  const Problem p = Problem::from_json(problem);
  std::vector<int64_t> dims;
  for (const auto& d : find_family(family).dims()) dims.push_back(p.at(d.name));
  return dims;
}

}  // namespace

#ifdef CONVTUNE_HAVE_XGBOOST

bool model_fitting_available() { return true; }

namespace {

void xgb_check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string("XGBoost ") + what + ": " + XGBGetLastError());
}

// Owned XGBoost handles.
struct Booster {
  DMatrixHandle data = nullptr;
  BoosterHandle booster = nullptr;
  ~Booster() {
    if (booster) XGBoosterFree(booster);
    if (data) XGDMatrixFree(data);
  }
};

// A float as the JSON number of fewest digits that reads back as it (as itself, 3.0056136 would print as
// 3.0056135654449463: the fleet table's trees were 40% longer).
double shortest(float x) { return std::strtod(shortest_float_text(x).c_str(), nullptr); }

// The trees of a saved XGBoost model as the table stores them: per tree the arrays feature (-1: leaf),
// threshold, yes, no, value.
json trees_of(const json& saved) {
  json out = json::array();
  for (const json& t : saved.at("learner").at("gradient_booster").at("model").at("trees")) {
    const json& left = t.at("left_children");
    json tree = {{"feature", json::array()}, {"threshold", json::array()}, {"yes", json::array()},
                 {"no", json::array()}, {"value", json::array()}};
    for (size_t i = 0; i < left.size(); ++i) {
      const bool leaf = left[i].get<int>() < 0;
      const float cond = t.at("split_conditions")[i].get<float>();
      tree["feature"].push_back(leaf ? -1 : t.at("split_indices")[i].get<int>());
      tree["threshold"].push_back(leaf ? 0.0 : shortest(cond));
      tree["yes"].push_back(leaf ? -1 : left[i].get<int>());
      tree["no"].push_back(leaf ? -1 : t.at("right_children")[i].get<int>());
      tree["value"].push_back(leaf ? shortest(cond) : 0.0);
    }
    out.push_back(std::move(tree));
  }
  return out;
}

// A double as text that reads back as the same double (std::to_string keeps 6 decimals: 1e-7 would be 0).
std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

json fit_trees(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& w, size_t columns,
               float base, const ModelOptions& o, const char* objective) {
  Booster b;
  const bst_ulong rows = y.size();
  xgb_check(XGDMatrixCreateFromMat(x.data(), rows, bst_ulong(columns), NAN, &b.data), "matrix");
  xgb_check(XGDMatrixSetFloatInfo(b.data, "label", y.data(), rows), "labels");
  xgb_check(XGDMatrixSetFloatInfo(b.data, "weight", w.data(), rows), "weights");
  xgb_check(XGBoosterCreate(&b.data, 1, &b.booster), "booster");
  const std::vector<std::pair<const char*, std::string>> params = {
      {"objective", objective}, {"tree_method", "exact"}, {"nthread", "1"}, {"seed", std::to_string(o.seed)},
      {"max_depth", std::to_string(o.depth)}, {"eta", exact(o.eta)},
      {"gamma", exact(o.gamma)}, {"base_score", std::to_string(base)},
      {"colsample_bytree", exact(o.colsample)}, {"subsample", exact(o.subsample)},
      {"min_child_weight", exact(o.min_child)}, {"lambda", exact(o.lambda)}, {"verbosity", "0"},
      {"num_parallel_tree", std::to_string(o.parallel)}};
  for (const auto& [k, v] : params) xgb_check(XGBoosterSetParam(b.booster, k, v.c_str()), k);
  for (int i = 0; i < o.rounds; ++i) xgb_check(XGBoosterUpdateOneIter(b.booster, i, b.data), "training");
  bst_ulong len = 0;
  const char* buf = nullptr;
  xgb_check(XGBoosterSaveModelToBuffer(b.booster, "{\"format\": \"json\"}", &len, &buf), "saving");
  return trees_of(json::parse(buf, buf + len));
}

// The training rows of a family: features, regression targets, the classifier's labels (1: slower than
// `within` times the problem's best), weights.
struct Rows {
  std::vector<float> x, y, slow, w;
};

// The regression's trees, then (mix > 0) the classifier's with their leaves scaled by mix: one sum, which the
// rules walk as before. Sets `base` to the sum's starting value.
json fit_ensemble(const Rows& rows, size_t columns, const ModelOptions& o, double& base) {
  double sum = 0;
  for (float v : rows.y) sum += v;
  base = float(sum / double(rows.y.size()));  // XGBoost's base_score is a float
  json trees = fit_trees(rows.x, rows.y, rows.w, columns, float(base), o, "reg:squarederror");
  if (o.mix <= 0) return trees;
  double slow = 0;
  for (float v : rows.slow) slow += v;
  const float p = std::clamp(float(slow / double(rows.slow.size())), 0.02f, 0.98f);  // logistic: a probability
  for (json& t : fit_trees(rows.x, rows.slow, rows.w, columns, p, o, "binary:logistic")) {
    for (auto& v : t["value"]) v = shortest(float(double(v.get<float>()) * o.mix));  // the leaf exactly as XGBoost gave it
    trees.push_back(std::move(t));
  }
  base += o.mix * std::log(p / (1 - p));  // the classifier's trees add to the logit of its base
  return trees;
}

json fit_family(const json& table, const std::string& family, const FamilyData& data, const ModelOptions& o) {
  const Layout layout = layout_of(family, data);
  RulesLayout rl;
  fill_rules_layout(layout, family, rl);
  const json device = table.value("device", json::object());
  rl.model.sms = device.is_object() && device.value("sms", json()).is_number_integer() ? device["sms"].get<int>() : 0;
  int tiles[rules::kMaxQuantities];
  rules::quantity_tiles(rl.model, tiles);
  const int columns = rules::feature_count(rl.model, rl.family);
  if (columns > rules::kMaxFeatures) return nullptr;
  // Targets: log2(time / floor), clipped at clip above the problem's best.
  std::map<std::string, double> best;
  std::map<std::string, std::pair<std::vector<int64_t>, double>> shapes;  // key -> dims, log2 floor
  for (const auto& [key, r] : data.latest)
    if (!shapes.count(key.first)) {
      const json& problem = r->at("problem");
      shapes[key.first] = {problem_dims(problem, family), std::log2(table_floor_ms(table, Problem::from_json(problem)))};
    }
  Rows rows;
  std::vector<float> row(size_t(rules::kMaxFeatures));
  std::vector<double> targets;
  for (const auto& [key, r] : data.latest) {
    const double t = std::log2(r->at("time").at("median_ms").get<double>()) - shapes[key.first].second;
    targets.push_back(t);
    auto it = best.find(key.first);
    if (it == best.end() || t < it->second) best[key.first] = t;
  }
  const std::vector<json> candidates = model_candidates(table, family, data, o.max_candidates, o.cover, o.tune_candidates);
  std::set<std::string> candidate_names;  // the lookup's
  for (size_t c = 0; c < candidates.size() && c < o.max_candidates; ++c)
    candidate_names.insert(candidates[c].at("candidate").get<std::string>());
  size_t i = 0;
  for (const auto& [key, r] : data.latest) {  // sorted by (problem, candidate): any record order, same rows
    const double t = targets[i++], b = best[key.first];
    if (!o.others && !candidate_names.count(key.second)) continue;
    std::vector<std::string> text;
    text.reserve(2 * rules::kMaxParams + 1);
    const rules::Entry e = record_entry(*r, text);
    double log_dims[rules::kMaxDims], quantities[rules::kMaxQuantities];
    rules::log_dims_of(rl.family, shapes[key.first].first.data(), log_dims);
    rules::quantity_values(rl.model, shapes[key.first].first.data(), quantities);
    std::vector<float> statics(size_t(rules::static_feature_count(rl.model)));
    rules::static_features(rl.model, e, record_traits(layout, *r).data(), statics.data());
    rules::features(rl.model, rl.family, log_dims, quantities, tiles, statics.data(), row.data());
    rows.x.insert(rows.x.end(), row.begin(), row.begin() + columns);
    rows.y.push_back(float(std::min(t, b + o.clip) - (o.relative ? b : 0.0)));
    rows.slow.push_back(t > b + std::log2(o.within) ? 1.f : 0.f);
    rows.w.push_back(float(t <= b + std::log2(1.25) ? o.near_weight : 1.0));
  }
  double base = 0;
  json trees = fit_ensemble(rows, size_t(columns), o, base);
  json strings = json::array();
  for (const auto& [k, v] : layout.strings) strings.push_back({k, v});
  json dim_names = json::array();
  for (const auto& d : find_family(family).dims()) dim_names.push_back(d.name);
  json model = {{"dims", dim_names},
          {"variants", layout.variants},
          {"numeric", layout.numeric},
          {"strings", strings},
          {"feature_count", columns},
          {"base", base},
          {"trees", std::move(trees)},
          {"candidates", candidates},
          {"fit", {{"rows", rows.y.size()}, {"problems", data.problems.size()}, {"rounds", o.rounds}, {"depth", o.depth},
                   {"eta", o.eta}, {"clip", o.clip}, {"near_weight", o.near_weight}, {"relative", o.relative},
                   {"within", o.within}, {"mix", o.mix}, {"cover", o.cover}, {"gamma", o.gamma}}}};
  if (!o.others) model["fit"]["others"] = false;  // fits made before the option read the same
  if (candidates.size() > o.max_candidates) model["lookup_candidates"] = o.max_candidates;
  for (const auto& [name, value, plain] : {std::tuple{"colsample", o.colsample, 1.0}, {"subsample", o.subsample, 1.0},
                                           {"min_child", o.min_child, 1.0}, {"lambda", o.lambda, 1.0}})
    if (value != plain) model["fit"][name] = value;
  if (o.parallel != 1) model["fit"]["parallel"] = o.parallel;
  if (o.seed != 0) model["fit"]["seed"] = o.seed;
  if (!layout.quantities.empty()) {  // models without them read as before
    json quantities = json::array();
    for (const auto& [name, program] : layout.quantities) quantities.push_back({{"name", name}, {"program", program}});
    model["quantities"] = quantities;
    model["sms"] = rl.model.sms;
  }
  if (!layout.traits.empty()) model["traits"] = layout.traits;
  return model;
}

}  // namespace

json fit_models(const json& table, const std::vector<json>& records, const ModelOptions& o) {
  json families = json::object();
  for (const auto& [family, data] : training_records(records)) {
    if (data.problems.size() < kMinModelProblems) continue;  // a shape or two teach little about others
    json m = fit_family(table, family, data, o);
    if (!m.is_null()) families[family] = std::move(m);
  }
  return {{"schema", 1},
          {"target", o.relative ? "log2(median_ms / the problem's best median_ms), clipped at clip"
                                : "log2(median_ms / floor_ms), floor_ms = max(bytes_min / copy_gbps, flops / fp32_gflops) "
                                  "of the table's ceilings, clipped at clip above the problem's best"},
          {"relative", o.relative},
          {"library", "XGBoost " + std::to_string(XGBOOST_VER_MAJOR) + "." + std::to_string(XGBOOST_VER_MINOR)},
          {"families", families}};
}

#else

bool model_fitting_available() { return false; }
json fit_models(const json&, const std::vector<json>&, const ModelOptions&) { return nullptr; }

#endif

}  // namespace convtune
