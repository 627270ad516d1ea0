// The sweep driver: spec -> plan (problems x candidates that pass can_implement) -> compile all
// kernels in parallel -> run each candidate -> append its record -> summary. On one GPU or several of one
// host (--devices): one supervised worker per GPU, work units handed out dynamically, one run folder.
#pragma once
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.h"
#include "harness/json_file.h"
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

// What a worker claims and searches at once. A whole problem for the search strategies (they adapt to what
// they measured of it, and compare its candidates on one GPU); one candidate for exhaustive search. Every
// skipped candidate is in a unit, so that each is recorded exactly once.
struct WorkUnit {
  size_t problem_index;  // 1-based, in plan order: seeds the problem's strategy
  std::vector<const PlannedCandidate*> candidates;
  bool whole_problem;
  int eval_index = 0;  // one runnable candidate: its place in the problem's exhaustive order (1-based)
};
// Units in plan order. Exhaustive candidates past budget.max_evaluations_per_problem (in each problem's
// order) get no unit, as exhaustive search would not measure them; their skipped ones still do.
std::vector<WorkUnit> make_work_units(const SweepPlan& plan, const std::string& strategy, size_t max_evaluations);

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
  std::vector<int> devices;  // GPU indices (--devices, parsed by parse_device_list); empty: GPU 0
  // The worker's side, from the supervisor: the index its records are tagged with (--worker-gpu), and
  // whether it only prepares the folder: summary, ceilings, every kernel compiled (--worker-prepare).
  int worker_gpu = 0;
  bool worker_prepare = false;
};

struct SweepResult {
  std::filesystem::path folder;
  json counts;
  bool interrupted = false;
  bool context_lost = false;
};

// Runs the sweep on options.devices (GPU 0 by default) into one run folder. Records are appended and
// synced one by one; SIGINT/SIGTERM stop it after the current candidates with a valid folder. Progress
// goes to `log`, each line naming its GPU. Refuses (InputError, one line) devices that differ in model,
// compute capability, SMs, maximum clocks or driver.
//
// With options.isolate (the default) the work runs in worker processes (`convtune sweep --worker-for
// <folder> --worker-gpu <i>`, each pinned to its GPU with CUDA_VISIBLE_DEVICES) that this process
// supervises, one thread per GPU. First one worker prepares the folder (summary, ceilings measured on the
// first GPU, every kernel compiled into the shared disk cache); then each GPU's worker claims work units
// (WorkClaims) until none is left. A candidate that crashes its worker or poisons its CUDA context is
// recorded as runtime_error, one that runs past the candidate timeout is killed and recorded as timeout,
// and a fresh worker for that GPU goes on; the other GPUs never notice. A GPU whose workers keep dying
// before any candidate is given up: its units go back to the others and the sweep ends with an error.
SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options, const std::vector<std::string>& argv,
                      std::ostream& log);

// --split-by-model: options.devices grouped by model (group_by_model), each group a run_sweep of its own
// into its own folder, all at once. A resumed run is one folder: resume each with run_sweep.
std::vector<SweepResult> run_sweep_split_by_model(const SweepSpec& spec, const SweepOptions& options,
                                                  const std::vector<std::string>& argv, std::ostream& log);

// The worker's side, on the only GPU it sees. With options.worker_prepare it prepares the folder and
// exits; otherwise it finishes the units its GPU holds, then claims and searches units until none is
// left, replaying candidates that already have a record. Before each candidate it writes
// inflight_path(folder, worker_gpu) (the record skeleton and its start time), so that the supervisor can
// record a crash or a timeout. Returns the process exit code (see kWorkerExit*).
int run_sweep_worker(const SweepSpec& spec, const std::filesystem::path& folder, const SweepOptions& options,
                     const std::vector<std::string>& argv, std::ostream& log);
constexpr int kWorkerExitDone = 0;
constexpr int kWorkerExitContextLost = 3;
constexpr int kWorkerExitInterrupted = 130;

// <folder>/inflight-gpu<i>.json: the candidate GPU i's worker is running; gpu < 0: inflight.json (older runs).
std::filesystem::path inflight_path(const std::filesystem::path& folder, int gpu);

// After a worker died: if its inflight file names a candidate with no record, append its record with
// `status` and `reason`. Returns whether a record was written.
bool record_inflight(const std::filesystem::path& folder, const std::string& status, const std::string& reason,
                     int gpu = -1);

// Rewrites summary.json's counts (also per GPU) and finish time from the records on disk.
json finalize_summary(const std::filesystem::path& folder, bool interrupted, const std::vector<std::string>& argv);

// summary.json of a run folder: schema, argv, git sha, device block, ceilings, spec, counts.
json make_summary(const SweepSpec& spec, const DeviceInfo& dev, const Ceilings& ceilings,
                  const std::vector<std::string>& argv);
// Changes summary.json under an flock on the folder, so that workers finishing at once keep each other's totals.
void update_summary(const std::filesystem::path& folder, const std::function<void(json&)>& change);

}  // namespace convtune
