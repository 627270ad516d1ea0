#include "harness/dispatch_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "harness/dispatch.h"
#include "harness/error.h"
#include "harness/dispatch_table.h"
#include "harness/fleet.h"
#include "harness/problem.h"
#include "harness/records.h"
#include "harness/variant.h"

namespace convtune {
namespace {

// First-use tuning keeps the fastest of its shortlist: here, the fastest the run measured of it (0: none).
double fastest_of(const std::vector<json>& shortlist, const ProblemTimes& t) {
  double fastest = 0;
  for (const json& c : shortlist)
    if (const double* ms = t.time_of(c); ms && (fastest == 0 || *ms < fastest)) fastest = *ms;
  return fastest;
}

// One lookup's time here, in seconds: the median of a few repeats, so that one page fault or cold cache
// does not stand for the rules' cost (an application pays it once per new shape).
double lookup_seconds(const DispatchTable::Pick& t, const Problem& p, const DeviceInfo* dev) {
  constexpr int kRepeats = 15;
  std::vector<double> s;
  for (int i = 0; i < kRepeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    lookup(t, p, dev);
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(s.begin(), s.begin() + kRepeats / 2, s.end());
  return s[kRepeats / 2];
}

// The device a run was measured on, for can_implement (null when the summary has no device block).
std::optional<DeviceInfo> run_device(const json& device) {
  if (!device.is_object() || !device.contains("name")) return std::nullopt;
  return DeviceInfo::from_json(device);
}

}  // namespace

std::string ProblemTimes::name_of(const json& candidate) const {
  const std::string name = candidate.at("candidate").get<std::string>();
  if (!candidate.contains("variant") || !candidate.value("config", json()).is_object() || !problem.is_object())
    return name;
  const std::string variant = candidate.at("variant").get<std::string>();
  auto it = spaces_.find(variant);
  if (it == spaces_.end()) {
    std::optional<ParamSpace> space;
    if (const Variant* v = Registry::instance().find(variant)) try {
        space = v->space(Problem::from_json(problem), DeviceInfo::offline_sm90());
      } catch (const std::exception&) {  // a problem this build no longer reads
      }
    it = spaces_.emplace(variant, std::move(space)).first;
  }
  if (!it->second) return name;
  try {
    const Config config = it->second->complete_config(candidate.at("config"), name);
    return config == candidate.at("config") ? name : candidate_name(variant, config);
  } catch (const InputError&) {  // a config of another age this space does not read: as it was recorded
    return name;
  }
}

const double* ProblemTimes::time_of(const json& candidate) const {
  const auto it = ms.find(name_of(candidate));
  return it == ms.end() ? nullptr : &it->second;
}

bool ProblemTimes::refused_as(const json& candidate) const { return refused.count(name_of(candidate)) > 0; }

std::map<std::string, ProblemTimes> times_by_problem(const std::vector<json>& records) {
  std::map<std::string, ProblemTimes> out;
  for (const json& r : records) {
    const std::string st = r.value("status", "");
    ProblemTimes& t = out[r.at("problem_key").get<std::string>()];
    if (t.problem.is_null()) t.problem = r.value("problem", json());
    const std::string name = t.name_of(r);
    if (st == status::skipped || st == status::runtime_error || st == status::compile_error) t.refused.insert(name);
    if (st != status::ok || !r.contains("time")) continue;
    if (r.value("fidelity", "full") != "full") continue;  // a brief halving round is not the candidate's time
    t.refused.erase(name);
    t.ms[name] = r["time"]["median_ms"].get<double>();
  }
  return out;
}

void RatioStats::add(double r) {
  ++measured;
  within += r <= 1.1;
  within_125 += r <= 1.25;
  worst = std::max(worst, r);
  log_sum += std::log(r);
}

json RatioStats::to_json() const {
  return {{"measured", measured}, {"unmeasured", unmeasured}, {"within_1_1", within}, {"within_1_25", within_125},
          {"worst_ratio", measured ? json(worst) : json(nullptr)},
          {"geomean_ratio", measured ? json(std::exp(log_sum / measured)) : json(nullptr)}};
}

json check_dispatch(const json& dispatch, const json& device, const std::vector<json>& records) {
  const std::string name = device.value("name", ""), cc = device.value("compute_capability", "");
  const DispatchTable table(dispatch);
  const std::optional<DeviceInfo> dev = run_device(device);
  json rows = json::array(), table_name = nullptr, table_device = nullptr;
  RatioStats all, tuned;
  std::map<std::string, RatioStats> by_family, tuned_by_family;
  double lookup_s = 0;  // the rules and can_implement, per shape: what an application pays at a new shape
  for (const auto& [key, t] : times_by_problem(records)) {
    if (t.ms.empty()) continue;  // nothing of the problem ran
    const Problem p = Problem::from_json(t.problem);
    const DispatchTable::Pick pick = table.pick(name, cc, p.family);
    DeviceLookup on_device;
    try {
      lookup_s += lookup_seconds(pick, p, dev ? &*dev : nullptr);
      on_device = lookup_on_device(table, name, cc, p, dev ? &*dev : nullptr);
    } catch (const NoCandidate&) {
      continue;  // a family the table does not cover
    }
    table_name = on_device.table_rule + " (" + on_device.table_device + ")";
    table_device = on_device.table_device;
    const Lookup& choice = on_device.lookup;
    // What the runtime ends up running: the first of its chain that the run did not see refused (a library
    // that does not support the shape says so only when asked, on the GPU).
    json chosen_entry = choice.entry;
    std::string rule = choice.rule;
    for (const json& c : fallback_chain(pick, p, dev ? &*dev : nullptr, choice))
      if (c.contains("candidate") && !t.refused_as(c)) {
        chosen_entry = c;
        rule = c["rule"].get<std::string>();
        break;
      }
    const std::string chosen = chosen_entry.at("candidate").get<std::string>();
    auto best = t.ms.begin();
    for (auto it = t.ms.begin(); it != t.ms.end(); ++it)
      if (it->second < best->second) best = it;
    json row = {{"problem_key", key}, {"family", p.family}, {"rule", rule}, {"chosen", chosen},
                {"chosen_ms", nullptr}, {"best", best->first}, {"best_ms", best->second}, {"ratio", nullptr},
                {"tuned_ratio", nullptr}};
    const bool unseen = choice.rule == "nearest" || choice.rule == "model";
    const double tuned_ms = unseen ? fastest_of(on_device.shortlist, t) : 0;
    if (tuned_ms > 0) {
      row["tuned_ratio"] = tuned_ms / best->second;
      tuned.add(tuned_ms / best->second);
      tuned_by_family[p.family].add(tuned_ms / best->second);
    }
    const double* chosen_ms = t.time_of(chosen_entry);
    if (!chosen_ms) ++by_family[p.family].unmeasured;
    if (chosen_ms) {
      row["chosen_ms"] = *chosen_ms;
      row["ratio"] = *chosen_ms / best->second;
      all.add(*chosen_ms / best->second);
      by_family[p.family].add(*chosen_ms / best->second);
    }
    rows.push_back(std::move(row));
  }
  json families = json::object();
  for (const auto& [f, st] : by_family) families[f] = st.to_json();
  for (const auto& [f, st] : tuned_by_family) families[f]["tuned"] = st.to_json();
  const json a = all.to_json(), tj = tuned.to_json();
  return {{"table", table_name},
          {"table_device", table_device},
          {"run_device", name},
          {"rows", rows},
          {"problems", rows.size()},
          {"measured", a["measured"]},
          {"within_1_1", a["within_1_1"]},
          {"worst_ratio", a["worst_ratio"]},
          {"geomean_ratio", a["geomean_ratio"]},
          {"tuned_measured", tj["measured"]},
          {"tuned_within_1_1", tj["within_1_1"]},
          {"tuned_worst_ratio", tj["worst_ratio"]},
          {"families", families},
          {"lookup_us", rows.empty() ? json(nullptr) : json(1e6 * lookup_s / double(rows.size()))}};
}

std::string format_dispatch_check(const json& check) {
  std::ostringstream out;
  char line[512];
  if (check["table"].is_string()) out << "table: " << check["table"].get<std::string>() << "\n";
  // A table of another GPU model (a fleet file without this model's table, or a single table): its choices
  // were measured elsewhere, so their ratios here say how well they travel, not how the table serves its own GPU.
  if (check.value("table_device", json()).is_string() && !check.value("run_device", std::string()).empty() &&
      check["table_device"] != check["run_device"])
    out << "note: the run was measured on " << check["run_device"].get<std::string>()
        << ", not on the table's GPU model\n";
  std::snprintf(line, sizeof line, "%-34s %-8s %-72s %9s %9s  %6s  %s\n", "problem", "rule", "table's choice", "its ms",
                "best ms", "tuned", "ratio (best candidate)");
  out << line;
  for (const json& r : check.at("rows")) {
    char its[32] = "not run", ratio[32] = "-", tuned[32] = "-";
    if (r.value("tuned_ratio", json()).is_number()) std::snprintf(tuned, sizeof tuned, "%.3f", r["tuned_ratio"].get<double>());
    if (r["ratio"].is_number()) {
      std::snprintf(its, sizeof its, "%.4f", r["chosen_ms"].get<double>());
      std::snprintf(ratio, sizeof ratio, "%.3f", r["ratio"].get<double>());
    }
    std::snprintf(line, sizeof line, "%-34s %-8s %-72s %9s %9.4f  %6s  %s (%s)\n", r["problem_key"].get<std::string>().c_str(),
                  r["rule"].get<std::string>().c_str(), r["chosen"].get<std::string>().c_str(), its,
                  r["best_ms"].get<double>(), tuned, ratio, r["best"].get<std::string>().c_str());
    out << line;
  }
  out << check["within_1_1"].get<int>() << " of " << check["measured"].get<int>()
      << " problems whose choice was measured are within 1.1x of their best";
  if (check["worst_ratio"].is_number())
    out << "; worst " << check["worst_ratio"].get<double>() << "x, geomean " << check["geomean_ratio"].get<double>() << "x";
  const int unmeasured = check["problems"].get<int>() - check["measured"].get<int>();
  if (unmeasured) out << "; " << unmeasured << " choices were not measured by the run";
  out << "\n";
  if (check.value("tuned_measured", 0) > 0)
    out << "with first-use tuning (tune_unseen: the fastest of the shortlist, as this run measured it): "
        << check["tuned_within_1_1"].get<int>() << " of " << check["tuned_measured"].get<int>()
        << " unmeasured shapes within 1.1x; worst " << check["tuned_worst_ratio"].get<double>() << "x\n";
  for (const json& r : check.at("rows"))
    if (r["rule"] == "nearest") {
      out << "note: the table carries no performance model for some families (exported without XGBoost, or by an "
             "older convtune): their unmeasured shapes take the nearest rule\n";
      break;
    }
  if (check.value("lookup_us", json()).is_number())
    out << "lookup (rules, model, can_implement): " << check["lookup_us"].get<double>() << " us a shape on this CPU\n";
  const json families = check.value("families", json::object());
  for (const auto& [f, st] : families.items()) {
    out << "  " << f << ": " << st.value("within_1_1", 0) << " of " << st.value("measured", 0) << " within 1.1x";
    if (st["worst_ratio"].is_number())
      out << ", worst " << st["worst_ratio"].get<double>() << "x, geomean " << st["geomean_ratio"].get<double>() << "x";
    if (st.contains("tuned") && st["tuned"]["worst_ratio"].is_number())
      out << "; tuned worst " << st["tuned"]["worst_ratio"].get<double>() << "x";
    out << "\n";
  }
  return out.str();
}

}  // namespace convtune
