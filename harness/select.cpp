#include "harness/select.h"

#include <algorithm>
#include <cmath>

namespace convtune {

static double median_ms(const json& r) { return r.at("time").at("median_ms").get<double>(); }
static double rel_stderr(const json& r) { return r.at("time").value("rel_stderr", 0.0); }

double noise_threshold(const json& a, const json& b) {
  return std::max(0.01, 3.0 * std::hypot(rel_stderr(a), rel_stderr(b)));
}

std::vector<Choice> select_best(const std::vector<json>& records) {
  std::map<std::string, std::vector<const json*>> by_problem;
  for (const auto& r : records)
    if (r.value("status", "") == "ok" && r.contains("time") && r.value("fidelity", "full") != "brief")
      by_problem[r["problem_key"].get<std::string>()].push_back(&r);
  std::vector<Choice> out;
  for (auto& [key, recs] : by_problem) {
    // Later records of one candidate (a resumed or repeated run) replace earlier ones.
    std::map<std::string, const json*> latest;
    for (const json* r : recs) latest[(*r)["candidate"].get<std::string>()] = r;
    std::vector<const json*> cands;
    for (auto& [name, r] : latest) cands.push_back(r);
    std::sort(cands.begin(), cands.end(), [](const json* a, const json* b) { return median_ms(*a) < median_ms(*b); });
    const json& fastest = *cands.front();
    std::vector<const json*> close;
    for (const json* r : cands)
      if (median_ms(*r) <= median_ms(fastest) * (1.0 + noise_threshold(fastest, *r))) close.push_back(r);
    const json* chosen = *std::min_element(close.begin(), close.end(), [](const json* a, const json* b) {
      const int ca = a->value("complexity", 5), cb = b->value("complexity", 5);
      return ca != cb ? ca < cb : median_ms(*a) < median_ms(*b);
    });
    Choice c;
    c.problem_key = key;
    c.best = *chosen;
    for (const json* r : close)
      if (r != chosen) c.ties.push_back(*r);
    for (const json* r : cands) {
      const std::string v = (*r)["variant"].get<std::string>();
      if (!c.best_per_variant.count(v)) c.best_per_variant[v] = *r;
      if (r->value("details", json::object()).value("library_pick", false)) c.library_pick[v] = *r;
    }
    for (const json* r : cands)
      if (r != chosen && c.alternates.size() < kAlternates) c.alternates.push_back(*r);
    for (const json* r : cands)
      if ((*r)["variant"] != chosen->at("variant")) {
        c.runner_up = *r;
        c.margin = median_ms(*r) / median_ms(*chosen) - 1.0;
        break;
      }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace convtune
