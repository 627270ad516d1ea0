#include "harness/cross_validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "harness/dispatch.h"
#include "harness/dispatch_check.h"
#include "harness/error.h"
#include "harness/records.h"

namespace convtune {
namespace {

// problem key -> fold: per family, sorted keys round-robin.
std::map<std::string, int> assign_folds(const std::vector<json>& records, int folds) {
  std::map<std::string, std::set<std::string>> keys;
  for (const json& r : records)
    if (r.value("status", "") == status::ok) keys[r.at("family").get<std::string>()].insert(r.at("problem_key").get<std::string>());
  std::map<std::string, int> out;
  for (const auto& [family, set] : keys) {
    int i = 0;
    for (const auto& k : set) out[k] = i++ % folds;
  }
  return out;
}

void judge(RatioStats& s, const ProblemTimes& t, const json& candidate, double best, json& row, const char* key) {
  const double* ms = t.time_of(candidate);
  if (!ms) {
    ++s.unmeasured;
    return;
  }
  s.add(*ms / best);
  row[key] = *ms / best;
}

// What the runtime ends up running, as check_dispatch() has it: the first of the fallback chain that the
// run did not record as refused (a library refuses some shapes only when asked, on the GPU).
json runs(const DispatchTable::Pick& table, const Problem& p, const DeviceInfo& dev, const Lookup& choice,
          const ProblemTimes& t) {
  for (const json& c : fallback_chain(table, p, &dev, choice))
    if (c.contains("candidate") && !t.refused_as(c)) return c;
  return choice.entry;
}

// What a perfect model would choose: the fastest of the model's candidates that the run measured on the
// shape (0 when the table has no model of the family, or none was measured). Tells a weak regression from
// a candidate list that lacks the shape's winner.
double best_of_candidates(const json& table, const std::string& family, const ProblemTimes& t) {
  const json* model = table.contains("model") ? &table["model"]["families"] : nullptr;
  if (!model || !model->contains(family)) return 0;
  double fastest = 0;
  const json& candidates = (*model)[family].at("candidates");
  const size_t lookup = (*model)[family].value("lookup_candidates", size_t(0));  // what the lookup chooses among
  for (size_t i = 0; i < candidates.size() && (lookup == 0 || i < lookup); ++i) {
    if (const double* ms = t.time_of(candidates[i])) fastest = fastest == 0 ? *ms : std::min(fastest, *ms);
  }
  return fastest;
}

}  // namespace

json cross_validate(const json& summary, const std::vector<json>& records, int folds) {
  if (folds < 2) throw InputError("--folds " + std::to_string(folds) + ": allowed: 2 or more");
  return cross_validate(summary, records, assign_folds(records, folds));
}

std::map<std::string, int> folds_by_group(const std::vector<json>& records, const std::vector<int>& groups,
                                          std::vector<int>& fold_groups) {
  if (groups.size() != records.size())
    throw std::logic_error("folds_by_group: " + std::to_string(groups.size()) + " groups for " +
                           std::to_string(records.size()) + " records");
  std::map<int, int> fold_of_group;
  std::map<std::string, int> out;
  fold_groups.clear();
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].value("status", "") != status::ok) continue;
    const std::string key = records[i].at("problem_key").get<std::string>();
    if (out.count(key)) continue;
    auto [it, added] = fold_of_group.emplace(groups[i], int(fold_groups.size()));
    if (added) fold_groups.push_back(groups[i]);
    out[key] = it->second;
  }
  return out;
}

json cross_validate(const json& summary, const std::vector<json>& records, const std::map<std::string, int>& fold_of) {
  const auto times = times_by_problem(records);
  const auto measured = std::count_if(times.begin(), times.end(), [](const auto& t) { return !t.second.ms.empty(); });
  if (measured < 2)
    throw InputError("--cross-validate: " + std::to_string(measured) + " problem(s) with ok records; allowed: "
                     "runs with two or more (each is judged by a table made from the others)");
  int folds = 0;
  for (const auto& [key, f] : fold_of) folds = std::max(folds, f + 1);
  if (folds < 2)
    throw InputError("--cross-validate: the problems fall in " + std::to_string(folds) + " fold(s); allowed: 2 or more "
                     "(with --leave-runs-out: two or more runs that each measured a problem the runs before it did not)");
  const json device = summary.value("device", json::object());
  const DeviceInfo dev = DeviceInfo::from_json(device);
  std::map<std::string, RatioStats> model, nearest, tuned, perfect;
  json rows = json::array();
  int used_folds = 0;
  for (int f = 0; f < folds; ++f) {
    std::vector<json> train;
    std::set<std::string> held;
    for (const json& r : records) {
      const auto it = fold_of.find(r.value("problem_key", std::string()));
      if (it != fold_of.end() && it->second == f) held.insert(it->first);
      else train.push_back(r);
    }
    if (held.empty()) continue;
    ++used_folds;
    const json table = make_dispatch(summary, train);
    json plain = table;
    plain.erase("model");
    const DispatchTable with_model(table), without(plain);
    // single tables, each of every family the run has
    const auto pick = with_model.pick(dev.name, "", ""), plain_pick = without.pick(dev.name, "", "");
    for (const std::string& key : held) {
      const auto t = times.find(key);
      if (t == times.end() || t->second.ms.empty()) continue;
      const Problem p = Problem::from_json(t->second.problem);
      double best = 0;
      for (const auto& [c, ms] : t->second.ms) best = best == 0 ? ms : std::min(best, ms);
      json row = {{"problem_key", key}, {"family", p.family}, {"fold", f}};
      try {
        const Lookup m = lookup(pick, p, &dev), n = lookup(plain_pick, p, &dev);
        const json m_run = runs(pick, p, dev, m, t->second), n_run = runs(plain_pick, p, dev, n, t->second);
        row["model_choice"] = m_run.at("candidate");
        row["model_rule"] = m.rule;
        row["nearest_choice"] = n_run.at("candidate");
        judge(model[p.family], t->second, m_run, best, row, "model_ratio");
        judge(nearest[p.family], t->second, n_run, best, row, "nearest_ratio");
        if (const double ideal = best_of_candidates(table, p.family, t->second); ideal > 0) {
          perfect[p.family].add(ideal / best);
          row["candidates_ratio"] = ideal / best;
        }
        double fastest = 0;
        for (const json& c : tuning_shortlist(pick, p, &dev))
          if (const double* ms = t->second.time_of(c)) fastest = fastest == 0 ? *ms : std::min(fastest, *ms);
        if (fastest > 0) {
          tuned[p.family].add(fastest / best);
          row["tuned_ratio"] = fastest / best;
        } else {
          ++tuned[p.family].unmeasured;
        }
      } catch (const NoCandidate& e) {
        row["error"] = e.what();  // nothing of the family in the other folds can run it
      }
      rows.push_back(std::move(row));
    }
  }
  json families = json::object();
  for (const auto& [f, s] : model)
    families[f] = {{"model", s.to_json()}, {"nearest", nearest[f].to_json()}, {"tuned", tuned[f].to_json()},
                   {"candidates", perfect[f].to_json()}};
  return {{"folds", used_folds}, {"families", families}, {"rows", rows}};
}

std::string format_cross_validation(const json& cv) {
  std::ostringstream out;
  char line[256];
  out << "cross-validation over " << cv.at("folds").get<int>()
      << (cv.contains("fold_runs") ? " runs: each run's problems judged by a table made from the other runs"
                                   : " folds: each problem judged by a table made without it")
      << " (candidates: the best of the model's candidates, what a perfect model would choose)\n";
  std::snprintf(line, sizeof line, "%-18s %-10s %8s %10s %11s %8s %8s %10s\n", "family", "rule", "problems", "<=1.10x",
                "<=1.25x", "worst", "geomean", "unmeasured");
  out << line;
  for (const auto& [f, by_rule] : cv.at("families").items())
    for (const char* rule : {"model", "nearest", "tuned", "candidates"}) {
      if (!by_rule.contains(rule)) continue;
      const json& s = by_rule.at(rule);
      const int n = s["measured"].get<int>();
      auto pct = [&](const char* k) { return n ? 100.0 * s[k].get<int>() / n : 0.0; };
      std::snprintf(line, sizeof line, "%-18s %-10s %8d %9.0f%% %10.0f%% %8.3f %8.3f %10d\n", f.c_str(), rule, n,
                    pct("within_1_1"), pct("within_1_25"), n ? s["worst_ratio"].get<double>() : 0.0,
                    n ? s["geomean_ratio"].get<double>() : 0.0, s["unmeasured"].get<int>());
      out << line;
    }
  return out.str();
}

}  // namespace convtune
