#include "harness/select.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "harness/records.h"
#include "harness/variant.h"

namespace convtune {

static double rel_stderr(const json& r) { return r.at("time").value("rel_stderr", 0.0); }

// The first of record.math, details.math and config.math that is a string; fp32 when none is.
static std::string record_math(const json& r) {
  const json none = json::object();
  for (const json* o : {&r, r.contains("details") ? &r["details"] : &none, r.contains("config") ? &r["config"] : &none})
    if (o->is_object() && o->contains("math") && (*o)["math"].is_string()) return (*o)["math"].get<std::string>();
  return kMathFp32;
}

MathFraction math_fraction(const json& r) {
  const std::string math = record_math(r);
  if (r.contains("roofline_fraction_math")) return {math, r["roofline_fraction_math"].get<double>()};
  if (math == kMathFp32 && r.contains("roofline_fraction_own")) return {math, r["roofline_fraction_own"].get<double>()};
  return {math, std::nan("")};
}

double noise_threshold(const json& a, const json& b) {
  return std::max(0.01, 3.0 * std::hypot(rel_stderr(a), rel_stderr(b)));
}

namespace {

bool is_full(const json& r) { return r.value("fidelity", "full") != "brief"; }
bool is_usable(const json& r) { return r.value("status", "") == "ok" && r.contains("time"); }

// A run's record of each candidate of each problem: the latest usable full-fidelity record (a resumed run
// appends, and the later replaces the earlier), else the latest full-fidelity failure. Brief records
// (search strategies' cheap first looks) are not read.
using RunIndex = std::map<std::string, std::map<std::string, const json*>>;
RunIndex index_run(const std::vector<json>& records) {
  RunIndex idx;
  for (const json& r : records) {
    if (!is_full(r) || !r.contains("problem_key") || !r.contains("candidate")) continue;
    const json*& slot = idx[r["problem_key"].get<std::string>()][r["candidate"].get<std::string>()];
    if (slot == nullptr || is_usable(r) || !is_usable(*slot)) slot = &r;
  }
  return idx;
}

}  // namespace

std::vector<Choice> select_best(const std::vector<json>& records) {
  std::vector<Choice> out;
  for (const auto& [key, latest] : index_run(records)) {
    std::vector<const json*> cands;
    for (const auto& [name, r] : latest)
      if (is_usable(*r)) cands.push_back(r);
    if (cands.empty()) continue;
    // Equal medians (the event timer ticks in 0.5 us) fall to the candidate's name, so a choice never
    // depends on the sort's order of equals.
    auto faster = [](const json* a, const json* b) {
      const double ta = record_median_ms(*a), tb = record_median_ms(*b);
      return ta != tb ? ta < tb : (*a)["candidate"].get<std::string>() < (*b)["candidate"].get<std::string>();
    };
    std::sort(cands.begin(), cands.end(), faster);
    const json& fastest = *cands.front();
    std::vector<const json*> close;
    for (const json* r : cands)
      if (record_median_ms(*r) <= record_median_ms(fastest) * (1.0 + noise_threshold(fastest, *r))) close.push_back(r);
    const json* chosen = *std::min_element(close.begin(), close.end(), [&](const json* a, const json* b) {
      const int ca = a->value("complexity", 5), cb = b->value("complexity", 5);
      return ca != cb ? ca < cb : faster(a, b);
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
        c.margin = record_median_ms(*r) / record_median_ms(*chosen) - 1.0;
        break;
      }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<json> combine_repeats(const std::vector<const std::vector<json>*>& runs) {
  std::vector<RunIndex> idx;
  for (const auto* records : runs) idx.push_back(index_run(*records));
  std::map<std::string, std::set<std::string>> candidates;  // problem -> every candidate any run measured
  for (const RunIndex& run : idx)
    for (const auto& [problem, recs] : run)
      for (const auto& [name, r] : recs) candidates[problem].insert(name);
  std::vector<json> out;
  for (const auto& [problem, names] : candidates)
    for (const std::string& name : names) {
      const json* slowest = nullptr;
      const json* failed = nullptr;
      json medians = json::array();
      for (const RunIndex& run : idx) {
        const auto p = run.find(problem);
        if (p == run.end() || !p->second.count(name)) continue;  // judged on the runs that measured it
        const json& r = *p->second.at(name);
        if (!is_usable(r)) {
          if (failed == nullptr || (is_wrong(r) && !is_wrong(*failed))) failed = &r;
          continue;
        }
        medians.push_back(record_median_ms(r));
        if (slowest == nullptr || record_median_ms(r) > record_median_ms(*slowest)) slowest = &r;
      }
      if (failed != nullptr) {
        out.push_back(*failed);
      } else {
        json r = *slowest;
        r["repeats"] = {{"runs", medians.size()}, {"median_ms", medians}};
        out.push_back(std::move(r));
      }
    }
  return out;
}

}  // namespace convtune
