// random: a seeded sample without replacement, at full fidelity; by default a quarter of the space.
#include <numeric>

#include "harness/strategies/common.h"

namespace convtune::strategies {

std::vector<size_t> random_subset(size_t n, size_t k, Rng& rng) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  k = std::min(k, n);
  for (size_t i = 0; i < k; ++i) std::swap(order[i], order[i + rng.below(n - i)]);
  order.resize(k);
  return order;
}

namespace {

class RandomSample : public Strategy {
 public:
  RandomSample(size_t n, const StrategyOptions& o) {
    Rng rng(o.seed);
    order_ = n ? random_subset(n, budget_for(n, o, 0.25), rng) : std::vector<size_t>{};
  }
  std::string name() const override { return "random"; }
  std::optional<Proposal> next() override {
    if (next_ >= order_.size()) return std::nullopt;
    return Proposal{order_[next_++], Fidelity::full};
  }
  void tell(const Proposal&, double) override {}
  size_t budget() const override { return order_.size(); }

 private:
  std::vector<size_t> order_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_random(const std::vector<SearchCandidate>& c, const StrategyOptions& o) {
  return std::make_unique<RandomSample>(c.size(), o);
}

}  // namespace convtune::strategies
