// The sweep driver: spec -> plan (problems x candidates that pass can_implement) -> compile all
// kernels in parallel -> run each candidate -> append its record -> summary.
#pragma once
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.h"
#include "harness/shard.h"
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
  bool isolate = true;           // run candidates in a supervised worker process
  std::string spec_path;         // for the worker's command line
  std::filesystem::path jit_cache = {};  // empty: JitCache::default_dir()
  int compile_threads = 0;               // 0: one per core
  uint64_t seed = 0;                     // 0: from the clock
  bool quiet = false;
  bool ceilings = true;  // measure copy bandwidth and FP32 rate (off: no roofline figures, e.g. under a sanitizer)
  Shard shard;           // this job's part of the spec's work (--shard i/n); a resumed run keeps its own
};

struct SweepResult {
  std::filesystem::path folder;
  json counts;
  bool interrupted = false;
  bool context_lost = false;
};

// Runs the sweep on the current GPU. Records are appended and flushed one by one; SIGINT/SIGTERM stop
// it after the current candidate with a valid folder. Progress goes to `log`.
//
// With options.isolate (the default) the candidates run in a worker process (`convtune sweep
// --worker-for <folder>`) that this process supervises: a candidate that crashes the worker or poisons
// its CUDA context is recorded as runtime_error, one that runs past the candidate timeout is killed and
// recorded as timeout, and a fresh worker resumes with the next candidate.
SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options, const std::vector<std::string>& argv,
                      std::ostream& log);

// The worker's side: runs the candidates of `folder` that have no record yet. Before each one it
// writes <folder>/inflight.json (the candidate's record skeleton and its start time), so that the
// supervisor can record a crash or a timeout. Returns the process exit code (see kWorkerExit*).
int run_sweep_worker(const SweepSpec& spec, const std::filesystem::path& folder, const SweepOptions& options,
                     const std::vector<std::string>& argv, std::ostream& log);
constexpr int kWorkerExitDone = 0;
constexpr int kWorkerExitContextLost = 3;
constexpr int kWorkerExitInterrupted = 130;

// After a worker died: if inflight.json names a candidate with no record, append its record with
// `status` and `reason`. Returns whether a record was written.
bool record_inflight(const std::filesystem::path& folder, const std::string& status, const std::string& reason);

// Rewrites summary.json's counts and finish time from the records on disk.
json finalize_summary(const std::filesystem::path& folder, bool interrupted, const std::vector<std::string>& argv);

// summary.json of a run folder: schema, argv, git sha, device block, ceilings, spec, counts.
json make_summary(const SweepSpec& spec, const DeviceInfo& dev, const Ceilings& ceilings,
                  const std::vector<std::string>& argv);
// Written to <path>.tmp, then renamed: a reader sees the old file or the new one, never half of one.
void write_text_atomically(const std::filesystem::path& path, const std::string& text);
void write_json_atomically(const std::filesystem::path& path, const json& j);
json read_json(const std::filesystem::path& path);

}  // namespace convtune
