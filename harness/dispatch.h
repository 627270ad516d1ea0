// Export of a run: a dispatch table (best candidate per measured problem, plus per-family safe
// defaults) as dispatch.json and as a self-contained C++ header, and the lookup rules that both use
// for shapes that were not measured. Format and rules: docs/DISPATCH.md.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/problem.h"

namespace convtune {

using json = nlohmann::json;

constexpr int kDispatchSchema = 1;

// summary: a run's summary.json; records: its records (any statuses). Deterministic: same input,
// same dump. Throws InputError when no record is ok.
json make_dispatch(const json& summary, const std::vector<json>& records);

// A C++17 header with no dependencies beyond the standard library: namespace convtune_dispatch
// with kEntries, kDefaults and select() implementing the same rules as lookup().
std::string make_header(const json& dispatch);
// The same for a fleet table (harness/fleet.h): one namespace per GPU model's table, and
// select(device_name, compute_capability, family, dims, n) that picks the table as pick_table() does.
std::string make_fleet_header(const json& fleet);

// The records in the open T4 autotuning results format (schema_version 1.0.0, as Kernel Tuner writes
// it), for tools that read it: configuration = variant + problem dims + config; times in milliseconds;
// invalidity "correct" for ok records, else timeout / compile / runtime / correctness / constraints.
json make_t4(const json& summary, const std::vector<json>& records);

// A run folder read for export: the folder, its summary and its records (torn lines reported on stderr).
// Throws InputError naming the folder.
struct RunTable {
  std::filesystem::path folder;
  json summary;
  std::vector<json> records;
};
RunTable read_run(const std::filesystem::path& run_folder);
// make_dispatch of a run read with read_run; when nothing is ok, the InputError names its records file.
json run_dispatch(const RunTable& run);

// Reads <run_folder>/summary.json and records.jsonl, writes dispatch.json, convtune_dispatch.h and
// t4.json next to them (each atomically). With repeats (other runs on the same GPU model, such as the
// same spec measured again), the table is chosen from combine_repeats() of the run and its repeats, so
// each choice is fast in all of them, and lists them under "repeats"; t4.json stays the run's own
// records. Torn record lines are reported on stderr. Throws InputError.
void export_run(const std::filesystem::path& run_folder, const std::vector<std::filesystem::path>& repeats = {});
// The table of `run` chosen over it and its repeats (read with read_run), listed under "repeats".
// Throws InputError naming device.name when a repeat is of another GPU model, or is the run itself or
// another repeat again.
json dispatch_over_repeats(const RunTable& run, const std::vector<RunTable>& repeats);
// A field of the "device" block of a run summary or a dispatch table ("" when absent); "name" is the GPU model.
std::string device_field(const json& with_device, const char* key);

// The dispatch choice for a problem: rule "exact", "nearest" (same family, nearest shape among
// compatible entries, else among all of the family) or "default" (the family's safe default).
// entry is an element of "entries", or for "default" {"family","variant","config","candidate"}.
// Throws InputError when the table has nothing for the problem's family.
struct Lookup {
  json entry;
  std::string rule;
};
Lookup lookup(const json& dispatch, const Problem& p);

// What first-use tuning times for a problem (the runtime's tune_unseen): for an exact match or a
// default, the lookup's choice alone; for "nearest", the lookup's choice, then the choice and the first
// kShortlistPerEntry - 1 alternates of each of the kShortlistEntries nearest entries, without repeats.
// Each element: {"variant", "config", "candidate"}.
constexpr size_t kShortlistEntries = 3, kShortlistPerEntry = 4;
std::vector<json> tuning_shortlist(const json& dispatch, const Problem& p);

}  // namespace convtune
