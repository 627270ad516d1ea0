// Export of a run: a dispatch table (best candidate per measured problem, plus per-family safe
// defaults) as dispatch.json and as a self-contained C++ header, and the lookup rules that both use
// for shapes that were not measured. Format and rules: docs/DISPATCH.md.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.h"
#include "harness/dispatch_table.h"
#include "harness/problem.h"

namespace convtune {

using json = nlohmann::json;

constexpr int kDispatchSchema = 1;

// summary: a run's summary.json; records: its records (any statuses). With XGBoost (perf_model.h), the
// table carries a performance model per family under "model". Deterministic: same input, same dump.
// Throws InputError when no record is ok.
// training: more records for the model alone (other runs on the GPU model: more shapes to learn from).
json make_dispatch(const json& summary, const std::vector<json>& records, bool with_model = true,
                   const std::vector<json>& training = {});

// A C++17 header with no dependencies beyond the standard library: namespace convtune_dispatch with the
// rules (harness/dispatch_rules.h, verbatim), the table's arrays (kEntries, kDefaults, kModels...) and
// select(family, dims, n_dims[, can_run, context]), which is lookup() on the same arrays.
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
  std::vector<json> training;  // records of other runs on its GPU model that train its model too (export --train)
};
RunTable read_run(const std::filesystem::path& run_folder);
// make_dispatch of a run read with read_run; when nothing is ok, the InputError names its records file.
json run_dispatch(const RunTable& run);

// Reads <run_folder>/summary.json and records.jsonl, writes dispatch.json, convtune_dispatch.h and
// t4.json next to them (each atomically). With repeats (other runs on the same GPU model, such as the
// same spec measured again), the table is chosen from combine_repeats() of the run and its repeats, so
// each choice is fast in all of them, and lists them under "repeats"; t4.json stays the run's own
// records. Torn record lines are reported on stderr. Throws InputError.
// With train runs (of the run's GPU model), the model is fitted on their records too. Everything is made
// before anything is written.
void export_run(const std::filesystem::path& run_folder, const std::vector<std::filesystem::path>& repeats = {},
                const std::vector<std::filesystem::path>& train = {});
// dispatch.json's text: indented, but each table's "model" block on one line (its trees are thousands of
// numbers: one a line would make the file several times larger).
std::string dump_dispatch(const json& dispatch);

// Reads each train run and adds its records to the training of the run of its GPU model (device.name).
// Throws InputError naming the run when no run is of its model.
void attach_training(std::vector<RunTable>& runs, const std::vector<std::filesystem::path>& train);
// The table of `run` chosen over it and its repeats (read with read_run), listed under "repeats".
// Throws InputError naming device.name when a repeat is of another GPU model, or is the run itself or
// another repeat again.
json dispatch_over_repeats(const RunTable& run, const std::vector<RunTable>& repeats);
// A field of the "device" block of a run summary or a dispatch table ("" when absent); "name" is the GPU model.
std::string device_field(const json& with_device, const char* key);

// The dispatch choice for a problem, by the rules of harness/dispatch_rules.h: "exact" (an entry of this
// shape), "model" (the table's performance model's fastest prediction among its candidates for the family),
// "nearest" (no model: the nearest entry of the family) or "default" (the family's safe default). With a
// device, only candidates that can run the shape there count (registered here, can_implement); without
// one, every candidate is taken to run, as the exported header does without a CanRun.
// entry: an element of "entries", or for "model" and "default" {"family","variant","config","candidate"}.
// For "model": predicted_ratio, the model's time over the shape's best (a relative model) or over its floor;
// predicted_ms, a floor model's time (the problem's floor under the table's ceilings times the ratio), else 0.
// Throws InputError when the table has nothing that can run a problem of the family.
struct Lookup {
  json entry;
  std::string rule;
  double predicted_ratio = 0, predicted_ms = 0;
};
Lookup lookup(const DispatchTable::Pick& table, const Problem& p, const DeviceInfo* dev = nullptr);
Lookup lookup(const json& dispatch, const Problem& p, const DeviceInfo* dev = nullptr);

// What first-use tuning times for a problem (the runtime's tune_unseen): for an exact match or a default,
// the lookup's choice alone; else the lookup's choice, the model's next best (top `model_top` in all, where
// the table has a model), the model's best of each other variant and every library algorithm, then the choice and the first kShortlistPerEntry - 1 alternates of each of the
// kShortlistEntries nearest entries, without repeats and without what cannot run on `dev`.
// Each element: {"variant", "config", "candidate"}.
constexpr size_t kShortlistEntries = 3, kShortlistPerEntry = 4, kShortlistModel = 8, kShortlistModelMax = 32;
// model_top by default: CONVTUNE_TUNE_TOP (1 to kShortlistModelMax) where set, else kShortlistModel. More costs
// first-use tuning a candidate's preparation and runs each; InputError naming the variable for any other value.
size_t shortlist_model_top();
std::vector<json> tuning_shortlist(const DispatchTable::Pick& table, const Problem& p, const DeviceInfo* dev = nullptr,
                                   size_t model_top = shortlist_model_top());
std::vector<json> tuning_shortlist(const json& dispatch, const Problem& p, const DeviceInfo* dev = nullptr,
                                   size_t model_top = shortlist_model_top());

// What the runtime library prepares for a problem, in order, until one prepares: the lookup's choice; for
// rule "model", the model's next kChainModel - 1 candidates that can run (a library may still refuse a shape
// when asked); the table's default for the family; the family's simplest non-library variant (lowest
// complexity(), then name; config null: its first config that can run). Each {"variant", "config",
// "candidate" (absent for the simplest), "rule"}, without repeats.
constexpr int kChainModel = 3;
// The chain's last element: {"variant": the family's simplest non-library variant, "config": null,
// "rule": "simplest"}; null when the family has none.
json simplest_candidate(const std::string& family);
std::vector<json> fallback_chain(const DispatchTable::Pick& table, const Problem& p, const DeviceInfo* dev,
                                 const Lookup& pick);

// Whether a candidate ({"variant", "config"}) can run problem p on dev: its variant is registered, of p's
// family, and can_implement accepts its config completed with the space's absent values.
bool candidate_can_run(const json& candidate, const Problem& p, const DeviceInfo& dev);
bool candidate_can_run(const Variant* v, const json& config, const Problem& p, const DeviceInfo& dev);

}  // namespace convtune
