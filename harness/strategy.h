// Search strategies: which candidates of one problem to measure, and in what order, in ask/tell form.
// The driver asks next(), measures the proposal, tells the result, and repeats until next() is empty.
// Strategies are deterministic: the same seed and the same told times give the same proposals, so a
// resumed sweep can feed recorded times back instead of measuring again.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/params.h"
#include "harness/variant.h"

namespace convtune {

// One point of a problem's search space; every one has passed can_implement.
struct SearchCandidate {
  const Variant* variant;
  Config config;
};

// brief: a few samples (successive halving's screening round); full: the normal measurement.
enum class Fidelity { brief, full };
const char* fidelity_name(Fidelity f);  // "brief", "full"

struct Proposal {
  size_t index;  // into the candidate list
  Fidelity fidelity;
};

// Contract: call tell() for each proposal before the next call to next(). A strategy never proposes
// the same index twice at the same fidelity and never exceeds max_evaluations proposals.
class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // Next candidate to measure, or nullopt when the strategy is done (or the budget is spent).
  virtual std::optional<Proposal> next() = 0;
  // The measured median time (ms) of the proposal; +infinity when it failed (wrong_result, error...).
  virtual void tell(const Proposal& p, double time_ms) = 0;
  // The most proposals it will make (halving: if no screened candidate fails); for progress estimates.
  virtual size_t budget() const = 0;
};

struct StrategyOptions {
  size_t max_evaluations = 0;  // 0: the strategy's default (all for exhaustive/halving, a quarter for random,
                               // a quarter but two per variant at least for anneal/warm)
  uint64_t seed = 1;
  double keep_fraction = 0.25;  // halving: the share of the screening round re-measured at full fidelity
  // Warm start: candidate indices best-first, ranked on the nearest measured shape.
  std::vector<size_t> prior_order;
};

// Throws InputError naming 'spec.strategy' and the allowed names when `name` is unknown.
std::unique_ptr<Strategy> make_strategy(const std::string& name, const std::vector<SearchCandidate>& cands,
                                        const StrategyOptions& o);
const std::vector<std::string>& strategy_names();  // exhaustive, random, halving, anneal, warm

// What the sweep driver, sharding and replay need to know of a strategy, so that none of them names one.
struct StrategyTraits {
  // Measures every candidate, each on its own (exhaustive): candidates are work units and shards of their
  // own, and a run of it holds every time that replay needs. The others adapt to what they measured of a
  // problem, so a problem is one unit, and a shard takes whole problems.
  bool measures_every_candidate = false;
  // Ranks a problem's candidates by the nearest shape already measured (warm): needs StrategyOptions::prior_order.
  bool needs_prior = false;
};
// Throws InputError naming spec.strategy and the allowed names when `name` is unknown.
StrategyTraits strategy_traits(const std::string& name);

}  // namespace convtune
