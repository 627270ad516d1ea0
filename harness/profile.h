// `convtune profile`: re-runs chosen candidates of a run under Nsight Compute and appends one profile
// record per candidate to <run>/profiles.jsonl (records.jsonl is never rewritten). The candidates run
// in a child process (`convtune profile --worker`), each verified, then timed once inside its NVTX
// range "timed", the only range ncu collects counters in; kernels are matched back to their candidate
// by the enclosing range "<candidate> @ <problem_key>".
#pragma once
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

struct ProfileTarget {
  json record;      // the candidate's timing record
  std::string why;  // "best", "top 2", "best_library", "asked"
};

struct ProfileSelection {
  int top = 1;            // the N fastest candidates of each problem
  bool libraries = true;  // and each problem's fastest library candidate
  std::string candidate;  // only candidates whose name contains this
  std::string problem;    // only problems whose key contains this
};

// The candidates to profile, a problem at a time, from a run's records.
std::vector<ProfileTarget> choose_profile_targets(const std::vector<json>& records, const ProfileSelection& sel);

// Nsight Compute's command line: on PATH, under $CUDA_HOME or /usr/local/cuda, or the newest
// /opt/nvidia/nsight-compute/<version>/ncu. Empty when there is none.
std::string find_ncu();
// `given` if it is an executable, else find_ncu(); throws InputError naming where it looked.
std::string require_ncu(const std::string& given);

struct ProfileOptions {
  std::filesystem::path folder;  // the run folder
  std::string ncu;               // from find_ncu() when empty
  int device = 0;
  bool quiet = false;
  double timeout_s = 900;  // per ncu session (one problem's candidates); past it, ncu is killed
};

// Profiles the targets and appends their profile records. Throws InputError (one line naming the cause)
// when ncu is missing or may not read the counters; a candidate that fails under the profiler gets a
// profile record with status "failed" and its reason. Returns the number of ok profiles.
int profile_targets(const std::vector<ProfileTarget>& targets, const ProfileOptions& options, std::ostream& log);

// The child ncu runs: each target of the file (a JSON array of {variant, problem, config}) verified and
// timed once. Prints one line per target.
int run_profile_worker(const std::filesystem::path& targets_file, int device);

// The profile records of a run folder, keyed by problem_key + " " + candidate (later lines win).
std::map<std::string, json> read_profiles(const std::filesystem::path& folder);
// The key read_profiles uses for a timing or profile record.
std::string profile_key(const json& record);

}  // namespace convtune
