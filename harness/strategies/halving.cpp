// halving (successive halving, two rounds): screen candidates with a brief measurement, then measure
// the best keep_fraction of them at full fidelity; the answer is the best full-fidelity time.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "harness/strategies/common.h"

namespace convtune::strategies {
namespace {

class Halving : public Strategy {
 public:
  Halving(size_t n, const StrategyOptions& o) : keep_fraction_(o.keep_fraction) {
    if (n == 0) return;
    Rng rng(o.seed);
    const size_t m_max = o.max_evaluations;
    size_t m = n;  // screening round size: the largest whose round plus survivors fits the budget
    if (m_max) {
      while (m > 0 && m + keep(m) > m_max) --m;
    }
    if (m == 0) {  // a budget of one: no room to screen, measure one candidate fully
      survivors_ = random_subset(n, 1, rng);
      screened_ = true;
      return;
    }
    // Shuffled so that a partial screening round (budget or interruption) is an unbiased sample.
    screen_ = random_subset(n, m, rng);
    brief_ms_.assign(n, INFINITY);
  }

  std::string name() const override { return "halving"; }

  std::optional<Proposal> next() override {
    if (pending_) throw std::logic_error("halving: next() called before tell() of the previous proposal");
    if (next_screen_ < screen_.size()) {
      pending_ = Proposal{screen_[next_screen_++], Fidelity::brief};
    } else {
      if (!screened_) choose_survivors();
      if (next_full_ >= survivors_.size()) return std::nullopt;
      pending_ = Proposal{survivors_[next_full_++], Fidelity::full};
    }
    return pending_;
  }

  void tell(const Proposal& p, double time_ms) override {
    if (!pending_ || pending_->index != p.index || pending_->fidelity != p.fidelity)
      throw std::logic_error("halving: tell() does not match the pending proposal");
    pending_.reset();
    if (p.fidelity == Fidelity::brief) brief_ms_[p.index] = std::isnan(time_ms) ? INFINITY : time_ms;
  }

  size_t budget() const override { return screen_.empty() ? survivors_.size() : screen_.size() + keep(screen_.size()); }

 private:
  size_t keep(size_t m) const { return std::max<size_t>(1, size_t(std::ceil(keep_fraction_ * double(m)))); }

  // Best brief times first, so that the likely winner is confirmed early; failures never survive.
  void choose_survivors() {
    screened_ = true;
    for (size_t i : screen_)
      if (std::isfinite(brief_ms_[i])) survivors_.push_back(i);
    std::stable_sort(survivors_.begin(), survivors_.end(),
                     [&](size_t a, size_t b) { return brief_ms_[a] < brief_ms_[b]; });
    survivors_.resize(std::min(survivors_.size(), keep(screen_.size())));
  }

  double keep_fraction_;
  std::vector<size_t> screen_, survivors_;
  std::vector<double> brief_ms_;
  size_t next_screen_ = 0, next_full_ = 0;
  bool screened_ = false;
  std::optional<Proposal> pending_;
};

}  // namespace

std::unique_ptr<Strategy> make_halving(const std::vector<SearchCandidate>& c, const StrategyOptions& o) {
  return std::make_unique<Halving>(c.size(), o);
}

}  // namespace convtune::strategies
