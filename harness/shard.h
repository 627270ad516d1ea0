// Sharding sweeps: n independent jobs (one GPU each, on any machines) cover a spec's work exactly once;
// harness/merge.h joins their run folders into one run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;
struct SweepPlan;

struct Shard {
  int index = 0, count = 1;
  bool active() const { return count > 1; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
  json to_json() const;
  // A summary's "shard" (absent or null: unsharded); InputError naming `where` unless 0 <= index < count.
  static Shard from_json(const json& j, const std::string& where);
  // "i/n" with 0 <= i < n <= 100000; throws InputError naming `where` and the allowed form.
  static Shard parse(const std::string& text, const std::string& where);
};

// FNV-1a of the bytes: the same on every machine and compiler (std::hash is not).
uint64_t stable_hash(const std::string& text);

// What a shard owns: each (problem, candidate) for exhaustive search; whole problems for the search
// strategies, which adapt to what they measured of that problem.
bool shard_by_problem(const std::string& strategy);
std::string shard_key(const std::string& problem_key, const std::string& candidate, bool by_problem);
bool owns(const Shard& shard, const std::string& key);

// The plan's candidates that `shard` owns (skipped ones too: each is recorded exactly once).
SweepPlan shard_plan(const SweepPlan& plan, const Shard& shard, bool by_problem);

}  // namespace convtune
