// The sweep driver: spec -> plan (problems x candidates that pass can_implement) -> compile all
// kernels in parallel -> run each candidate -> append its record -> summary. On one GPU or several of one
// host (--devices): one supervised worker per GPU (harness/sweep_worker.h), work units handed out
// dynamically, one run folder (harness/run_folder.h).
#pragma once
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/spec.h"
#include "harness/sweep_options.h"

namespace convtune {

using json = nlohmann::json;

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

}  // namespace convtune
