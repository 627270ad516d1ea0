#include "harness/sweep_plan.h"

#include <map>
#include <string>

#include "harness/runner.h"

namespace convtune {

size_t SweepPlan::runnable() const {
  size_t n = 0;
  for (const auto& c : candidates) n += c.status.ok;
  return n;
}

json SweepPlan::to_json() const {
  std::map<std::string, json> per_problem;
  for (const auto& c : candidates) {
    json& p = per_problem[c.problem.key()];
    if (p.is_null()) p = {{"problem", c.problem.key()}, {"candidates", 0}, {"skipped", json::object()}};
    if (c.status.ok) {
      p["candidates"] = p["candidates"].get<int>() + 1;
    } else {
      json& s = p["skipped"][c.variant->name()];
      if (!s.is_object()) s = json::object();
      s[c.status.reason] = s.value(c.status.reason, 0) + 1;
    }
  }
  json out = json::array();
  for (auto& [k, v] : per_problem) out.push_back(v);
  return out;
}

SweepPlan make_plan(const SweepSpec& spec, const DeviceInfo& dev) {
  SweepPlan plan;
  for (const auto& p : spec.problems) {
    check_fits(p, dev, "spec.problems");
    for (const Variant* v : spec.variants_for(p))
      for (const auto& cfg : spec.space_for(*v, p, dev).enumerate())
        plan.candidates.push_back({v, p, cfg, v->can_implement(p, cfg, dev)});
  }
  return plan;
}

}  // namespace convtune
