// Merging sweeps: the run folders of n shard jobs (harness/shard.h) joined into one run.
#pragma once
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

// Joins shard run folders into `out`: refuses shards of different schema, spec, GPU model or shard
// count, or the same shard twice (InputError naming the field); reports duplicate records and the
// plan's candidates no shard recorded. Returns the merged summary.
json merge_runs(const std::vector<std::filesystem::path>& runs, const std::filesystem::path& out,
                const std::vector<std::string>& argv, std::ostream& log);

}  // namespace convtune
