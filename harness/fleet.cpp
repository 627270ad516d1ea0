#include "harness/fleet.h"

#include <map>

#include "harness/error.h"
#include "harness/json_file.h"
#include "harness/perf_model.h"
#include "harness/records.h"

namespace convtune {

namespace fs = std::filesystem;

bool is_fleet(const json& dispatch) { return dispatch.is_object() && dispatch.value("fleet", false); }

json make_fleet(const std::vector<json>& tables) {
  if (tables.empty()) throw InputError("export: no tables for a fleet");
  std::map<std::string, std::string> run_of;  // device.name -> the run its table came from
  for (const json& t : tables) {
    const std::string run = t.value("source", json::object()).value("run", std::string("?"));
    const auto [earlier, fresh] = run_of.emplace(device_field(t, "name"), run);
    if (!fresh)
      throw InputError("export: two runs of " + earlier->first + " (" + earlier->second + " and " + run +
                       ") in device.name; a fleet table takes one run per GPU model");
  }
  return {{"schema", kDispatchSchema},
          {"fleet", true},
          {"rules", {"the exact model (device.name) whose table has the family", "a model of the same architecture (device.compute_capability) whose table has the family",
                     "the family's safe default of the first table"}},
          {"tables", tables}};
}

DeviceLookup lookup_on_device(const DispatchTable& table, const std::string& device_name,
                              const std::string& compute_capability, const Problem& p, const DeviceInfo* dev) {
  const DispatchTable::Pick pick = table.pick(device_name, compute_capability, p.family);
  return {lookup(pick, p, dev), pick.rule, pick.table->view.device, tuning_shortlist(pick, p, dev)};
}

DeviceLookup lookup_on_device(const json& dispatch, const std::string& device_name,
                              const std::string& compute_capability, const Problem& p, const DeviceInfo* dev) {
  const DispatchTable table(dispatch);
  return lookup_on_device(table, device_name, compute_capability, p, dev);
}

void export_fleet(const std::vector<fs::path>& runs, const fs::path& out, const std::vector<fs::path>& repeats,
                  const std::vector<fs::path>& train) {
  // Checked first: the run's own dispatch.json must not become the fleet's, nor a file a folder.
  if (fs::exists(out / "summary.json") || records_file_exists(out / "records.jsonl"))
    throw InputError("export: -o " + out.string() + " holds a run, whose own dispatch.json the fleet table would "
                     "replace; allowed: a folder of the fleet's own (new, or one export wrote)");
  if (fs::exists(out) && !fs::is_directory(out))
    throw InputError("export: -o " + out.string() + " is a file; allowed: a folder (new, or one export wrote)");
  ModelOptions::from_env();  // a bad CONVTUNE_MODEL_OPTIONS is refused by name before a run is read
  std::vector<RunTable> read, repeats_read;
  for (const auto& run : runs) read.push_back(read_run(run));
  attach_training(read, train);
  for (const auto& repeat : repeats) repeats_read.push_back(read_run(repeat));
  std::vector<std::vector<RunTable>> repeats_of(runs.size());
  for (RunTable& repeat : repeats_read) {
    const std::string model = device_field(repeat.summary, "name");
    std::string models;
    size_t i = 0;
    for (; i < runs.size() && device_field(read[i].summary, "name") != model; ++i)
      models += (models.empty() ? "'" : ", '") + device_field(read[i].summary, "name") + "'";
    if (i == runs.size())
      throw InputError("export --repeat " + repeat.folder.string() + ": device.name is '" + model +
                       "'; allowed: the GPU models of the runs, " + models);
    repeats_of[i].push_back(std::move(repeat));
  }
  std::vector<json> tables;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunTable& t = read[i];
    json table = repeats_of[i].empty() ? run_dispatch(t) : dispatch_over_repeats(t, repeats_of[i]);
    table["source"] = {{"run", runs[i].string()}, {"started", t.summary.value("started", json())}};
    tables.push_back(std::move(table));
  }
  const json fleet = make_fleet(tables);
  const std::string header = make_fleet_header(fleet);  // before any write: a failure leaves -o as it was
  fs::create_directories(out);
  write_text_atomically(out / "dispatch.json", dump_dispatch(fleet));
  write_text_atomically(out / "convtune_dispatch.h", header);
}

}  // namespace convtune
