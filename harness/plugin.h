// Plug-in variants: a folder with kernel source(s) and a manifest (harness/plugin_manifest.h) becomes a variant
// like any other: planned, compiled by NVRTC into the same disk cache, verified against the family's float64
// reference, timed, recorded (with its provenance), exported and run by the runtime library.
//
// Where plug-ins come from, each a path: a plug-in folder (or its plugin.json), a run folder (the plug-ins its
// summary.json carries) or a dispatch.json (those it carries). `--plugins`, a spec's "plugins" and
// CONVTUNE_PLUGINS (paths separated by ':', loaded by every convtune command: the sweep's and the profiler's
// worker processes get them this way) all take these.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/plugin_manifest.h"
#include "harness/variant.h"

namespace convtune {

using json = nlohmann::json;

class PluginVariant : public Variant {
 public:
  explicit PluginVariant(std::shared_ptr<const PluginManifest> m);
  const PluginManifest& manifest() const { return *m_; }

  std::string name() const override { return m_->variant; }
  std::string family() const override { return m_->family; }
  std::string summary() const override { return m_->summary; }
  int complexity() const override { return m_->complexity; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override { return m_->space; }
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override;
  Cost cost(const Problem& p, const Config& c) const override;
  Tolerance tolerance(const Problem& p, const Config& c) const override;
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override;
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo& dev, JitCache& jit) const override;
  // Where it came from, recorded in each of its records as "plugin": folder, manifest, source hash.
  json provenance() const;

  // The NVRTC source name: unique per plug-in version, so that two versions never share a cache entry.
  std::string jit_source() const;

 private:
  std::shared_ptr<const PluginManifest> m_;
};

// Loads the plug-ins at `path` (see above) and registers their variants; loading one again with the same
// source hash does nothing. Throws InputError (one line) for a bad manifest, a name a built-in variant
// holds, or another version of a loaded plug-in. Returns the variants found there.
std::vector<const PluginVariant*> load_plugins(const std::string& path);
void load_plugins(const std::vector<std::string>& paths);
// CONVTUNE_PLUGINS, if set; every command calls this first.
void load_plugins_from_environment();
// Adds `paths` (made absolute) to CONVTUNE_PLUGINS, for the worker processes this one starts.
void add_plugins_to_environment(const std::vector<std::string>& paths);

std::vector<const PluginVariant*> loaded_plugins();
// A plug-in as data (its manifest, sources and provenance): what summary.json and dispatch.json carry.
json plugin_bundle(const PluginVariant& v);
// The bundles of every loaded plug-in (summary.json's "plugins"); empty when none is loaded.
json loaded_plugin_bundles();
// The bundles of `run_summary` whose variant `table` names (dispatch.json's "plugins").
json plugins_named_by(const json& table, const json& run_summary);
// Registers the bundles of a summary.json or a dispatch.json ("plugins"; a fleet's tables too), if any.
void load_plugin_bundles(const json& holder, const std::string& where);

}  // namespace convtune
