// warm: measure the top of a prior ranking (the nearest measured shape's best candidates) first, then
// anneal from the best of them. Without a prior it is anneal.
#include <algorithm>
#include <cmath>

#include "harness/strategies/common.h"

namespace convtune::strategies {

std::unique_ptr<Strategy> make_warm(const std::vector<SearchCandidate>& c, const StrategyOptions& o) {
  const size_t n = c.size();
  // The top 10% of the space or 8, whichever is larger, within the budget.
  const size_t top = std::min(budget_for(n, o, 0.25), std::max<size_t>(8, size_t(std::ceil(0.1 * double(n)))));
  std::vector<size_t> first;
  std::vector<char> taken(n, 0);
  for (size_t i : o.prior_order) {
    if (first.size() >= top) break;
    if (!taken[i]) first.push_back(i), taken[i] = 1;
  }
  return make_annealer("warm", c, o, std::move(first));
}

}  // namespace convtune::strategies
