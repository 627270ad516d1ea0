// A run folder's summary.json read for a command that trusts its fields: each field the commands use is
// checked for its kind first, so that a hand-edited summary gives one line naming the file and field
// instead of a JSON type error half-way through writing outputs.
#pragma once
#include <filesystem>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

// <folder>/summary.json; throws InputError naming the file, the field, its value and the allowed kind.
json read_run_summary(const std::filesystem::path& folder);
// The same checks on a summary already read from `file`.
void check_run_summary(const json& summary, const std::filesystem::path& file);

}  // namespace convtune
