// anneal: simulated annealing over the neighbour graph, on log(time), with a cache so that no candidate
// is measured twice. Moves onto already measured candidates cost nothing and are taken inside next().
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "harness/strategies/common.h"

namespace convtune::strategies {
namespace {

// Accepts a 10% slower point with probability ~1/2 at the start and ~1e-14 at the end: a walk that
// explores first and then settles into hill climbing.
constexpr double kT0 = 0.14, kT1 = 0.003;
constexpr double kJump = 0.05;    // chance of trying a random point of another variant instead
constexpr int kFreeMoves = 32;    // moves over cached points per next() before searching outward

class Annealer : public Strategy {
 public:
  Annealer(std::string name, const std::vector<SearchCandidate>& cands, const StrategyOptions& o,
           std::vector<size_t> first)
      : name_(std::move(name)), graph_(cands), rng_(o.seed), n_(cands.size()), budget_(default_budget(o)),
        ms_(n_, NAN), first_(std::move(first)) {
    if (first_.empty() && n_) first_ = starts();
    else add_missing_variants();
  }

  std::string name() const override { return name_; }
  size_t budget() const override { return std::min(budget_, n_); }

  std::optional<Proposal> next() override {
    if (pending_) throw std::logic_error(name_ + ": next() called before tell() of the previous proposal");
    if (evals_ >= budget_ || evals_ >= n_) return std::nullopt;
    pending_start_ = false;
    size_t i = choose();
    pending_ = Proposal{i, Fidelity::full};
    return pending_;
  }

  void tell(const Proposal& p, double time_ms) override {
    if (!pending_ || pending_->index != p.index)
      throw std::logic_error(name_ + ": tell() does not match the pending proposal");
    pending_.reset();
    ms_[p.index] = std::isnan(time_ms) ? INFINITY : time_ms;
    ++evals_;
    // Start points only compete for the best; later points go through the Metropolis test.
    const bool better = current_ && ms_[p.index] < ms_[*current_];
    if (pending_start_ ? (std::isfinite(ms_[p.index]) && (!current_ || better)) : accept(ms_[p.index]))
      current_ = p.index;
  }

 private:
  bool measured(size_t i) const { return !std::isnan(ms_[i]); }

  // A quarter of the space, but (unless the spec sets the budget) at least two points per variant: where
  // most configs of a shape are refused, a quarter can be fewer than the variants, and the fastest
  // variant would go untried (a long filter: 23 candidates in 8 variants, 4 of them the spectral ones).
  size_t default_budget(const StrategyOptions& o) const {
    const size_t quarter = budget_for(n_, o, 0.25);
    return o.max_evaluations ? quarter : std::min(n_, std::max(quarter, 2 * graph_.groups));
  }

  // A prior (warm) covers only the variants measured on the nearest shape; every other variant gets one
  // random start after it, while the budget allows.
  void add_missing_variants() {
    std::vector<char> covered(graph_.groups, 0);
    for (size_t i : first_) covered[graph_.group[i]] = 1;
    std::vector<std::vector<size_t>> missing(graph_.groups);
    for (size_t i = 0; i < n_; ++i)
      if (!covered[graph_.group[i]]) missing[graph_.group[i]].push_back(i);
    for (const auto& g : missing)
      if (!g.empty() && first_.size() < budget_) first_.push_back(g[rng_.below(g.size())]);
  }

  // One random start in every variant while they fit in half the budget, so that the walk begins in the
  // best strategy rather than in whichever one a few random points happen to hit (on real sweeps the
  // variants' times differ by far more than their configs' do); otherwise a few random points.
  std::vector<size_t> starts() {
    if (graph_.groups < 2 || graph_.groups * 2 > budget_)
      return random_subset(n_, std::clamp<size_t>(budget_ / 10, 2, 8), rng_);
    std::vector<std::vector<size_t>> by_group(graph_.groups);
    for (size_t i = 0; i < n_; ++i) by_group[graph_.group[i]].push_back(i);
    std::vector<size_t> out;
    for (const auto& g : by_group)
      if (!g.empty()) out.push_back(g[rng_.below(g.size())]);
    return out;
  }

  size_t choose() {
    while (next_first_ < first_.size()) {
      const size_t i = first_[next_first_++];
      if (!measured(i)) {
        pending_start_ = true;
        return i;
      }
    }
    if (!current_) {  // every start failed: keep sampling until one runs
      pending_start_ = true;
      return random_unmeasured(false);
    }
    if (graph_.groups > 1 && rng_.uniform() < kJump) return random_unmeasured(true);
    for (int k = 0; k < kFreeMoves; ++k) {
      const auto& nb = graph_.neighbours[*current_];
      if (nb.empty()) break;
      const size_t j = nb[rng_.below(nb.size())];
      if (!measured(j)) return j;
      if (accept(ms_[j])) current_ = j;
    }
    return nearest_unmeasured(*current_);
  }

  bool accept(double ms) {
    if (!std::isfinite(ms)) return false;
    if (!current_ || ms <= ms_[*current_]) return true;
    const double t = kT0 * std::pow(kT1 / kT0, double(evals_) / double(budget_));
    return rng_.uniform() < std::exp(-std::log(ms / ms_[*current_]) / t);
  }

  // other_variant: only candidates of a variant other than the current one (any, when none is left).
  size_t random_unmeasured(bool other_variant) {
    auto ok = [&](size_t i) { return !measured(i) && !(other_variant && graph_.group[i] == graph_.group[*current_]); };
    for (int k = 0; k < 16; ++k) {  // cheap while most of the space is unmeasured
      const size_t i = rng_.below(n_);
      if (ok(i)) return i;
    }
    std::vector<size_t> pool;
    for (size_t i = 0; i < n_; ++i)
      if (ok(i)) pool.push_back(i);
    if (pool.empty()) {
      if (!other_variant) throw std::logic_error(name_ + ": no unmeasured candidate left");
      return random_unmeasured(false);
    }
    return pool[rng_.below(pool.size())];
  }

  // The local minimum's neighbourhood is exhausted: a random one of the closest unmeasured candidates
  // in graph distance. When the whole variant is exhausted, the walk restarts from the fastest measured
  // point that still has an unmeasured neighbour (random sampling judged against another variant's
  // optimum would accept almost nothing).
  size_t nearest_unmeasured(size_t from) {
    std::vector<char> seen(n_, 0);
    std::vector<size_t> level = {from};
    seen[from] = 1;
    while (!level.empty()) {
      std::vector<size_t> next, found;
      for (size_t i : level)
        for (size_t j : graph_.neighbours[i])
          if (!seen[j]) {
            seen[j] = 1;
            (measured(j) ? next : found).push_back(j);
          }
      if (!found.empty()) return found[rng_.below(found.size())];
      level = std::move(next);
    }
    std::optional<size_t> restart;
    std::vector<size_t> open;
    for (size_t i = 0; i < n_; ++i) {
      if (!measured(i) || !std::isfinite(ms_[i]) || (restart && ms_[i] >= ms_[*restart])) continue;
      std::vector<size_t> o;
      for (size_t j : graph_.neighbours[i])
        if (!measured(j)) o.push_back(j);
      if (!o.empty()) restart = i, open = std::move(o);
    }
    if (!restart) return random_unmeasured(false);
    current_ = restart;
    return open[rng_.below(open.size())];
  }

  std::string name_;
  NeighbourGraph graph_;
  Rng rng_;
  size_t n_, budget_, evals_ = 0;
  std::vector<double> ms_;  // NaN: not measured
  std::vector<size_t> first_;
  size_t next_first_ = 0;
  std::optional<size_t> current_;
  std::optional<Proposal> pending_;
  bool pending_start_ = false;
};

}  // namespace

std::unique_ptr<Strategy> make_annealer(std::string name, const std::vector<SearchCandidate>& c,
                                        const StrategyOptions& o, std::vector<size_t> first) {
  return std::make_unique<Annealer>(std::move(name), c, o, std::move(first));
}

std::unique_ptr<Strategy> make_anneal(const std::vector<SearchCandidate>& c, const StrategyOptions& o) {
  return make_annealer("anneal", c, o, {});
}

}  // namespace convtune::strategies
