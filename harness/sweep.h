// The sweep driver: spec -> plan (problems x candidates that pass can_implement) -> compile all
// kernels in parallel -> run each candidate -> append its record -> summary.
#pragma once
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.h"
#include "harness/spec.h"

namespace convtune {

using json = nlohmann::json;

struct PlannedCandidate {
  const Variant* variant;
  Problem problem;
  Config config;
  Status status;  // skipped points carry their reason
};

struct SweepPlan {
  std::vector<PlannedCandidate> candidates;  // in run order, problem by problem
  size_t runnable() const;
  json to_json() const;  // the plan as printed by --dry-run
};

SweepPlan make_plan(const SweepSpec& spec, const DeviceInfo& dev);

struct SweepOptions {
  std::filesystem::path results_root = "results";
  std::filesystem::path resume;  // an existing run folder to finish, or empty
  std::filesystem::path jit_cache = {};  // empty: JitCache::default_dir()
  int compile_threads = 0;               // 0: one per core
  uint64_t seed = 0;                     // 0: from the clock
  bool quiet = false;
};

struct SweepResult {
  std::filesystem::path folder;
  json counts;
  bool interrupted = false;
  bool context_lost = false;
};

// Runs the sweep on the current GPU. Records are appended and flushed one by one; SIGINT/SIGTERM stop
// it after the current candidate with a valid folder. Progress goes to `log`.
SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options, const std::vector<std::string>& argv,
                      std::ostream& log);

// summary.json of a run folder: schema, argv, git sha, device block, ceilings, spec, counts.
json make_summary(const SweepSpec& spec, const DeviceInfo& dev, const Ceilings& ceilings,
                  const std::vector<std::string>& argv);
void write_json_atomically(const std::filesystem::path& path, const json& j);
json read_json(const std::filesystem::path& path);

}  // namespace convtune
