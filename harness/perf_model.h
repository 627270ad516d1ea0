// The dispatch table's performance model: per family, gradient-boosted regression trees (XGBoost) fitted
// on a run's verified records, scoring a candidate on any shape (log2 of how much slower than the problem's
// best it is, plus a classifier's margin of "slower than 1.05x") from the shape, the candidate and what the
// two make together (features() in
// harness/dispatch_rules.h). The fitted trees are written into dispatch.json under "model" and evaluated by
// the rules themselves: the runtime library, check-dispatch and exported headers need no XGBoost.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.h"
#include "harness/problem.h"

namespace convtune {

using json = nlohmann::json;

struct ModelOptions {
  int rounds = 40;       // rounds of the regression, and as many of the classifier, each `parallel` trees (the
                         // lookup's cost grows with the trees)
  int depth = 8;         // levels of each tree (at most; the data stops some branches sooner)
  double eta = 0.25;     // learning rate
  double gamma = 0;      // XGBoost's min_split_loss: a split must lower the loss this much (fewer nodes)
  // XGBoost's regularisers, for experiments (the defaults are XGBoost's and leave the fit block as before):
  // the share of columns each tree draws (seeded), of rows each tree draws, the least hessian in a leaf, and
  // the L2 weight of the leaves.
  double colsample = 1, subsample = 1, min_child = 1, lambda = 1;
  int parallel = 1;      // XGBoost's num_parallel_tree: trees a round (a bagged forest only with subsample or
                         // colsample below 1; else the trees are alike and only the step grows)
  int seed = 0;          // XGBoost's seed (what subsample and colsample draw)
  double clip = 3.0;     // targets over log2(best) + clip are clipped: 8x slower than the best is slow enough
  size_t max_candidates = 32;  // what the model chooses among, per family (the lookup's cost grows with it)
  // How many candidates the table lists for first-use tuning, the lookup's first (more configs to time from,
  // at no cost to a lookup): in cross-validation over the ten H200 layer runs 64 brought tuning within 1.05x
  // of the best from 177 / 175 / 171 to 180 / 179 / 174 of 180 shapes (docs/DISPATCH.md, 2026-11-29).
  size_t tune_candidates = 64;
  // The non-library candidates: by how many training problems each is within 1.10x of the best on (configs
  // that hold on many shapes, unseen ones too), but the last `cover` of the slots go, greedily, to those that
  // bring the most problems within 1.10x that no candidate kept before did (configs winning on rare kinds of
  // shape: a batch-1 7x7 layer, a backward-filter split count). 0: by count alone.
  size_t cover = 8;
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
  // Train on every measured config (true), or only on the rows of the model's candidates, what it chooses among.
  bool others = true;
  // The defaults, with any of the above set by CONVTUNE_MODEL_OPTIONS
  // ("rounds=200,eta=0.1"), for experiments; the fitted model records the values it used.
  static ModelOptions from_env();
};

// The model's non-library candidates in the order they are kept (the first `slots`): `by_count` (sorted by
// how many problems each is within 1.10x of the best on) up to slots - reserved; then, in the `reserved` slots,
// greedily the one near the best on the most problems (`near_problems`: candidate -> those problems) that no
// candidate kept before (`kept`, the libraries, or one of by_count's kept) is near on, ties in by_count's
// order; then the rest in by_count's order.
std::vector<std::string> cover_order(const std::vector<std::string>& kept, const std::vector<std::string>& by_count,
                                     const std::map<std::string, std::set<std::string>>& near_problems, size_t slots,
                                     size_t reserved);

// x in the fewest decimal digits (6 to 9) that read back as x both as a float literal (the exported header)
// and through a double (dispatch.json, read by nlohmann): a float written as a double prints 17 digits.
std::string shortest_float_text(float x);

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
