// Internal to the strategies: random numbers, budgets, the neighbour graph and per-strategy factories.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "harness/strategy.h"

namespace convtune::strategies {

// mt19937_64 is specified exactly by the standard, the std distributions are not: these helpers keep
// a seed's proposals the same on every platform (resume relies on it).
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  double uniform() { return double(engine_() >> 11) * 0x1.0p-53; }  // [0, 1)
  size_t below(size_t n) { return size_t(engine_() % n); }          // [0, n), n > 0
  double normal() {  // Box-Muller
    const double u = 1.0 - uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }

 private:
  std::mt19937_64 engine_;
};

// The first k of a seeded Fisher-Yates shuffle of 0..n-1 (defined in random.cpp).
std::vector<size_t> random_subset(size_t n, size_t k, Rng& rng);

// The evaluation budget: max_evaluations if set, else `default_fraction` of n (at least 1); never above n.
size_t budget_for(size_t n, const StrategyOptions& o, double default_fraction);

// Candidates are nodes; two are neighbours when they share a variant and differ in one parameter by one
// step along that parameter's value list (numbers ascending, names in order of appearance). A step that
// lands on a config absent from the list (it failed can_implement) goes on to the next value instead.
struct NeighbourGraph {
  explicit NeighbourGraph(const std::vector<SearchCandidate>& cands);
  std::vector<std::vector<size_t>> neighbours;
  std::vector<size_t> group;  // variant of each candidate, numbered from 0
  size_t groups = 0;
};

std::unique_ptr<Strategy> make_exhaustive(const std::vector<SearchCandidate>& c, const StrategyOptions& o);
std::unique_ptr<Strategy> make_random(const std::vector<SearchCandidate>& c, const StrategyOptions& o);
std::unique_ptr<Strategy> make_halving(const std::vector<SearchCandidate>& c, const StrategyOptions& o);
std::unique_ptr<Strategy> make_anneal(const std::vector<SearchCandidate>& c, const StrategyOptions& o);
std::unique_ptr<Strategy> make_warm(const std::vector<SearchCandidate>& c, const StrategyOptions& o);
// How many of the prior's ranking warm measures before it anneals: the top 10% of the n candidates or 8,
// whichever is larger, within half the budget (defined in warm.cpp).
size_t warm_prior_count(size_t n, const StrategyOptions& o);
// Annealing that measures `first` (in order) before it walks from the best of them; with `first`
// empty it starts from a few random points. Shared by anneal and warm.
std::unique_ptr<Strategy> make_annealer(std::string name, const std::vector<SearchCandidate>& c,
                                        const StrategyOptions& o, std::vector<size_t> first);

}  // namespace convtune::strategies
