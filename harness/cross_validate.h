// How well a run's table serves shapes it was not made from, measured on the run itself: its problems are
// split into folds, and each fold's problems are judged by a table made from the other folds' records.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

// Per family, its problems sorted by key go round-robin into `folds` folds (at most one per problem: then
// it is leave-one-out). For each fold, make_dispatch() over the records of every other fold (with its
// model), and for each held-out problem: the model's choice, the nearest rule's (the same table without
// its model) and first-use tuning's (the fastest of the shortlist, as the run measured it), each as a
// ratio to the best the run measured there. As in check_dispatch(), a choice is what the runtime ends up
// running: the first of fallback_chain() that the run did not record as refused on the problem (a library
// refuses some shapes only when asked, on the GPU). A choice the run did not measure counts as unmeasured.
// summary: the run's summary.json (its device decides what can run). Returns {"folds", "families":
// {family: {"model": stats, "nearest": stats, "tuned": stats, "unmeasured": {...}}}, "rows": [...]}, stats as
// check_dispatch's (measured, within_1_1, within_1_25, worst_ratio, geomean_ratio).
json cross_validate(const json& summary, const std::vector<json>& records, int folds);

// The same with the folds given: fold_of[problem key], 0 to n - 1 (a problem not in it is only trained on). Held
// out by group, e.g. by run (folds_by_group): a whole run's shapes, other networks than those the table is made
// from, are judged together.
json cross_validate(const json& summary, const std::vector<json>& records, const std::map<std::string, int>& fold_of);

// A fold per group: records[i] belongs to group groups[i] (e.g. the run it was read from); each problem key with
// an ok record goes to the fold of the first group that measured it, folds numbered by their groups' order.
// Returns the folds and, in `fold_groups`, each fold's group.
std::map<std::string, int> folds_by_group(const std::vector<json>& records, const std::vector<int>& groups,
                                          std::vector<int>& fold_groups);

std::string format_cross_validation(const json& cv);

}  // namespace convtune
