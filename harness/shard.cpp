#include "harness/shard.h"

#include "harness/error.h"
#include "harness/records.h"
#include "harness/strategy.h"
#include "harness/sweep_plan.h"

namespace convtune {

json Shard::to_json() const { return {{"index", index}, {"count", count}}; }

// More shards than this would leave most of them empty for any spec we ship.
constexpr int kMaxShards = 100000;

// 0 <= index < count <= kMaxShards, in 64 bits so that no value wraps into range (ownership is hash % count).
static bool valid_shard(int64_t index, int64_t count) { return count >= 1 && count <= kMaxShards && index >= 0 && index < count; }

Shard Shard::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) return {};
  const auto number = [&](const char* name, int64_t absent) {
    if (!j.contains(name)) return absent;
    if (!j[name].is_number_integer()) throw InputError(where + "." + name + ": " + j[name].dump() + " is not an integer");
    return j[name].get<int64_t>();
  };
  const int64_t index = number("index", 0), count = number("count", 1);
  if (!valid_shard(index, count))
    throw InputError(where + ": " + j.dump() + "; allowed: index i and count n with 0 <= i < n <= " +
                     std::to_string(kMaxShards));
  return {int(index), int(count)};
}

Shard Shard::parse(const std::string& text, const std::string& where) {
  const std::string form = where + ": '" + text + "' must be i/n with 0 <= i < n <= " + std::to_string(kMaxShards) +
                           ", e.g. 0/4";
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) throw InputError(form);
  long long index = 0, count = 0;
  try {
    size_t used_i = 0, used_n = 0;
    index = std::stoll(text.substr(0, slash), &used_i);
    count = std::stoll(text.substr(slash + 1), &used_n);
    if (used_i != slash || used_n != text.size() - slash - 1) throw InputError(form);
  } catch (const std::logic_error&) {
    throw InputError(form);
  }
  if (!valid_shard(index, count)) throw InputError(form);
  return {int(index), int(count)};
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
