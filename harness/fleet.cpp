#include "harness/fleet.h"

#include "harness/error.h"
#include "harness/sweep.h"

namespace convtune {

namespace fs = std::filesystem;

bool is_fleet(const json& dispatch) { return dispatch.is_object() && dispatch.value("fleet", false); }

static std::string device_field(const json& table, const char* key) {
  const json dev = table.value("device", json::object());
  return dev.is_object() ? dev.value(key, std::string()) : std::string();
}

json make_fleet(const std::vector<json>& tables) {
  if (tables.empty()) throw InputError("export: no tables for a fleet");
  for (size_t i = 0; i < tables.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (device_field(tables[i], "name") == device_field(tables[j], "name"))
        throw InputError("export: two runs of " + device_field(tables[i], "name") + " (" +
                         tables[j].value("source", json::object()).value("run", std::string("?")) + " and " +
                         tables[i].value("source", json::object()).value("run", std::string("?")) +
                         ") in device.name; a fleet table takes one run per GPU model");
  return {{"schema", kDispatchSchema},
          {"fleet", true},
          {"rules", {"the exact model (device.name)", "a model of the same architecture (device.compute_capability)",
                     "the family's safe default of the first table"}},
          {"tables", tables}};
}

TablePick pick_table(const json& fleet, const std::string& device_name, const std::string& compute_capability) {
  const json& tables = fleet.at("tables");
  for (const auto& t : tables)
    if (device_field(t, "name") == device_name) return {t, "exact model"};
  for (const auto& t : tables)
    if (!compute_capability.empty() && device_field(t, "compute_capability") == compute_capability)
      return {t, "same architecture"};
  json defaults_only = tables.at(0);
  defaults_only["entries"] = json::array();
  return {defaults_only, "default"};
}

DeviceLookup lookup_on_device(const json& dispatch, const std::string& device_name,
                              const std::string& compute_capability, const Problem& p) {
  if (!is_fleet(dispatch))
    return {lookup(dispatch, p), "single table", device_field(dispatch, "name"), tuning_shortlist(dispatch, p)};
  const TablePick pick = pick_table(dispatch, device_name, compute_capability);
  return {lookup(pick.table, p), pick.rule, device_field(pick.table, "name"), tuning_shortlist(pick.table, p)};
}

void export_fleet(const std::vector<fs::path>& runs, const fs::path& out, const std::vector<fs::path>& repeats) {
  std::vector<RunTable> read;
  for (const auto& run : runs) read.push_back(read_run_table(run));
  std::vector<std::vector<fs::path>> repeats_of(runs.size());
  for (const auto& repeat : repeats) {
    if (!fs::is_directory(repeat)) throw InputError("export --repeat " + repeat.string() + ": not a run folder (no such directory)");
    const std::string model = device_name(read_json(repeat / "summary.json"));
    std::string models;
    size_t i = 0;
    for (; i < runs.size() && device_name(read[i].summary) != model; ++i)
      models += (models.empty() ? "'" : ", '") + device_name(read[i].summary) + "'";
    if (i == runs.size())
      throw InputError("export --repeat " + repeat.string() + ": device.name is '" + model +
                       "'; allowed: the GPU models of the runs, " + models);
    repeats_of[i].push_back(repeat);
  }
  std::vector<json> tables;
  for (size_t i = 0; i < runs.size(); ++i) {
    RunTable& t = read[i];
    if (!repeats_of[i].empty()) t.dispatch = dispatch_over_repeats(runs[i], t, repeats_of[i]);
    t.dispatch["source"] = {{"run", runs[i].string()}, {"started", t.summary.value("started", json())}};
    tables.push_back(std::move(t.dispatch));
  }
  const json fleet = make_fleet(tables);
  fs::create_directories(out);
  write_json_atomically(out / "dispatch.json", fleet);
  write_text_atomically(out / "convtune_dispatch.h", make_fleet_header(fleet));
}

}  // namespace convtune
