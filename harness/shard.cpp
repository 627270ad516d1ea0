#include "harness/shard.h"

#include "harness/error.h"
#include "harness/records.h"
#include "harness/strategy.h"
#include "harness/sweep_plan.h"

namespace convtune {

json Shard::to_json() const { return {{"index", index}, {"count", count}}; }

// More shards than this would leave most of them empty for any spec we ship.
constexpr int kMaxShards = 100000;

Shard Shard::from_json(const json& j, const std::string& where) {
  Shard s;
  if (!j.is_object()) return s;
  const auto number = [&](const char* name, int absent) {
    if (!j.contains(name)) return absent;
    if (!j[name].is_number_integer()) throw InputError(where + "." + name + ": " + j[name].dump() + " is not an integer");
    const int64_t v = j[name].get<int64_t>();  // checked wide: a value past INT_MAX must not wrap into range
    return v < 0 || v > kMaxShards ? -1 : int(v);
  };
  s.index = number("index", 0);
  s.count = number("count", 1);
  if (s.count < 1 || s.count > kMaxShards || s.index < 0 || s.index >= s.count)  // hash % count: never 0
    throw InputError(where + ": " + j.dump() + "; allowed: index i and count n with 0 <= i < n <= " +
                     std::to_string(kMaxShards));
  return s;
}

Shard Shard::parse(const std::string& text, const std::string& where) {
  const std::string form = where + ": '" + text + "' must be i/n with 0 <= i < n <= " + std::to_string(kMaxShards) +
                           ", e.g. 0/4";
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) throw InputError(form);
  Shard s;
  try {
    size_t used_i = 0, used_n = 0;
    s.index = std::stoi(text.substr(0, slash), &used_i);
    s.count = std::stoi(text.substr(slash + 1), &used_n);
    if (used_i != slash || used_n != text.size() - slash - 1) throw InputError(form);
  } catch (const std::logic_error&) {
    throw InputError(form);
  }
  if (s.count < 1 || s.count > kMaxShards || s.index < 0 || s.index >= s.count) throw InputError(form);
  return s;
}

uint64_t stable_hash(const std::string& text) {
  uint64_t h = 14695981039346656037ull;  // the FNV-1a offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

bool shard_by_problem(const std::string& strategy) { return !strategy_traits(strategy).measures_every_candidate; }

std::string shard_key(const std::string& problem_key, const std::string& candidate, bool by_problem) {
  return by_problem ? problem_key : problem_key + " " + candidate;
}

bool owns(const Shard& shard, const std::string& key) {
  return !shard.active() || stable_hash(key) % uint64_t(shard.count) == uint64_t(shard.index);
}

SweepPlan shard_plan(const SweepPlan& plan, const Shard& shard, bool by_problem) {
  SweepPlan out;
  for (const auto& c : plan.candidates)
    if (owns(shard, shard_key(c.problem.key(), candidate_name(c.variant->name(), c.config), by_problem)))
      out.candidates.push_back(c);
  return out;
}

}  // namespace convtune
