// JSON and text files that readers may see at any moment: written whole or not at all.
#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

// Written to <path>.tmp, then renamed: a reader sees the old file or the new one, never half of one.
void write_text_atomically(const std::filesystem::path& path, const std::string& text);
void write_json_atomically(const std::filesystem::path& path, const json& j);
// Throws InputError naming the file when it cannot be read or is not JSON.
json read_json(const std::filesystem::path& path);

}  // namespace convtune
