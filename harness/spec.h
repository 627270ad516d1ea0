// Sweep specs (sweeps/*.json): which problems, which variants and parameter values, how to measure.
//
// {
//   "name": "conv2d",
//   "problems": [ {"family": "conv2d", "h": 8192, "w": [1024, 8192], "r": {"range": [1, 8]}} ],
//   "variants": ["conv2d.*"],                       // names or globs
//   "params": {"conv2d.register_tiled": {"px": [2, 4]}},  // restrict (or extend) a space
//   "strategy": "exhaustive",   // or random, halving (successive halving), anneal, warm (from the nearest
//                               // measured shape); see harness/strategy.h

//   "budget": {"max_evaluations_per_problem": 0, "seconds_per_problem": 0, "seconds_total": 0,  // 0 = none
//              "candidate_timeout_s": 60},  // a candidate running longer is killed: status timeout
//   "measure": {"cold": true, "max_rel_stderr": 0.01, "time_cap_s": 1.0}
// }
// A dimension is a number, a list, {"range": [first, last, step]} or {"pow2": [first, last]}; a problem
// entry stands for the product of its dimensions.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/measure.h"
#include "harness/problem.h"
#include "harness/variant.h"

namespace convtune {

using json = nlohmann::json;

struct Budget {
  // The strategy's budget; 0: its default (every candidate for exhaustive and halving, a quarter of them
  // for random, anneal and warm).
  int max_evaluations_per_problem = 0;
  double seconds_per_problem = 0;
  double seconds_total = 0;
  double candidate_timeout_s = 60;
};

struct SweepSpec {
  std::string name;
  std::vector<Problem> problems;
  std::vector<std::string> variant_patterns;
  json params = json::object();  // variant name -> {param: values}
  std::string strategy = "exhaustive";
  Budget budget;
  MeasureOptions measure;
  json source;  // the spec as written

  static SweepSpec parse(const json& j);  // throws InputError naming the field
  static SweepSpec load(const std::string& path);
  // The variants this spec asks for, for a problem's family.
  std::vector<const Variant*> variants_for(const Problem& p) const;
  // The space of a variant for a problem, with the spec's restrictions applied.
  ParamSpace space_for(const Variant& v, const Problem& p, const DeviceInfo& dev) const;
};

// Expands one problem entry of a spec into its problems (validated).
std::vector<Problem> expand_problems(const json& entry, const std::string& where);

}  // namespace convtune
