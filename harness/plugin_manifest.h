// A plug-in's manifest (plugin.json beside its kernel sources): what a variant says in C++, said as data.
//
// {
//   "family": "conv2d", "name": "my_direct",          // the variant is conv2d.my_direct
//   "summary": "one thread per output",              // optional
//   "sources": ["kernel.cuh"],                       // compiled by NVRTC; the others are headers it may #include
//   "entry": "my_conv2d",                            // extern "C" __global__
//   "params": {"block_x": [16, 32], "block_y": {"values": [4, 8], "meaning": "rows per block"}},
//   "derived": {"threads": "block_x * block_y"},     // optional named values, may name each other
//   "constraints": ["threads <= max_threads_per_block", "r <= 8"],
//   "defines": {"RADIUS": "r", "BLOCK_X": "block_x"},  // -DRADIUS=<value>: integers
//   "launch": {"grid": ["ceil_div(w, block_x)", "ceil_div(h, block_y)"], "block": ["block_x", "block_y"],
//              "dynamic_smem": "0"},
//   "operands": ["image", "filter", "output"],       // the family's, in its order: the kernel's first arguments
//   "scalars": ["h", "w"],                           // then these, as int (or "scalar_type": "int64")
//   "constants": {"c_filter": "filter"},             // optional: __constant__ symbols filled from operands in bind
//   "cost": {"bytes_model": "...", "flops": "..."},   // optional (default: bytes_min, the direct flops)
//   "tolerance": {"rel_l2": "1e-5", "max_rel": "1e-4"},  // optional expressions (default 1e-5, 1e-4)
//   "complexity": 5                                  // optional tie-break, lower = simpler
// }
// Expressions (harness/plugin_expr.h) name the family's dims, the parameters, the derived values and the
// device limits (plugin_device_symbols()).
#pragma once
#include <array>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/params.h"
#include "harness/plugin_expr.h"

namespace convtune {

using json = nlohmann::json;

inline constexpr const char* kPluginManifestName = "plugin.json";

// The device limits expressions may name, as symbol -> meaning.
const std::vector<std::pair<std::string, std::string>>& plugin_device_symbols();

using NamedExpr = std::pair<std::string, std::shared_ptr<const Expr>>;

struct PluginManifest {
  // Where it came from: the folder and manifest as given (absolute), and a hash of the manifest and sources.
  std::string folder, manifest_path, source_hash;
  json manifest;                                  // as written
  std::map<std::string, std::string> sources;     // file name -> text
  std::string family, variant, summary, entry, main_source;
  ParamSpace space;
  std::vector<NamedExpr> derived;                 // in an order where each names only earlier ones
  std::vector<std::shared_ptr<const Expr>> constraints;
  std::vector<NamedExpr> defines;
  std::array<std::shared_ptr<const Expr>, 3> grid, block;
  std::shared_ptr<const Expr> dynamic_smem;
  std::vector<std::string> operands;                 // the kernel's pointer arguments, the family's order
  std::vector<std::shared_ptr<const Expr>> scalars;
  bool scalars_int64 = false;
  std::vector<std::pair<std::string, int>> constants;  // __constant__ symbol -> operand index
  std::shared_ptr<const Expr> bytes_model, flops, rel_l2, max_rel;  // null: the defaults
  int complexity = 5;
};

// Validates `manifest` (read from `file`, shown in errors) with the texts of its sources; throws InputError,
// one line naming the file, the field, the value and what is allowed.
std::shared_ptr<const PluginManifest> parse_plugin_manifest(const json& manifest,
                                                            const std::map<std::string, std::string>& sources,
                                                            const std::string& file);
// Reads <folder>/plugin.json (or the manifest file itself) and the sources it lists, then parses it.
std::shared_ptr<const PluginManifest> read_plugin_folder(const std::filesystem::path& path);

}  // namespace convtune
