// A run folder's files other than the records: summary.json (made on a first run, changed under a lock,
// finalized from the records) and the inflight files that name the candidate each GPU's worker is running.
#pragma once
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.h"
#include "harness/spec.h"
#include "harness/sweep_options.h"

namespace convtune {

using json = nlohmann::json;

// <results_root>/<device slug>/<spec name>[-shard<i>of<n>]-<UTC time>, made. The plan is made first, so
// that bad shapes fail before a folder exists.
std::filesystem::path new_run_folder(const SweepSpec& spec, const SweepOptions& options, const DeviceInfo& dev);

// A first run makes summary.json, with the ceilings measured on this GPU; a resumed one checks the model.
void open_run_folder(const SweepSpec& spec, const std::filesystem::path& folder, const DeviceInfo& dev,
                     const SweepOptions& options, const std::vector<std::string>& argv, std::ostream& log);

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
