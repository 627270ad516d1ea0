#include "harness/replay.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "harness/error.h"
#include "harness/records.h"
#include "harness/strategies/common.h"
#include "harness/strategy.h"

namespace convtune {

json ReplayResult::to_json() const {
  auto num = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  return {{"strategy", strategy},
          {"family", family},
          {"mean_evals_to_5pct", num(mean_evals_to_5pct)},
          {"median_evals_to_5pct", num(median_evals_to_5pct)},
          {"mean_fraction_of_space", num(mean_fraction_of_space)},
          {"success_rate", success_rate},
          {"mean_best_ratio", num(mean_best_ratio)},
          {"problems", problems},
          {"trials", trials}};
}

namespace {

struct Landscape {
  std::string key, family;
  std::map<std::string, double> log_dims;
  std::vector<SearchCandidate> cands;
  std::vector<std::string> names;
  std::vector<double> ms;
  double optimum = INFINITY;
};

std::map<std::string, double> log_dims(const json& shape) {
  std::map<std::string, double> out;
  for (const auto& [k, d] : shape.items())
    if (d.is_number()) out[k] = std::log1p(std::max(0.0, d.get<double>()));
  return out;
}

std::vector<Landscape> gather(const std::vector<json>& records) {
  static const std::set<std::string> failed = {status::compile_error, status::runtime_error, status::wrong_result,
                                               status::timeout};
  std::vector<Landscape> out;
  std::map<std::string, size_t> by_key;
  std::set<std::pair<size_t, std::string>> seen;
  for (const auto& r : records) {
    const std::string st = r.value("status", "");
    if (st != status::ok && !failed.count(st)) continue;
    if (r.value("fidelity", "full") != "full") continue;
    const Variant* v = Registry::instance().find(r.value("variant", ""));
    if (!v || !r.contains("config") || !r.contains("problem_key")) continue;
    double ms = INFINITY;
    if (st == status::ok) {
      if (!r.contains("time") || !r["time"].contains("median_ms")) continue;
      ms = r["time"]["median_ms"].get<double>();
    }
    const std::string key = r["problem_key"].get<std::string>();
    auto [it, fresh] = by_key.emplace(key, out.size());
    if (fresh) {
      Landscape l;
      l.key = key;
      l.family = r.value("family", key.substr(0, key.find('/')));
      l.log_dims = log_dims(r.value("problem", json::object()));
      out.push_back(std::move(l));
    }
    Landscape& l = out[it->second];
    const std::string name = candidate_name(v->name(), r["config"]);
    if (!seen.emplace(it->second, name).second) continue;
    l.cands.push_back({v, r["config"]});
    l.names.push_back(name);
    l.ms.push_back(ms);
    l.optimum = std::min(l.optimum, ms);
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const Landscape& l) { return !std::isfinite(l.optimum); }),
            out.end());
  return out;
}

// The working candidates of the nearest problem of `family` other than `key` (log-distance over the
// shared dimensions), fastest first, as indices into `names` (matched by candidate name).
std::vector<size_t> prior_for(const std::vector<Landscape>& all, const std::string& key, const std::string& family,
                              const std::map<std::string, double>& dims, const std::vector<std::string>& names) {
  const Landscape* nearest = nullptr;
  double best = INFINITY;
  for (const Landscape& q : all) {
    if (q.key == key || q.family != family) continue;
    double d2 = 0;
    for (const auto& [k, x] : dims) {
      auto it = q.log_dims.find(k);
      if (it != q.log_dims.end()) d2 += (x - it->second) * (x - it->second);
    }
    if (d2 < best) best = d2, nearest = &q;
  }
  if (!nearest) return {};
  std::vector<size_t> order(nearest->ms.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return nearest->ms[a] < nearest->ms[b]; });
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < names.size(); ++i) index.emplace(names[i], i);
  std::vector<size_t> prior;
  for (size_t i : order) {
    if (!std::isfinite(nearest->ms[i])) break;
    auto it = index.find(nearest->names[i]);
    if (it != index.end()) prior.push_back(it->second);
  }
  return prior;
}

struct Trial {
  size_t evals_to_5pct = 0;  // 0: never within 5%
  double best_ratio = INFINITY;
};

Trial simulate(const std::string& strategy, const Landscape& l, const StrategyOptions& o) {
  const auto s = make_strategy(strategy, l.cands, o);
  strategies::Rng noise(o.seed ^ 0x9E3779B97F4A7C15ull);
  Trial t;
  double best = INFINITY;
  size_t evals = 0;
  while (auto p = s->next()) {
    if (++evals > 2 * l.cands.size() + 1) throw std::logic_error(strategy + ": proposes more than it may");
    double ms = l.ms.at(p->index);
    if (p->fidelity == Fidelity::brief) {
      ms *= std::exp(0.03 * noise.normal());  // inf stays inf
    } else {
      best = std::min(best, ms);
      if (!t.evals_to_5pct && best <= 1.05 * l.optimum) t.evals_to_5pct = evals;
    }
    s->tell(*p, ms);
  }
  t.best_ratio = best / l.optimum;
  return t;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? NAN : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace

std::string replay_data_gap(const json& summary) {
  if (!summary.is_object()) return "";
  const json spec = summary.value("spec", json::object());
  if (!spec.is_object()) return "";
  const json strategy = spec.value("strategy", json("exhaustive"));
  const bool every = strategy.is_string() && std::find(strategy_names().begin(), strategy_names().end(),
                                                       strategy.get<std::string>()) != strategy_names().end() &&
                     strategy_traits(strategy.get<std::string>()).measures_every_candidate;
  if (!every) return "spec.strategy is " + strategy.dump() + ", which measured only part of each space";
  const json budget = spec.value("budget", json::object());
  if (!budget.is_object()) return "spec.budget is " + budget.dump() + ", not an object: what it cut cannot be told";
  for (const char* limit : {"max_evaluations_per_problem", "seconds_per_problem", "seconds_total"}) {
    const json v = budget.value(limit, json(0));
    if (!v.is_number()) return std::string("spec.budget.") + limit + " is " + v.dump() + ", not a number";
    if (v.get<double>() > 0)
      return std::string("spec.budget.") + limit + " is " + v.dump() + ", which may have cut the spaces short";
  }
  const json interrupted = summary.value("interrupted", json(false));
  if (!interrupted.is_boolean()) return "interrupted is " + interrupted.dump() + ", not true or false";
  if (interrupted.get<bool>())
    return "interrupted is true: the sweep stopped before it measured every candidate (finish it with convtune sweep "
           "--resume)";
  if (summary.contains("finished") && summary["finished"].is_null())  // killed before it could say so
    return "finished is null: the sweep never finished (finish it with convtune sweep --resume)";
  const json shard = summary.value("shard", json::object());
  const json count = shard.is_object() ? shard.value("count", json(1)) : json(1);
  if (count.is_number() && count.get<double>() > 1 && !summary.contains("merge"))
    return "shard is " + shard.dump() + ", one part of a sharded sweep (merge the shards first)";
  return "";
}

std::vector<size_t> warm_prior(const std::vector<json>& records, const Problem& problem,
                               const std::vector<SearchCandidate>& cands) {
  std::vector<std::string> names;
  for (const auto& c : cands) names.push_back(candidate_name(c.variant->name(), c.config));
  return prior_for(gather(records), problem.key(), problem.family, log_dims(problem.to_json()), names);
}

std::vector<ReplayResult> replay_strategies(const std::vector<json>& records, const std::vector<std::string>& strategies,
                                            int trials_per_problem, double budget_fraction) {
  if (trials_per_problem < 1) throw InputError("replay: trials per problem must be at least 1");
  for (const auto& s : strategies) make_strategy(s, {}, {});  // unknown names fail before any work
  const std::vector<Landscape> problems = gather(records);
  std::vector<std::vector<size_t>> priors(problems.size());
  for (size_t i = 0; i < problems.size(); ++i) {
    const Landscape& l = problems[i];
    priors[i] = prior_for(problems, l.key, l.family, l.log_dims, l.names);
  }

  std::vector<ReplayResult> out;
  for (const auto& strategy : strategies) {
    struct Acc {
      std::vector<double> evals, fractions, ratios;
      int problems = 0, trials = 0, successes = 0;
    };
    std::map<std::string, Acc> by_family;
    for (size_t pi = 0; pi < problems.size(); ++pi) {
      const Landscape& l = problems[pi];
      Acc& a = by_family[l.family];
      ++a.problems;
      const size_t n = l.cands.size();
      StrategyOptions o;
      if (budget_fraction > 0)
        o.max_evaluations = std::clamp<size_t>(size_t(std::ceil(budget_fraction * double(n))), 1, n);
      if (strategy_traits(strategy).needs_prior) o.prior_order = priors[pi];
      for (int trial = 0; trial < trials_per_problem; ++trial) {
        o.seed = 1 + pi * 1000003ull + uint64_t(trial);
        const Trial t = simulate(strategy, l, o);
        ++a.trials;
        if (t.evals_to_5pct) {
          ++a.successes;
          a.evals.push_back(double(t.evals_to_5pct));
          a.fractions.push_back(double(t.evals_to_5pct) / double(n));
        }
        if (std::isfinite(t.best_ratio)) a.ratios.push_back(t.best_ratio);
      }
    }
    for (const auto& [family, a] : by_family)
      out.push_back({strategy, family, mean(a.evals), median(a.evals), mean(a.fractions),
                     double(a.successes) / double(a.trials), mean(a.ratios), a.problems, a.trials});
  }
  return out;
}

}  // namespace convtune
