// Replay: judges search strategies without a GPU, on the landscape an exhaustive sweep recorded. Each
// strategy is run against the recorded times, and we count how many measurements it needs to come
// within 5% of the problem's recorded optimum.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/problem.h"
#include "harness/strategy.h"

namespace convtune {

using json = nlohmann::json;

// One row per strategy x family. The evaluation counts are over the trials that reached 5% (NaN when
// none did); success_rate says how many did. Brief (screening) measurements count as evaluations.
struct ReplayResult {
  std::string strategy;
  std::string family;
  double mean_evals_to_5pct = 0;
  double median_evals_to_5pct = 0;
  double mean_fraction_of_space = 0;  // evals to 5% / candidates of the problem
  double success_rate = 0;            // trials that came within 5% of the optimum within the budget
  double mean_best_ratio = 0;  // final best full-fidelity time / optimum, over trials that found a working one
  int problems = 0;
  int trials = 0;  // problems x trials_per_problem
  json to_json() const;
};

// Candidates of a problem are its records with status ok (time: time.median_ms) or a failure
// (compile_error, runtime_error, wrong_result, timeout: +inf); skipped records, brief-fidelity records,
// repeats of a candidate and variants this build does not know are left out, as are problems with no
// working candidate. Brief proposals are answered with the recorded time times exp(N(0, 0.03)).
// budget_fraction: max_evaluations = ceil(fraction x candidates); 0 leaves each strategy its default.
// warm gets its prior from the nearest other problem of the same family (log-distance of the shapes).
// Throws InputError for an unknown strategy or trials_per_problem < 1.
std::vector<ReplayResult> replay_strategies(const std::vector<json>& records, const std::vector<std::string>& strategies,
                                            int trials_per_problem, double budget_fraction);

// Why a run's records cannot stand for the whole landscape replay needs ("" when they can): a run whose
// summary says a strategy other than exhaustive, a per-problem evaluation budget, or one shard of several
// measured only part of each space, so replay's "optimum" would be the best of a sample. Names the field.
std::string replay_data_gap(const json& summary);

// The warm-start prior for a problem about to be searched: the working candidates of the nearest other
// problem of the same family in `records` (same rules as replay), fastest first, as indices into
// `cands` matched by candidate name. Empty when there is no such problem (warm then anneals).
std::vector<size_t> warm_prior(const std::vector<json>& records, const Problem& problem,
                               const std::vector<SearchCandidate>& cands);

}  // namespace convtune
