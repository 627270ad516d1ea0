// A dispatch table for a fleet of GPU models: the tables of runs on different models in one
// dispatch.json and one header, and the rule that picks the table of the GPU a program runs on: the
// exact model, else a model of the same architecture (compute capability), else no measured table
// applies and the family's safe default is used. Format: docs/DISPATCH.md.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/dispatch.h"

namespace convtune {

using json = nlohmann::json;

bool is_fleet(const json& dispatch);

// tables: make_dispatch() outputs, one per GPU model (InputError naming device.name when a model comes
// twice). Each keeps its device block and provenance.
json make_fleet(const std::vector<json>& tables);

// lookup() and tuning_shortlist() on the table the device gets (DispatchTable::pick: the exact model, the
// same architecture, else the first table's defaults alone); a single-device table is used as it is
// ("single table"). With dev, only candidates that can run there (lookup()).
struct DeviceLookup {
  Lookup lookup;
  std::string table_rule, table_device;
  std::vector<json> shortlist;
};
DeviceLookup lookup_on_device(const DispatchTable& table, const std::string& device_name,
                              const std::string& compute_capability, const Problem& p, const DeviceInfo* dev = nullptr);
DeviceLookup lookup_on_device(const json& dispatch, const std::string& device_name,
                              const std::string& compute_capability, const Problem& p, const DeviceInfo* dev = nullptr);

// `convtune export <run> <run>... -o <folder>`: dispatch.json (a fleet) and convtune_dispatch.h there.
// Each repeat joins the run of its GPU model (device.name), whose table is then chosen over both
// (dispatch_over_repeats); a repeat of a model no run has is an InputError naming device.name.
// Train runs join the run of their GPU model as training for its model (attach_training).
void export_fleet(const std::vector<std::filesystem::path>& runs, const std::filesystem::path& out,
                  const std::vector<std::filesystem::path>& repeats = {},
                  const std::vector<std::filesystem::path>& train = {});

}  // namespace convtune
