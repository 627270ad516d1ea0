#include "harness/merge.h"

#include <algorithm>
#include <map>
#include <set>

#include "harness/error.h"
#include "harness/json_file.h"
#include "harness/plugin.h"
#include "harness/records.h"
#include "harness/run_folder.h"
#include "harness/run_summary.h"
#include "harness/shard.h"
#include "harness/spec.h"
#include "harness/sweep_plan.h"

namespace convtune {

namespace fs = std::filesystem;

namespace {

struct ShardRun {
  fs::path folder;
  json summary;
  Shard shard;
  std::vector<json> records, profiles;  // read before the merge writes anything: a bad line refuses it whole
};

ShardRun open_shard(const fs::path& folder) {
  if (!fs::exists(folder / "summary.json") || !records_file_exists(folder / "records.jsonl"))
    throw InputError("merge: " + folder.string() +
                     " is not a run folder (needs summary.json and records.jsonl or records.jsonl.gz)");
  ShardRun r{folder, read_run_summary(folder), {}, {}, {}};
  r.shard = Shard::from_json(r.summary.value("shard", json()), "merge: " + (folder / "summary.json").string() + ": shard");
  r.records = read_records(folder / "records.jsonl").records;
  if (records_file_exists(folder / "profiles.jsonl")) r.profiles = read_records(folder / "profiles.jsonl").records;
  return r;
}

// Shards must agree on what makes their records comparable; the message names the field that differs.
void check_compatible(const ShardRun& a, const ShardRun& b) {
  auto field = [](const ShardRun& r, const std::string& what) -> json {
    if (what == "device.name") return r.summary.value("device", json::object()).value("name", "");
    if (what == "device.driver_version") return r.summary.value("device", json::object()).value("driver_version", 0);
    if (what == "shard.count") return r.shard.count;
    return r.summary.value(what, json());
  };
  for (const std::string what : {"schema", "spec", "device.name", "device.driver_version", "shard.count"})
    if (field(a, what) != field(b, what))
      throw InputError("merge: " + b.folder.string() + " differs from " + a.folder.string() + " in " + what +
                       (what == "spec" ? "" : " (" + field(b, what).dump() + " vs " + field(a, what).dump() + ")") +
                       "; only shards of one spec, GPU model, driver and shard count merge");
  if (a.shard.index == b.shard.index)
    throw InputError("merge: " + a.folder.string() + " and " + b.folder.string() + " are both shard " +
                     a.shard.text() + "; give each shard once");
}

// The plan's work as the shards' device would have made it: (problem, candidate) keys for exhaustive
// search, problem keys for the strategies (they measure a chosen subset of each problem).
std::set<std::string> planned_keys(const json& summary, bool& by_problem) {
  if (!summary.contains("spec") || !summary.contains("device"))
    throw InputError("merge: the shards' summary.json has no spec or device block (made by an older convtune?)");
  load_plugin_bundles(summary, "merge: summary.json");  // the run's plug-ins as they were measured
  json spec_source = summary["spec"];
  spec_source.erase("plugins");  // folders relative to a spec file that need not be beside this run
  const SweepSpec spec = SweepSpec::parse(spec_source);
  by_problem = shard_by_problem(spec.strategy);
  std::set<std::string> keys;
  for (const auto& c : make_plan(spec, DeviceInfo::from_json(summary["device"])).candidates)
    keys.insert(shard_key(c.problem.key(), candidate_name(c.variant->name(), c.config), by_problem));
  return keys;
}

void append_lines(const std::vector<json>& from, RecordWriter& to, std::set<std::string>& seen,
                  std::vector<std::string>& dups) {
  for (const auto& r : from) {
    const std::string key = record_key(r);
    if (!seen.insert(key).second) {
      dups.push_back(key);
      continue;
    }
    to.append(r);
  }
}

// Every profile line of every shard (profiles.jsonl's readers take the last line of a candidate), and the
// Nsight Compute reports they point to, under the same relative paths.
void merge_profiles(const std::vector<ShardRun>& shards, const fs::path& out) {
  bool any = false;
  for (const auto& s : shards) any = any || records_file_exists(s.folder / "profiles.jsonl");
  if (!any) return;
  RecordWriter profiles(out / "profiles.jsonl");
  for (const auto& s : shards) {
    if (!records_file_exists(s.folder / "profiles.jsonl")) continue;
    for (const auto& p : s.profiles) profiles.append(p);
    if (fs::is_directory(s.folder / "profiles"))
      fs::copy(s.folder / "profiles", out / "profiles", fs::copy_options::recursive | fs::copy_options::skip_existing);
  }
}

}  // namespace

json merge_runs(const std::vector<fs::path>& runs, const fs::path& out, const std::vector<std::string>& argv,
                std::ostream& log) {
  if (runs.empty()) throw InputError("merge: give the run folders of the shards");
  if (records_file_exists(out / "records.jsonl")) throw InputError("merge: -o " + out.string() + " already holds a run");
  if (fs::exists(out) && !fs::is_directory(out))
    throw InputError("merge: -o " + out.string() + " is a file; allowed: a folder (new, or empty)");
  std::vector<ShardRun> shards;
  for (const auto& f : runs) shards.push_back(open_shard(f));
  for (size_t i = 1; i < shards.size(); ++i)
    for (size_t j = 0; j < i; ++j) check_compatible(shards[j], shards[i]);
  // Everything that can refuse runs before anything is written: a failed merge leaves no folder behind.
  json summary = shards.front().summary, provenance = json::array();
  bool by_problem = false;
  const std::set<std::string> planned = planned_keys(summary, by_problem);
  fs::create_directories(out);
  std::set<std::string> seen;
  std::vector<std::string> duplicates;
  {
    RecordWriter records(out / "records.jsonl");
    for (const auto& s : shards) append_lines(s.records, records, seen, duplicates);
  }
  merge_profiles(shards, out);
  std::set<int> indices;
  for (const auto& s : shards) {
    indices.insert(s.shard.index);
    provenance.push_back({{"folder", s.folder.string()}, {"shard", s.shard.to_json()}, {"git_sha", s.summary.value("git_sha", "")},
                          {"started", s.summary.value("started", json())}, {"finished", s.summary.value("finished", json())},
                          {"counts", s.summary.value("counts", json())}, {"argv", s.summary.value("argv", json())}});
  }
  std::set<std::string> covered;
  for (const auto& key : seen) covered.insert(by_problem ? key.substr(0, key.find(' ')) : key);
  std::vector<std::string> gaps;
  for (const auto& key : planned)
    if (!covered.count(key)) gaps.push_back(key);
  std::vector<int> missing;
  for (int i = 0; i < shards.front().shard.count; ++i)
    if (!indices.count(i)) missing.push_back(i);
  summary.erase("shard");
  summary["merged_from"] = provenance;
  summary["merge"] = {{"duplicates", duplicates.size()}, {"gaps", gaps.size()}, {"missing_shards", missing},
                      {"gap_examples", json(std::vector<std::string>(gaps.begin(), gaps.begin() + long(std::min<size_t>(gaps.size(), 10))))}};
  write_json_atomically(out / "summary.json", summary);
  const bool interrupted = std::any_of(shards.begin(), shards.end(),
                                      [](const ShardRun& s) { return s.summary.value("interrupted", false); });
  const json final_summary = finalize_summary(out, interrupted, argv);
  log << "merged " << shards.size() << " shard(s) of " << shards.front().shard.count << " into " << out.string() << ": "
      << seen.size() << " records, " << duplicates.size() << " duplicates dropped, " << gaps.size()
      << " planned candidates not recorded";
  if (!missing.empty()) {
    log << ", missing shards:";
    for (int i : missing) log << " " << i << "/" << shards.front().shard.count;
  }
  log << "\n";
  for (size_t i = 0; i < std::min<size_t>(duplicates.size(), 5); ++i) log << "  duplicate: " << duplicates[i] << "\n";
  for (size_t i = 0; i < std::min<size_t>(gaps.size(), 5); ++i) log << "  gap: " << gaps[i] << "\n";
  return final_summary;
}

}  // namespace convtune
