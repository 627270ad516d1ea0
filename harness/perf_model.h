// The dispatch table's performance model: per family, gradient-boosted regression trees (XGBoost) fitted
// on a run's verified records, predicting log2(median time / the problem's floor) of a candidate on any
// shape from the shape, the candidate and what the two make together (features() in
// harness/dispatch_rules.h). The fitted trees are written into dispatch.json under "model" and evaluated by
// the rules themselves: the runtime library, check-dispatch and exported headers need no XGBoost.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.h"
#include "harness/problem.h"

namespace convtune {

using json = nlohmann::json;

struct ModelOptions {
  int rounds = 40;       // trees of the regression, and as many of the classifier (the lookup's cost grows with them)
  int depth = 6;         // levels of each tree
  double eta = 0.25;     // learning rate
  double clip = 3.0;     // targets over log2(best) + clip are clipped: 8x slower than the best is slow enough
  size_t max_candidates = 32;  // what the model chooses among, per family (the lookup's cost grows with it)
  double near_weight = 1;  // a record within 25% of its problem's best counts this many times (where choices are made)
  // The target: log2(time / the problem's best), which ranks candidates (what dispatch needs) better than
  // log2(time / floor), which also predicts times (predicted_ms) but spends the trees on how efficient
  // whole shapes are (measured on unseen conv2d and layer shapes: docs/DISPATCH.md).
  bool relative = true;
  // A classifier's trees added to the regression's: XGBoost binary:logistic on whether a candidate is slower
  // than `within` times its problem's best, its margin (log-odds of slow) scaled by `mix`. The regression
  // ranks every candidate; the classifier sharpens the ranking at the top, where the choice is made (in
  // cross-validation over 108 H200 layer shapes a pass: docs/DISPATCH.md). mix = 0: the regression alone.
  double within = 1.05;
  double mix = 0.1;
  // The defaults, with any of the above set by CONVTUNE_MODEL_OPTIONS
  // ("rounds=200,eta=0.1"), for experiments; the fitted model records the values it used.
  static ModelOptions from_env();
};

// Whether this convtune was built with XGBoost (libxgboost-dev): without it, export writes no model and
// tables fall back to the nearest rule.
bool model_fitting_available();

// The table's "model" block: {"schema", "target", "families": {family: model}} for every family with ok
// records on at least three problems. `table` is the make_dispatch() output without a model: its entries'
// choices, alternates and baselines and its defaults become the candidates. Deterministic: the same records
// (in any order) give the same bytes. Returns null when XGBoost is not available.
json fit_models(const json& table, const std::vector<json>& records, const ModelOptions& options = {});

// The floor of a problem under a table's measured ceilings (its "ceilings" block), in ms: what the model's
// predictions are relative to. Nominal ceilings (3 TB/s, 60 TFLOP/s) when the table has none.
double table_floor_ms(const json& table, const Problem& p);

}  // namespace convtune
