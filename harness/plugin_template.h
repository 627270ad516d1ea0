// `convtune new-variant <family> <name> -o <dir>`: a minimal working plug-in of a family, from the template its
// folder holds (variants/<family>/plugin_template/<family>_plugin.{json,cuh}, embedded at build time).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace convtune {

// The families that have a template.
std::vector<std::string> plugin_template_families();
// Writes <dir>/plugin.json and <dir>/kernel.cuh; the variant is <family>.<name>. Throws InputError (one line,
// nothing written) for a family without a template, a bad name, or a folder that holds a plug-in already.
void write_plugin_template(const std::string& family, const std::string& name, const std::filesystem::path& dir);

}  // namespace convtune
