// warm: measure the top of a prior ranking (the nearest measured shape's best candidates, each variant's
// best first) first, then anneal from the best of them. Without a prior it is anneal.
#include <algorithm>
#include <cmath>
#include <set>

#include "harness/strategies/common.h"

namespace convtune::strategies {

size_t warm_prior_count(size_t n, const StrategyOptions& o) {
  // The other half of the budget anneals (a shape far from the nearest measured one ranks differently, e.g.
  // a short slice of a long convolution).
  const size_t half = (budget_for(n, o, 0.25) + 1) / 2;
  return std::min(half, std::max<size_t>(8, size_t(std::ceil(0.1 * double(n)))));
}

std::unique_ptr<Strategy> make_warm(const std::vector<SearchCandidate>& c, const StrategyOptions& o) {
  const size_t n = c.size();
  const size_t top = warm_prior_count(n, o);
  // The prior's best config of each variant first (in the order of the variants' best), then the rest
  // of the ranking: a neighbouring shape ranks variants better than it ranks one variant's configs.
  std::vector<size_t> first;
  std::vector<char> taken(n, 0);
  std::set<const Variant*> variants;
  for (size_t i : o.prior_order)
    if (first.size() < top && variants.insert(c[i].variant).second) first.push_back(i), taken[i] = 1;
  for (size_t i : o.prior_order) {
    if (first.size() >= top) break;
    if (!taken[i]) first.push_back(i), taken[i] = 1;
  }
  return make_annealer("warm", c, o, std::move(first));
}

}  // namespace convtune::strategies
