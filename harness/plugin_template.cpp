#include "harness/plugin_template.h"

#include <nlohmann/json.hpp>

#include "harness/error.h"
#include "harness/family.h"
#include "harness/jit.h"
#include "harness/json_file.h"
#include "harness/plugin_manifest.h"
#include "harness/variant.h"

namespace convtune {
namespace fs = std::filesystem;

namespace {
std::string template_manifest(const std::string& family) { return family + "_plugin.json"; }
std::string template_kernel(const std::string& family) { return family + "_plugin.cuh"; }
}  // namespace

std::vector<std::string> plugin_template_families() {
  std::vector<std::string> out;
  for (const Family* f : FamilyRegistry::instance().all())
    if (embedded_sources().count(template_manifest(f->name())) && embedded_sources().count(template_kernel(f->name())))
      out.push_back(f->name());
  return out;
}

void write_plugin_template(const std::string& family, const std::string& name, const fs::path& dir) {
  std::string allowed;
  for (const auto& f : plugin_template_families()) allowed += (allowed.empty() ? "" : ", ") + f;
  if (!embedded_sources().count(template_manifest(family)))
    throw InputError("new-variant: family '" + family + "' has no template; allowed: " + allowed);
  nlohmann::json manifest = nlohmann::json::parse(embedded_source(template_manifest(family)));
  manifest["name"] = name;
  const std::string kernel = embedded_source(template_kernel(family));
  // Validated as a plug-in before anything is written: a bad name fails here, naming the field.
  parse_plugin_manifest(manifest, {{"kernel.cuh", kernel}}, "new-variant <name>");
  if (Registry::instance().find(family + "." + name))
    throw InputError("new-variant <name>: '" + name + "': " + family + "." + name + " is a variant already; allowed: another name");
  std::error_code ec;
  for (const char* file : {kPluginManifestName, "kernel.cuh"})
    if (fs::exists(dir / file, ec))
      throw InputError("new-variant -o: " + dir.string() + " holds a " + file + " already; allowed: a new folder, or one without plugin.json and kernel.cuh");
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw InputError("new-variant -o: " + dir.string() + " is a file; allowed: a new or empty folder");
  fs::create_directories(dir, ec);
  if (ec) throw InputError("new-variant -o: cannot create " + dir.string() + ": " + ec.message());
  write_text_atomically(dir / "kernel.cuh", kernel);
  write_text_atomically(dir / kPluginManifestName, manifest.dump(2) + "\n");
}

}  // namespace convtune
