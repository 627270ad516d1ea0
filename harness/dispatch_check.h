// How well a dispatch table serves shapes it was not built from: for each problem measured in a run
// (typically a sweep of shapes outside the table's grid), the table's choice by lookup(), its time in
// that run, the run's fastest ok candidate, and their ratio.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/params.h"

namespace convtune {

using json = nlohmann::json;

// What a run measured of each problem: its latest ok full-fidelity record's median per candidate, and the
// candidates whose latest record says they could not run (a library's refusal, a skip, an error).
class ProblemTimes {
 public:
  json problem;
  std::map<std::string, double> ms;  // by name_of()
  std::set<std::string> refused;
  // The run's median of `candidate` (a record, a table's entry or a shortlist's: candidate, variant, config), or
  // null; and whether the run recorded it refused.
  const double* time_of(const json& candidate) const;
  bool refused_as(const json& candidate) const;
  // The candidate's name with its config completed by its variant's space on `problem` (each left-out parameter
  // that has an `absent` value at that value, the kernel such configs ran), so that records and tables made
  // before a parameter existed meet those made after it (a table naming row_bands' `stages=1`, a run naming
  // none). A variant not registered here, or a config its space refuses, keeps its recorded name.
  std::string name_of(const json& candidate) const;

 private:
  mutable std::map<std::string, std::optional<ParamSpace>> spaces_;  // by variant, on `problem`
};
std::map<std::string, ProblemTimes> times_by_problem(const std::vector<json>& records);  // by problem key

// Ratios to the best of a set of problems: how many were measured (and not), within 1.1x and 1.25x, the
// worst, the geometric mean.
struct RatioStats {
  int measured = 0, unmeasured = 0, within = 0, within_125 = 0;
  double worst = 0, log_sum = 0;
  void add(double ratio);
  json to_json() const;  // {measured, unmeasured, within_1_1, within_1_25, worst_ratio, geomean_ratio}
};

// The table (a single table, or a fleet's table for `device`, the run's summary device block, picked as
// the runtime does) on every problem of `records`, choosing among what can run on that device as the
// runtime does: the first of fallback_chain() that the run did not record as refused (a library's
// refusal of a shape shows only on the GPU). {"table": how it was picked, "rows": [{problem_key, family,
// rule, chosen, chosen_ms (null: the run did not measure the choice), best, best_ms, ratio, tuned_ratio}],
// "families": per family {measured, within_1_1, within_1_25, worst_ratio, geomean_ratio, tuned: {...}},
// "lookup_us": the mean over problems of a lookup's median time here,
// "measured": n, "within_1_1": n, "worst_ratio": x, "geomean_ratio": x}. Problems of families the
// table does not cover are left out.
json check_dispatch(const json& dispatch, const json& device, const std::vector<json>& records);

// A table for the terminal, one row per problem, and the summary line.
std::string format_dispatch_check(const json& check);

}  // namespace convtune
