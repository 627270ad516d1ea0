// Where plug-ins come from: folders, run folders and dispatch tables (as bundles), CONVTUNE_PLUGINS.
#include <cstdlib>
#include <fstream>
#include <set>

#include "harness/error.h"
#include "harness/jit_runtime_source.h"
#include "harness/json_file.h"
#include "harness/plugin.h"

namespace convtune {
namespace fs = std::filesystem;

namespace {

constexpr const char* kEnvironment = "CONVTUNE_PLUGINS";

std::vector<const PluginVariant*>& loaded() {
  static std::vector<const PluginVariant*> plugins;
  return plugins;
}

// Registers `m` unless the same version is loaded; refuses another version or a built-in's name.
const PluginVariant* register_plugin(std::shared_ptr<const PluginManifest> m) {
  if (const Variant* v = Registry::instance().find(m->variant)) {
    const auto* same = dynamic_cast<const PluginVariant*>(v);
    if (!same) throw InputError(m->manifest_path + ": name: '" + m->variant + "' is a built-in variant; allowed: another name");
    if (same->manifest().source_hash == m->source_hash) return same;
    throw InputError(m->manifest_path + ": name: '" + m->variant + "' is loaded already from " + same->manifest().manifest_path +
                     " with other sources (hash " + same->manifest().source_hash + ", here " + m->source_hash +
                     "); allowed: one version of a plug-in per command");
  }
  auto variant = std::make_unique<PluginVariant>(m);
  std::map<std::string, std::string> headers = m->sources;
  headers.erase(m->main_source);
  add_runtime_source(variant->jit_source(), m->sources.at(m->main_source), headers);
  const PluginVariant* out = variant.get();
  Registry::instance().add(std::move(variant));
  loaded().push_back(out);
  return out;
}

std::vector<const PluginVariant*> register_bundles(const json& holder, const std::string& where) {
  std::vector<const PluginVariant*> out;
  if (!holder.is_object() || !holder.contains("plugins")) return out;
  const json& list = holder["plugins"];
  for (size_t i = 0; i < list.size(); ++i) {
    const json& b = list[i];
    const std::string at = where + ": plugins[" + std::to_string(i) + "]";
    if (!b.is_object() || !b.contains("manifest_json") || !b.contains("sources") || !b["sources"].is_object())
      throw InputError(at + ": not a plug-in bundle; allowed: {manifest_json, sources, provenance}, as convtune writes it");
    const auto sources = b["sources"].get<std::map<std::string, std::string>>();
    auto m = std::const_pointer_cast<PluginManifest>(parse_plugin_manifest(b["manifest_json"], sources, at));
    const json origin = b.value("provenance", json::object());
    if (origin.value("source_hash", "") != m->source_hash)
      throw InputError(at + ": provenance.source_hash: " + origin.value("source_hash", "(none)") +
                       " does not match its manifest and sources (" + m->source_hash + "); the bundle was edited");
    m->folder = origin.value("folder", "");
    m->manifest_path = origin.value("manifest", at);
    out.push_back(register_plugin(m));
  }
  return out;
}

}  // namespace

std::vector<const PluginVariant*> load_plugins(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec) && !fs::exists(fs::path(path) / kPluginManifestName, ec) &&
      fs::exists(fs::path(path) / "summary.json", ec))
    return register_bundles(read_json(fs::path(path) / "summary.json"), path + "/summary.json");
  if (fs::is_regular_file(path, ec) && fs::path(path).filename() != kPluginManifestName) {
    const json j = read_json(path);
    if (j.is_object() && !j.contains("family") && (j.contains("plugins") || j.contains("tables"))) {
      load_plugin_bundles(j, path);
      return loaded();
    }
  }
  return {register_plugin(read_plugin_folder(path))};
}

void load_plugins(const std::vector<std::string>& paths) {
  for (const auto& p : paths) load_plugins(p);
}

void load_plugins_from_environment() {
  const char* value = std::getenv(kEnvironment);
  if (!value) return;
  std::string list = value;
  for (size_t start = 0; start <= list.size();) {
    const size_t end = std::min(list.find(':', start), list.size());
    if (end > start) {
      try {
        load_plugins(list.substr(start, end - start));
      } catch (const InputError& e) {
        throw InputError(std::string(kEnvironment) + ": " + e.what());
      }
    }
    start = end + 1;
  }
}

void add_plugins_to_environment(const std::vector<std::string>& paths) {
  std::string value = std::getenv(kEnvironment) ? std::getenv(kEnvironment) : "";
  for (const auto& p : paths) {
    std::error_code ec;
    const std::string absolute = fs::absolute(p, ec).string();
    if (absolute.find(':') != std::string::npos)
      throw InputError("--plugins: '" + absolute + "' holds a ':', which " + kEnvironment + " cannot carry; allowed: a path without ':'");
    value += (value.empty() ? "" : ":") + absolute;
  }
  setenv(kEnvironment, value.c_str(), 1);
}

std::vector<const PluginVariant*> loaded_plugins() { return loaded(); }

json plugin_bundle(const PluginVariant& v) {
  const PluginManifest& m = v.manifest();
  return {{"variant", m.variant}, {"provenance", v.provenance()}, {"manifest_json", m.manifest}, {"sources", m.sources}};
}

json loaded_plugin_bundles() {
  json out = json::array();
  for (const PluginVariant* v : loaded()) out.push_back(plugin_bundle(*v));
  return out;
}

namespace {
void collect_variants(const json& j, std::set<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k == "variant" && v.is_string()) out.insert(v.get<std::string>());
      else if (k != "plugins") collect_variants(v, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) collect_variants(v, out);
  }
}
}  // namespace

json plugins_named_by(const json& table, const json& run_summary) {
  if (!run_summary.is_object() || !run_summary.contains("plugins")) return json::array();  // tables made in tests
  std::set<std::string> named;
  collect_variants(table, named);
  json out = json::array();
  for (const auto& b : run_summary.value("plugins", json::array()))
    if (named.count(b.value("variant", ""))) out.push_back(b);
  return out;
}

void load_plugin_bundles(const json& holder, const std::string& where) {
  register_bundles(holder, where);
  if (holder.is_object() && holder.contains("tables") && holder["tables"].is_array())  // a fleet table
    for (size_t i = 0; i < holder["tables"].size(); ++i)
      register_bundles(holder["tables"][i], where + ": tables[" + std::to_string(i) + "]");
}

}  // namespace convtune
