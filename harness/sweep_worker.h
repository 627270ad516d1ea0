// The worker's side of a sweep, on the one GPU it sees: it prepares the run folder, or claims work units
// from it and measures them (the search strategy proposing a whole problem's candidates), appending one
// record per candidate. The supervisor (harness/sweep.h) starts one per GPU and restarts it after a crash.
#pragma once
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "harness/device.h"
#include "harness/spec.h"
#include "harness/sweep_options.h"
#include "harness/sweep_plan.h"

namespace convtune {

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

// A run's first step, in one worker: summary.json (on a first run, with the ceilings measured here) and
// every kernel of the plan compiled into the shared disk cache, so that no GPU's worker compiles one.
void prepare_folder(const SweepSpec& spec, const std::filesystem::path& folder, const SweepOptions& options,
                    const DeviceInfo& dev, const std::vector<std::string>& argv, std::ostream& log);

// A worker's main part: the units of the plan, claimed from the folder, searched and recorded. Returns
// the process exit code (see kWorkerExit*).
int measure_folder(const SweepSpec& spec, const std::filesystem::path& folder, const SweepOptions& options,
                   const DeviceInfo& dev, std::ostream& log);

// The worker process, on the only GPU it sees. With options.worker_prepare it prepares the folder and
// exits; otherwise it finishes the units its GPU holds, then claims and searches units until none is
// left, replaying candidates that already have a record. Before each candidate it writes
// inflight_path(folder, worker_gpu) (the record skeleton and its start time), so that the supervisor can
// record a crash or a timeout. Returns the process exit code (see kWorkerExit*).
int run_sweep_worker(const SweepSpec& spec, const std::filesystem::path& folder, const SweepOptions& options,
                     const std::vector<std::string>& argv, std::ostream& log);
constexpr int kWorkerExitDone = 0;
constexpr int kWorkerExitContextLost = 3;
constexpr int kWorkerExitInterrupted = 130;

}  // namespace convtune
