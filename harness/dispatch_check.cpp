#include "harness/dispatch_check.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "harness/dispatch.h"
#include "harness/error.h"
#include "harness/fleet.h"
#include "harness/problem.h"
#include "harness/records.h"

namespace convtune {
namespace {

struct ProblemTimes {
  json problem;
  std::map<std::string, double> ms;  // candidate -> median ms of its latest ok full-fidelity record
};

std::map<std::string, ProblemTimes> times_by_problem(const std::vector<json>& records) {
  std::map<std::string, ProblemTimes> out;
  for (const json& r : records) {
    if (r.value("status", "") != status::ok || !r.contains("time")) continue;
    if (r.value("fidelity", "full") != "full") continue;  // a brief halving round is not the candidate's time
    ProblemTimes& t = out[r.at("problem_key").get<std::string>()];
    t.problem = r.at("problem");
    t.ms[r.at("candidate").get<std::string>()] = r["time"]["median_ms"].get<double>();
  }
  return out;
}

// First-use tuning keeps the fastest of its shortlist: here, the fastest the run measured of it (0: none).
double fastest_of(const std::vector<json>& shortlist, const std::map<std::string, double>& ms) {
  double fastest = 0;
  for (const json& c : shortlist) {
    const auto m = ms.find(c.at("candidate").get<std::string>());
    if (m != ms.end() && (fastest == 0 || m->second < fastest)) fastest = m->second;
  }
  return fastest;
}

}  // namespace

json check_dispatch(const json& dispatch, const json& device, const std::vector<json>& records) {
  const std::string name = device.value("name", ""), cc = device.value("compute_capability", "");
  json rows = json::array(), table = nullptr, table_device = nullptr;
  int measured = 0, within = 0, tuned_measured = 0, tuned_within = 0;
  double worst = 0, log_sum = 0, tuned_worst = 0;
  for (const auto& [key, t] : times_by_problem(records)) {
    DeviceLookup on_device;
    try {
      on_device = lookup_on_device(dispatch, name, cc, Problem::from_json(t.problem));
    } catch (const InputError&) {
      continue;  // a family the table does not cover
    }
    table = on_device.table_rule + " (" + on_device.table_device + ")";
    table_device = on_device.table_device;
    const Lookup& choice = on_device.lookup;
    const std::string chosen = choice.entry.at("candidate").get<std::string>();
    auto best = t.ms.begin();
    for (auto it = t.ms.begin(); it != t.ms.end(); ++it)
      if (it->second < best->second) best = it;
    json row = {{"problem_key", key}, {"rule", choice.rule}, {"chosen", chosen}, {"chosen_ms", nullptr},
                {"best", best->first}, {"best_ms", best->second}, {"ratio", nullptr}, {"tuned_ratio", nullptr}};
    const double tuned_ms = choice.rule == "nearest" ? fastest_of(on_device.shortlist, t.ms) : 0;
    if (tuned_ms > 0) {
      const double ratio = tuned_ms / best->second;
      row["tuned_ratio"] = ratio;
      ++tuned_measured;
      tuned_within += ratio <= 1.1;
      tuned_worst = std::max(tuned_worst, ratio);
    }
    const auto it = t.ms.find(chosen);
    if (it != t.ms.end()) {
      const double ratio = it->second / best->second;
      row["chosen_ms"] = it->second;
      row["ratio"] = ratio;
      ++measured;
      within += ratio <= 1.1;
      worst = std::max(worst, ratio);
      log_sum += std::log(ratio);
    }
    rows.push_back(std::move(row));
  }
  return {{"table", table},
          {"table_device", table_device},
          {"run_device", name},
          {"rows", rows},
          {"problems", rows.size()},
          {"measured", measured},
          {"within_1_1", within},
          {"worst_ratio", measured ? json(worst) : json(nullptr)},
          {"geomean_ratio", measured ? json(std::exp(log_sum / measured)) : json(nullptr)},
          {"tuned_measured", tuned_measured},
          {"tuned_within_1_1", tuned_within},
          {"tuned_worst_ratio", tuned_measured ? json(tuned_worst) : json(nullptr)}};
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
        << " nearest-rule problems within 1.1x; worst " << check["tuned_worst_ratio"].get<double>() << "x\n";
  return out.str();
}

}  // namespace convtune
