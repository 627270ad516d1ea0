#include "harness/dispatch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "harness/error.h"
#include "harness/family.h"
#include "harness/records.h"
#include "harness/run_summary.h"
#include "harness/select.h"
#include "harness/sweep.h"

namespace convtune {
namespace {

// The header's Entry::dims and FamilyInfo::dims: room for the family with the most dims.
size_t max_family_dims() {
  size_t most = 1;
  for (const Family* f : FamilyRegistry::instance().all()) most = std::max(most, f->dims().size());
  return most;
}
constexpr size_t kMaxParams = 8;  // the header's Entry::params
constexpr double kTieEps = 1e-9;  // distances closer than this are equal: the first entry wins

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

// log2(dim + 1): dims may be 0 (r, pad, mode), and for large dims it is log2(dim).
double dim_distance(int64_t a, int64_t b) { return std::fabs(std::log2((double(a) + 1.0) / (double(b) + 1.0))); }

std::string status_counts(const std::vector<json>& records) {
  std::map<std::string, int> n;
  for (const auto& r : records) ++n[r.value("status", "?")];
  std::string out;
  for (const auto& [s, k] : n) out += (out.empty() ? "" : ", ") + s + " " + std::to_string(k);
  return out.empty() ? "no records" : out;
}

// The constraint dims the table was made with (so a hand-edited table is honoured), else the built-in ones.
std::vector<std::string> constraints_of(const json& dispatch, const Family& f) {
  const json c = dispatch.value("fallback", json::object()).value("constraints", json::object());
  const std::string name = f.name();
  return c.contains(name) ? c[name].get<std::vector<std::string>>() : f.constraint_dims();
}

// The dims an entry must equal, as the table says (absent in older tables: the family's own).
std::vector<std::string> required_of(const json& dispatch, const Family& f) {
  const json r = dispatch.value("fallback", json::object()).value("required", json::object());
  return r.contains(f.name()) ? r[f.name()].get<std::vector<std::string>>() : f.required_dims();
}

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// An entry's dims in the family's schema order.
std::vector<int64_t> entry_dims(const json& entry, const Family& f) {
  const json& q = entry.at("problem");
  std::vector<int64_t> out;
  for (const auto& d : f.dims()) {
    if (q.contains(d.name) && q[d.name].is_number_integer())
      out.push_back(q[d.name].get<int64_t>());
    else if (d.has_default)
      out.push_back(d.default_value);
    else
      throw InputError("dispatch entry " + entry.value("problem_key", q.dump()) + ": problem lacks dim '" + d.name + "'");
  }
  return out;
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

// One Entry initializer: {family, {dims}, variant, {params}, param_count, median_ms, candidate}.
std::string c_entry(const std::string& family, const std::vector<int64_t>& dims, const json& e, double median) {
  std::string out = "{" + c_string(family) + ", {";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  out += "}, " + c_string(e.at("variant").get<std::string>()) + ", {";
  const json& cfg = e.at("config");
  if (cfg.size() > kMaxParams)
    throw InputError(e.value("candidate", "?") + ": more than " + std::to_string(kMaxParams) + " parameters");
  bool first = true;
  for (const auto& [k, v] : cfg.items()) {  // sorted by name
    out += std::string(first ? "" : ", ") + "{" + c_string(k) + ", ";
    if (v.is_number_integer() || v.is_boolean())
      out += std::to_string(v.is_boolean() ? int64_t(v.get<bool>()) : v.get<int64_t>()) + ", nullptr}";
    else if (v.is_string())
      out += "0, " + c_string(v.get<std::string>()) + "}";
    else
      throw InputError(e.value("candidate", "?") + ": parameter " + k + " is neither an integer nor a string");
    first = false;
  }
  out += "}, " + std::to_string(cfg.size()) + ", " + c_double(median) + ", " +
         c_string(e.value("candidate", candidate_name(e.at("variant").get<std::string>(), cfg))) + "}";
  return out;
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
    if (st == status::wrong_result || st == status::runtime_error) s.failed = true;
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

json make_dispatch(const json& summary, const std::vector<json>& records) {
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
  return {{"schema", kDispatchSchema},
          {"device", s.value("device", json(nullptr))},
          {"ceilings", s.value("ceilings", json(nullptr))},
          {"git_sha", s.value("git_sha", json(nullptr))},
          {"entries", entries},
          {"fallback",
           {{"rules", {"exact shape", "nearest shape of the same family with compatible constraints", "safe default"}},
            {"constraints", constraints},
            {"required", required},
            {"defaults", safe_defaults(records, choices)}}}};
}

namespace {

// An entry of the problem's family that differs from it in no required dim, with its distances.
struct Candidate {
  const json* entry;
  double constraint_distance, shape_distance;
  bool exact;
};

// Distances are sums over dims of |log2((a + 1) / (b + 1))|, split into the constraint dims and the others.
std::vector<Candidate> usable_entries(const json& dispatch, const Problem& p) {
  const auto cons = constraints_of(dispatch, p.type());
  const auto required = required_of(dispatch, p.type());
  const auto dims = p.type().dims();
  std::vector<Candidate> out;
  for (const json& e : dispatch.at("entries")) {
    if (e.at("family").get<std::string>() != p.family) continue;
    const std::vector<int64_t> ed = entry_dims(e, p.type());
    Candidate c{&e, 0, 0, true};
    bool usable = true;
    for (size_t i = 0; i < dims.size(); ++i) {
      const int64_t want = p.at(dims[i].name);
      c.exact = c.exact && ed[i] == want;
      usable = usable && (ed[i] == want || !listed(required, dims[i].name));
      (listed(cons, dims[i].name) ? c.constraint_distance : c.shape_distance) += dim_distance(ed[i], want);
    }
    if (usable) out.push_back(c);
  }
  return out;
}

}  // namespace

Lookup lookup(const json& dispatch, const Problem& p) {
  const std::string& fam = p.family;
  // Nearest = lowest (distance over constraint dims, distance over the others): same-constraint entries
  // first (distance 0), else the nearest constraint values (e.g. the nearest radius).
  const json* best = nullptr;
  double best_c = 0, best_s = 0;
  for (const Candidate& e : usable_entries(dispatch, p)) {
    if (e.exact) return {*e.entry, "exact"};
    const double c = e.constraint_distance, s = e.shape_distance;
    if (!best || c < best_c - kTieEps || (c <= best_c + kTieEps && s < best_s - kTieEps)) {
      best = e.entry;
      best_c = c;
      best_s = s;
    }
  }
  if (best) return {*best, "nearest"};
  const json defaults = dispatch.value("fallback", json::object()).value("defaults", json::object());
  if (defaults.contains(fam)) {
    const json& d = defaults[fam];
    return {{{"family", fam}, {"variant", d.at("variant")}, {"config", d.at("config")},
             {"candidate", d.value("candidate", candidate_name(d.at("variant").get<std::string>(), d.at("config")))}},
            "default"};
  }
  std::string covered;
  for (const auto& [f, d] : defaults.items()) covered += (covered.empty() ? "" : ", ") + f;
  throw InputError("the dispatch table has no entry or default for family '" + fam + "' (it covers: " +
                   (covered.empty() ? "nothing" : covered) + ")");
}

std::vector<json> tuning_shortlist(const json& dispatch, const Problem& p) {
  const Lookup pick = lookup(dispatch, p);
  std::vector<json> out;
  std::set<std::string> seen;
  auto add = [&](const json& c) {
    const json config = c.value("config", json::object());
    const std::string name = c.value("candidate", candidate_name(c.at("variant").get<std::string>(), config));
    if (seen.insert(name).second) out.push_back({{"variant", c.at("variant")}, {"config", config}, {"candidate", name}});
  };
  add(pick.entry);
  if (pick.rule != "nearest") return out;
  std::vector<Candidate> near = usable_entries(dispatch, p);
  std::stable_sort(near.begin(), near.end(), [](const Candidate& a, const Candidate& b) {
    return std::make_pair(a.constraint_distance, a.shape_distance) < std::make_pair(b.constraint_distance, b.shape_distance);
  });
  for (size_t k = 0; k < std::min(near.size(), kShortlistEntries); ++k) {
    add(*near[k].entry);
    const json alternates = near[k].entry->value("alternates", json::array());
    for (size_t a = 0; a + 1 < kShortlistPerEntry && a < alternates.size(); ++a) add(alternates[a]);
  }
  return out;
}

namespace {

// The types every table shares: Param, Entry, FamilyInfo, Choice.
void header_types(std::ostringstream& o) {
  o << "// A tunable's value: an integer (str_value == nullptr) or a name.\n"
    << "struct Param {\n  const char* name;\n  int64_t int_value;\n  const char* str_value;\n};\n\n"
    << "// One measured problem and its best candidate. dims are in the family's order (kFamilies[].dims):\n";
  for (const Family* f : FamilyRegistry::instance().all()) {
    o << "//   " << f->name() << ":";
    for (const auto& d : f->dims()) o << " " << d.name;
    o << "\n";
  }
  const size_t max_dims = max_family_dims();
  o << "// median_ms is the measured time (0 for a default, which stands for no one shape).\n"
    << "struct Entry {\n  const char* family;\n  int64_t dims[" << max_dims << "];\n  const char* variant;\n"
    << "  Param params[" << kMaxParams << "];\n  int param_count;\n  double median_ms;\n  const char* candidate;\n};\n\n"
    << "// constraint[i]: entries equal in dim i are preferred (compile-time in kernels); required[i]: an\n"
    << "// entry that differs in dim i is never used (it decides what a config may do, e.g. TF32 math).\n"
    << "struct FamilyInfo {\n  const char* name;\n  int n_dims;\n  const char* dims[" << max_dims << "];\n"
    << "  bool constraint[" << max_dims << "];\n  bool required[" << max_dims << "];\n"
    << "  int default_index;  // into kDefaults, -1 if none\n};\n\n"
    << "struct Choice {\n  const Entry* entry;  // nullptr when rule is \"none\"\n"
    << "  const char* rule;    // \"exact\" | \"nearest\" | \"default\" | \"none\" (unknown family or dim count)\n};\n\n";
}

// One table: its device, families, entries, defaults and select(). In a fleet header each table is a
// namespace of its own, and gets select_default() too (for a GPU no table was measured on).
void header_table(std::ostringstream& o, const json& dispatch, bool fleet) {
  const json& entries = dispatch.at("entries");
  const json defaults = dispatch.value("fallback", json::object()).value("defaults", json::object());
  std::set<std::string> families;
  for (const auto& e : entries) families.insert(e.at("family").get<std::string>());
  for (const auto& [f, d] : defaults.items()) families.insert(f);
  const json dev = dispatch.value("device", json::object());
  const std::string dev_name = dev.is_object() ? dev.value("name", "") : "";
  const std::string dev_arch = dev.is_object() ? dev.value("arch", "") : "";
  const std::string sha = dispatch.contains("git_sha") && dispatch["git_sha"].is_string() ? dispatch["git_sha"].get<std::string>() : "";
  o << "inline constexpr char kDevice[] = " << c_string(dev_name) << ";\n"
    << "inline constexpr char kArch[] = " << c_string(dev_arch) << ";\n"
    << "inline constexpr char kGitSha[] = " << c_string(sha) << ";\n\n";

  o << "inline constexpr FamilyInfo kFamilies[] = {\n";
  int default_index = 0;
  for (const auto& f : families) {
    const Family& fam = find_family(f);
    const auto cons = constraints_of(dispatch, fam);
    const auto required = required_of(dispatch, fam);
    const auto dims = fam.dims();
    std::string names, flags, required_flags;
    for (size_t i = 0; i < dims.size(); ++i) {
      names += (i ? ", " : "") + c_string(dims[i].name);
      flags += std::string(i ? ", " : "") + (listed(cons, dims[i].name) ? "true" : "false");
      required_flags += std::string(i ? ", " : "") + (listed(required, dims[i].name) ? "true" : "false");
    }
    o << "    {" << c_string(f) << ", " << dims.size() << ", {" << names << "}, {" << flags << "}, {"
      << required_flags << "}, "
      << (defaults.contains(f) ? default_index++ : -1) << "},\n";
  }
  o << "};\ninline constexpr int kFamilyCount = " << families.size() << ";\n\n";

  // A zero-length array is ill-formed: an empty table gets one unused {} element (the counts say 0).
  o << "// Sorted by problem key; on equal distances select() takes the first.\ninline constexpr Entry kEntries[] = {\n";
  for (const auto& e : entries) {
    const std::string f = e.at("family").get<std::string>();
    const double ms = e.contains("median_ms") && e["median_ms"].is_number() ? e["median_ms"].get<double>() : 0.0;
    o << "    " << c_entry(f, entry_dims(e, find_family(f)), e, ms) << ",\n";
  }
  if (entries.empty()) o << "    {},\n";
  o << "};\ninline constexpr int kEntryCount = " << entries.size() << ";\n\n";

  o << "// Per family, in kFamilies order: the candidate ok on the most problems.\ninline constexpr Entry kDefaults[] = {\n";
  for (const auto& f : families)
    if (defaults.contains(f)) o << "    " << c_entry(f, {}, defaults[f], 0.0) << ",\n";
  if (defaults.empty()) o << "    {},\n";
  o << "};\n\n";

  o << R"(// The candidate for a problem of `family` with dims in the family's order: an exact match; else the
// nearest entry of the family, by sum over dims of |log2((a + 1) / (b + 1))|, compared first over the
// constraint dims (so entries with equal constraints win, then the nearest constraint values) and then
// over the others, among entries equal in every required dim; else the family's default.
inline Choice select(const char* family, const int64_t* dims, int n_dims) {
  const FamilyInfo* f = nullptr;
  for (int i = 0; i < kFamilyCount; ++i)
    if (std::strcmp(kFamilies[i].name, family) == 0) f = &kFamilies[i];
  if (!f || !dims || n_dims != f->n_dims) return {nullptr, "none"};
  for (int i = 0; i < n_dims; ++i)
    if (dims[i] < 0) return {nullptr, "none"};
  const Entry* best = nullptr;
  double best_c = 0, best_s = 0;
  for (int k = 0; k < kEntryCount; ++k) {
    const Entry& e = kEntries[k];
    if (std::strcmp(e.family, family) != 0) continue;
    double c = 0, s = 0;
    bool exact = true, usable = true;
    for (int i = 0; i < n_dims; ++i) {
      exact = exact && e.dims[i] == dims[i];
      usable = usable && (e.dims[i] == dims[i] || !f->required[i]);
      const double d = std::fabs(std::log2((double(e.dims[i]) + 1.0) / (double(dims[i]) + 1.0)));
      (f->constraint[i] ? c : s) += d;
    }
    if (!usable) continue;
    if (exact) return {&e, "exact"};
    if (!best || c < best_c - 1e-9 || (c <= best_c + 1e-9 && s < best_s - 1e-9)) {
      best = &e;
      best_c = c;
      best_s = s;
    }
  }
  if (best) return {best, "nearest"};
  if (f->default_index >= 0) return {&kDefaults[f->default_index], "default"};
  return {nullptr, "none"};
}
)";
  if (fleet)
    o << R"(
// The family's safe default alone: what a GPU gets that no table was measured on.
inline Choice select_default(const char* family) {
  for (int i = 0; i < kFamilyCount; ++i)
    if (std::strcmp(kFamilies[i].name, family) == 0 && kFamilies[i].default_index >= 0)
      return {&kDefaults[kFamilies[i].default_index], "default"};
  return {nullptr, "none"};
}
)";
}

void header_prologue(std::ostringstream& o, const std::string& what) {
  o << "// Generated by `convtune export` from " << what
    << ".\n// Do not edit: re-export instead. Format and rules: docs/DISPATCH.md in convtune.\n"
    << "#pragma once\n#include <cmath>\n#include <cstdint>\n#include <cstring>\n\n"
    << "namespace convtune_dispatch {\n\n";
}

}  // namespace

std::string make_header(const json& dispatch) {
  const json dev = dispatch.value("device", json::object());
  const std::string sha = dispatch.contains("git_sha") && dispatch["git_sha"].is_string() ? dispatch["git_sha"].get<std::string>() : "";
  std::ostringstream o;
  header_prologue(o, "a tuning run on " + (dev.is_object() ? dev.value("name", "") : std::string()) + " (" +
                         (dev.is_object() ? dev.value("arch", "") : std::string()) + "), convtune " + sha);
  header_types(o);
  header_table(o, dispatch, false);
  o << "\n}  // namespace convtune_dispatch\n";
  return o.str();
}


std::string make_fleet_header(const json& fleet) {
  const json& tables = fleet.at("tables");
  std::ostringstream o;
  std::string models;
  for (const auto& t : tables) models += (models.empty() ? "" : ", ") + t.value("device", json::object()).value("name", std::string("?"));
  header_prologue(o, "tuning runs on " + models + " (a fleet table)");
  header_types(o);
  for (size_t i = 0; i < tables.size(); ++i) {
    o << "namespace table" << i << " {\n\n";
    header_table(o, tables[i], true);
    o << "\n}  // namespace table" << i << "\n\n";
  }
  o << "// One table per GPU model, as measured.\n"
    << "struct Table {\n  const char* device;\n  const char* arch;\n  const char* compute_capability;\n"
    << "  Choice (*select)(const char*, const int64_t*, int);\n  Choice (*select_default)(const char*);\n};\n"
    << "inline constexpr Table kTables[] = {\n";
  for (size_t i = 0; i < tables.size(); ++i) {
    const json dev = tables[i].value("device", json::object());
    o << "    {table" << i << "::kDevice, table" << i << "::kArch, " << c_string(dev.value("compute_capability", ""))
      << ", &table" << i << "::select, &table" << i << "::select_default},\n";
  }
  o << "};\ninline constexpr int kTableCount = " << tables.size() << ";\n\n";
  o << R"(struct FleetChoice {
  Choice choice;
  const Table* table;      // the table used (the first one for "default")
  const char* table_rule;  // "exact model" | "same architecture" | "default"
};

// The choice on the GPU the program runs on (its name and compute capability, e.g. "NVIDIA H100 80GB
// HBM3" and "9.0"): the table of that exact model; else of a model of the same architecture; else no
// measured table applies and the family's safe default (of the first table) is used.
inline FleetChoice select(const char* device_name, const char* compute_capability, const char* family,
                          const int64_t* dims, int n_dims) {
  for (int i = 0; i < kTableCount; ++i)
    if (device_name && std::strcmp(kTables[i].device, device_name) == 0)
      return {kTables[i].select(family, dims, n_dims), &kTables[i], "exact model"};
  for (int i = 0; i < kTableCount; ++i)
    if (compute_capability && std::strcmp(kTables[i].compute_capability, compute_capability) == 0)
      return {kTables[i].select(family, dims, n_dims), &kTables[i], "same architecture"};
  return {kTables[0].select_default(family), &kTables[0], "default"};
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
  ReadResult rr = read_records(run_folder / "records.jsonl");
  for (const auto& p : rr.problems) std::cerr << "warning: skipped an unreadable record: " << p << "\n";
  t.records = std::move(rr.records);
  return t;
}

namespace {
// make_dispatch of `records`; when nothing is ok, the InputError names `run`'s records file.
json dispatch_naming(const RunTable& run, const std::vector<json>& records) {
  try {
    return make_dispatch(run.summary, records);
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

namespace {
// The three files of an export, built in memory so that a failure leaves the folder as it was.
struct RunExport {
  std::string dispatch, header, t4;
};

RunExport build_run_export(const std::filesystem::path& run_folder, const std::vector<std::filesystem::path>& repeats) {
  RunTable t = read_run(run_folder);
  std::vector<RunTable> read;
  for (const auto& folder : repeats) read.push_back(read_run(folder));
  try {
    const json dispatch = repeats.empty() ? run_dispatch(t) : dispatch_over_repeats(t, read);
    return {dispatch.dump(2) + "\n", make_header(dispatch), make_t4(t.summary, t.records).dump(2) + "\n"};
  } catch (const json::exception& e) {  // a field of an unexpected kind that the checks on reading let by
    throw InputError("export: " + run_folder.string() + " holds a field of the wrong kind, nothing written: " + e.what());
  }
}
}  // namespace

void export_run(const std::filesystem::path& run_folder, const std::vector<std::filesystem::path>& repeats) {
  const RunExport out = build_run_export(run_folder, repeats);
  write_text_atomically(run_folder / "dispatch.json", out.dispatch);
  write_text_atomically(run_folder / "convtune_dispatch.h", out.header);
  write_text_atomically(run_folder / "t4.json", out.t4);
}

}  // namespace convtune
