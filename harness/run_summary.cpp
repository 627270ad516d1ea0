#include "harness/run_summary.h"

#include <string>
#include <utility>
#include <vector>

#include "harness/error.h"
#include "harness/json_file.h"

namespace convtune {

namespace {

// What a field must be, in words, and the test.
struct FieldKind {
  const char* field;
  const char* allowed;
  bool (*fits)(const json&);
};

bool is_object(const json& j) { return j.is_object(); }
bool is_object_or_null(const json& j) { return j.is_object() || j.is_null(); }
bool is_array(const json& j) { return j.is_array(); }
bool is_string(const json& j) { return j.is_string(); }
bool is_integer(const json& j) { return j.is_number_integer(); }

const std::vector<FieldKind>& summary_fields() {
  static const std::vector<FieldKind> fields = {
      {"schema", "an integer", is_integer},
      {"spec", "an object (the sweep spec as written)", is_object},
      {"device", "an object (the GPU's name, arch and limits)", is_object},
      {"devices", "a list of {index, uuid}", is_array},
      {"ceilings", "an object or null", is_object_or_null},
      {"measure", "an object", is_object},
      {"shard", "an object {index, count}", is_object},
      {"git_sha", "a string", is_string},
      {"started", "a string (UTC time)", is_string},
      {"argv", "a list of strings", is_array},
  };
  return fields;
}

// "9.0", "12.1": digits, a dot, digits.
bool is_compute_capability(const std::string& text) {
  const size_t dot = text.find('.');
  auto digits = [](const std::string& part) {
    return !part.empty() && part.size() <= 3 && part.find_first_not_of("0123456789") == std::string::npos;
  };
  return dot != std::string::npos && digits(text.substr(0, dot)) && digits(text.substr(dot + 1));
}

// A value short enough for one line.
std::string shown(const json& v) {
  std::string text = v.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

}  // namespace

void check_run_summary(const json& summary, const std::filesystem::path& file) {
  if (!summary.is_object())
    throw InputError(file.string() + ": " + shown(summary) + " is not a run summary; allowed: a JSON object");
  for (const FieldKind& f : summary_fields())
    if (summary.contains(f.field) && !f.fits(summary[f.field]))
      throw InputError(file.string() + ": " + f.field + " is " + shown(summary[f.field]) + "; allowed: " + f.allowed);
  const json shard = summary.value("shard", json::object());
  for (const char* key : {"index", "count"})
    if (shard.contains(key) && !shard[key].is_number_integer())
      throw InputError(file.string() + ": shard." + key + " is " + shown(shard[key]) + "; allowed: an integer");
  if (summary.contains("schema") && summary["schema"] != 1)
    throw InputError(file.string() + ": schema is " + shown(summary["schema"]) + "; allowed: 1 (what this convtune "
                     "reads and writes)");
  if (summary.contains("strategy_seed") && !summary["strategy_seed"].is_number_integer())
    throw InputError(file.string() + ": strategy_seed is " + shown(summary["strategy_seed"]) + "; allowed: an integer");
  const json device = summary.value("device", json::object());
  for (const char* key : {"name", "arch", "compute_capability"})
    if (device.contains(key) && !device[key].is_string())
      throw InputError(file.string() + ": device." + key + " is " + shown(device[key]) + "; allowed: a string");
  if (device.contains("compute_capability") && !is_compute_capability(device["compute_capability"].get<std::string>()))
    throw InputError(file.string() + ": device.compute_capability is " + shown(device["compute_capability"]) +
                     "; allowed: major.minor, e.g. \"9.0\"");
}

json read_run_summary(const std::filesystem::path& folder) {
  const auto file = folder / "summary.json";
  json summary = read_json(file);
  check_run_summary(summary, file);
  return summary;
}

}  // namespace convtune
