// What a sweep is asked to do beyond its spec: where its folder goes, on which GPUs, how it isolates
// candidates; the supervisor passes the worker's share of it on the worker's command line.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/shard.h"

namespace convtune {

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

}  // namespace convtune
