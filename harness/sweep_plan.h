// The plan of a sweep: every problem of a spec with every config of its variants' spaces, each either
// runnable or skipped with the reason `can_implement` gave.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.h"
#include "harness/spec.h"

namespace convtune {

using json = nlohmann::json;

struct PlannedCandidate {
  const Variant* variant;
  Problem problem;
  Config config;
  Status status;  // skipped points carry their reason
};

struct SweepPlan {
  std::vector<PlannedCandidate> candidates;  // in run order, problem by problem
  size_t runnable() const;
  json to_json() const;  // the plan as printed by --dry-run
};

SweepPlan make_plan(const SweepSpec& spec, const DeviceInfo& dev);

}  // namespace convtune
