#include "harness/strategies/common.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "harness/error.h"
#include "harness/records.h"

namespace convtune {

const char* fidelity_name(Fidelity f) { return f == Fidelity::brief ? "brief" : "full"; }

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"exhaustive", "random", "halving", "anneal", "warm"};
  return names;
}

StrategyTraits strategy_traits(const std::string& name) {
  if (name == "exhaustive") return {true, false};
  if (name == "warm") return {false, true};
  if (name == "random" || name == "halving" || name == "anneal") return {false, false};
  std::string allowed;
  for (const auto& n : strategy_names()) allowed += (allowed.empty() ? "" : ", ") + n;
  throw InputError("spec.strategy: '" + name + "' is not a strategy; allowed: " + allowed);
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const std::vector<SearchCandidate>& cands,
                                        const StrategyOptions& o) {
  if (!(o.keep_fraction > 0 && o.keep_fraction <= 1))
    throw InputError("strategy keep_fraction: " + std::to_string(o.keep_fraction) + " is not in (0, 1]");
  for (size_t i : o.prior_order)
    if (i >= cands.size())
      throw std::out_of_range("prior_order: index " + std::to_string(i) + " is past the " +
                              std::to_string(cands.size()) + " candidates");
  if (name == "exhaustive") return strategies::make_exhaustive(cands, o);
  if (name == "random") return strategies::make_random(cands, o);
  if (name == "halving") return strategies::make_halving(cands, o);
  if (name == "anneal") return strategies::make_anneal(cands, o);
  if (name == "warm") return strategies::make_warm(cands, o);
  std::string allowed;
  for (const auto& n : strategy_names()) allowed += (allowed.empty() ? "" : ", ") + n;
  throw InputError("spec.strategy: '" + name + "' is not a strategy; allowed: " + allowed);
}

namespace strategies {

size_t budget_for(size_t n, const StrategyOptions& o, double default_fraction) {
  const size_t b = o.max_evaluations ? o.max_evaluations : size_t(std::ceil(default_fraction * double(n)));
  return std::min(n, std::max<size_t>(b, 1));
}

NeighbourGraph::NeighbourGraph(const std::vector<SearchCandidate>& cands) : neighbours(cands.size()),
                                                                            group(cands.size()) {
  std::map<std::string, size_t> group_of;                       // variant name -> group
  std::vector<std::map<std::string, std::vector<json>>> values;  // group -> param -> ordered values
  std::unordered_map<std::string, size_t> index;                 // candidate name -> first index
  for (size_t i = 0; i < cands.size(); ++i) {
    const std::string v = cands[i].variant->name();
    auto [it, fresh] = group_of.emplace(v, group_of.size());
    if (fresh) values.emplace_back();
    group[i] = it->second;
    index.emplace(candidate_name(v, cands[i].config), i);
    for (const auto& [k, val] : cands[i].config.items()) {
      auto& list = values[group[i]][k];
      if (std::find(list.begin(), list.end(), val) == list.end()) list.push_back(val);
    }
  }
  groups = group_of.size();
  for (auto& per_param : values)
    for (auto& [k, list] : per_param)
      if (std::all_of(list.begin(), list.end(), [](const json& x) { return x.is_number(); }))
        std::sort(list.begin(), list.end(), [](const json& a, const json& b) {
          return a.get<double>() < b.get<double>();
        });

  for (size_t i = 0; i < cands.size(); ++i) {
    const std::string v = cands[i].variant->name();
    for (const auto& [k, val] : cands[i].config.items()) {
      const auto& list = values[group[i]][k];
      const long pos = long(std::find(list.begin(), list.end(), val) - list.begin());
      for (long dir : {-1L, 1L}) {
        for (long s = pos + dir; s >= 0 && s < long(list.size()); s += dir) {
          Config c = cands[i].config;
          c[k] = list[size_t(s)];
          auto hit = index.find(candidate_name(v, c));
          if (hit != index.end() && hit->second != i) {
            neighbours[i].push_back(hit->second);
            break;
          }
        }
      }
    }
  }
}

}  // namespace strategies
}  // namespace convtune
