// exhaustive: every candidate once, in the given order, at full fidelity.
#include "harness/strategies/common.h"

namespace convtune::strategies {
namespace {

class Exhaustive : public Strategy {
 public:
  Exhaustive(size_t n, const StrategyOptions& o) : end_(o.max_evaluations ? std::min(n, o.max_evaluations) : n) {}
  std::string name() const override { return "exhaustive"; }
  std::optional<Proposal> next() override {
    if (next_ >= end_) return std::nullopt;
    return Proposal{next_++, Fidelity::full};
  }
  void tell(const Proposal&, double) override {}
  size_t budget() const override { return end_; }

 private:
  size_t end_, next_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_exhaustive(const std::vector<SearchCandidate>& c, const StrategyOptions& o) {
  return std::make_unique<Exhaustive>(c.size(), o);
}

}  // namespace convtune::strategies
