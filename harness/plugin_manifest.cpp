#include "harness/plugin_manifest.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "harness/error.h"
#include "harness/family.h"
#include "harness/variant.h"

namespace convtune {
namespace fs = std::filesystem;

const std::vector<std::pair<std::string, std::string>>& plugin_device_symbols() {
  static const std::vector<std::pair<std::string, std::string>> symbols = {
      {"max_threads_per_block", "threads a block may have"},
      {"max_threads_per_sm", "resident threads an SM may hold"},
      {"max_smem_per_block", "shared memory bytes a block may use without opting in"},
      {"max_smem_per_block_optin", "shared memory bytes a block may use when it opts in"},
      {"max_smem_per_sm", "shared memory bytes of an SM"},
      {"regs_per_block", "32-bit registers a block may use"},
      {"sms", "streaming multiprocessors"},
      {"l2_bytes", "L2 cache bytes"},
      {"warp_size", "threads of a warp"},
      {"cc", "compute capability as major * 10 + minor (90 on an H100)"}};
  return symbols;
}

namespace {

const std::set<std::string> kFields = {"family", "name", "summary", "sources", "entry", "params", "derived",
                                       "constraints", "defines", "launch", "operands", "scalars", "scalar_type",
                                       "constants", "cost", "tolerance", "complexity"};

// Builds the manifest's parts in order; every error names the file and the field.
class ManifestReader {
 public:
  ManifestReader(const json& j, const std::map<std::string, std::string>& sources, std::string file)
      : j_(j), file_(std::move(file)), m_(std::make_shared<PluginManifest>()) {
    m_->manifest = j;
    m_->sources = sources;
  }

  std::shared_ptr<const PluginManifest> read() {
    if (!j_.is_object()) fail("", j_.dump(), "a JSON object with the fields " + joined(kFields));
    for (const auto& [k, v] : j_.items())
      if (!kFields.count(k)) fail(k, "", "unknown field; allowed: " + joined(kFields));
    read_identity();
    read_sources();
    read_params();
    symbols_ = base_symbols();
    read_derived();
    for (const auto& [name, e] : m_->derived) symbols_.push_back(name);
    read_constraints();
    read_defines();
    read_launch();
    read_operands();
    read_scalars();
    read_cost();
    return m_;
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& value, const std::string& allowed) const {
    throw InputError(file_ + ": " + (field.empty() ? "" : field + ": ") + (value.empty() ? "" : value + " ") +
                     (value.empty() ? "" : "is not allowed; ") + allowed);
  }
  static std::string joined(const std::set<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }
  const json& need(const std::string& field, const std::string& what) const {
    if (!j_.contains(field)) fail(field, "", "missing; " + what);
    return j_[field];
  }
  std::string need_string(const std::string& field, const std::string& what) const {
    const json& v = need(field, what);
    if (!v.is_string() || v.get<std::string>().empty()) fail(field, v.dump(), what);
    return v.get<std::string>();
  }
  static bool identifier(const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  }
  std::shared_ptr<const Expr> expr(const std::string& field, const json& v) const {
    std::string text;
    if (v.is_number()) text = v.dump();
    else if (v.is_string()) text = v.get<std::string>();
    else fail(field, v.dump(), "an expression (a string, or a number)");
    try {
      return std::make_shared<const Expr>(text, symbols_);
    } catch (const ExprError& e) {
      if (!expressions_available()) throw InputError(file_ + ": " + field + ": " + e.what());
      std::set<std::string> names(symbols_.begin(), symbols_.end());
      fail(field, "'" + text + "'", std::string(e.what()) + "; symbols allowed: " + joined(names) +
                                        "; functions: min, max, abs, sqrt, log2, floor, ceil, ceil_div, round_up, %");
    }
  }

  void read_identity() {
    const std::string family = need_string("family", "a family; allowed: " + FamilyRegistry::instance().names_joined());
    if (!FamilyRegistry::instance().find(family))
      fail("family", "'" + family + "'", "allowed: " + FamilyRegistry::instance().names_joined());
    m_->family = family;
    const std::string name = need_string("name", "the variant's name after '" + family + ".', e.g. \"my_direct\"");
    if (!identifier(name)) fail("name", "'" + name + "'", "allowed: letters, digits and '_', not starting with a digit");
    m_->variant = family + "." + name;
    m_->summary = j_.value("summary", "plug-in " + m_->variant);
    m_->entry = need_string("entry", "the kernel's extern \"C\" __global__ function name");
    if (!identifier(m_->entry)) fail("entry", "'" + m_->entry + "'", "allowed: a C identifier");
    if (j_.contains("complexity")) {
      const json& c = j_["complexity"];
      if (!c.is_number_integer() || c.get<int>() < 0 || c.get<int>() > 100) fail("complexity", c.dump(), "allowed: an integer in 0..100");
      m_->complexity = c.get<int>();
    }
  }

  void read_sources() {
    const json& s = need("sources", "a list of kernel files in the plug-in's folder, the compiled one first");
    if (!s.is_array() || s.empty()) fail("sources", s.dump(), "allowed: a non-empty list of file names");
    for (size_t i = 0; i < s.size(); ++i) {
      const std::string field = "sources[" + std::to_string(i) + "]";
      const std::string name = s[i].is_string() ? s[i].get<std::string>() : "";
      const bool plain = !name.empty() && name[0] != '.' && name.find_first_not_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == std::string::npos;
      if (!plain) fail(field, s[i].dump(), "allowed: a file name in the plug-in's folder (letters, digits, '.', '_', '-')");
      if (!m_->sources.count(name)) fail(field, "'" + name + "'", "the file cannot be read in the plug-in's folder");
      if (i == 0) m_->main_source = name;
    }
  }

  std::vector<std::string> base_symbols() const {
    std::vector<std::string> out;
    for (const auto& d : find_family(m_->family).dims()) out.push_back(d.name);
    for (const auto& [name, meaning] : plugin_device_symbols()) out.push_back(name);
    for (const auto& p : m_->space.params()) out.push_back(p.name);
    return out;
  }

  void check_new_name(const std::string& field, const std::string& name) const {
    if (!identifier(name)) fail(field, "'" + name + "'", "allowed: a name of letters, digits and '_'");
    const std::vector<std::string> taken = base_symbols();
    if (std::find(taken.begin(), taken.end(), name) != taken.end())
      fail(field, "'" + name + "'", "the name is taken by a dim, a device limit or another parameter");
  }

  void read_params() {
    const json& p = need("params", "an object {name: [integer values]} (may be empty: {})");
    if (!p.is_object()) fail("params", p.dump(), "allowed: an object {name: [integers]} or {name: {\"values\": [...], \"meaning\": \"...\"}}");
    for (const auto& [name, v] : p.items()) {
      const std::string field = "params." + name;
      check_new_name(field, name);
      const json values = v.is_object() ? v.value("values", json()) : v;
      if (!values.is_array() || values.empty() ||
          !std::all_of(values.begin(), values.end(), [](const json& x) { return x.is_number_integer(); }))
        fail(field, v.dump(), "allowed: a non-empty list of integers, or {\"values\": [...], \"meaning\": \"...\"}");
      const std::string meaning = v.is_object() ? v.value("meaning", name) : name;
      m_->space.add(name, meaning, std::vector<json>(values.begin(), values.end()));
    }
  }

  // Derived values may name each other: ordered so that each names only earlier ones; a cycle is an error.
  void read_derived() {
    if (!j_.contains("derived")) return;
    const json& d = j_["derived"];
    if (!d.is_object()) fail("derived", d.dump(), "allowed: an object {name: expression}");
    std::vector<std::string> all = symbols_;
    for (const auto& [name, v] : d.items()) check_new_name("derived." + name, name), all.push_back(name);
    std::swap(symbols_, all);
    std::vector<NamedExpr> pending;
    for (const auto& [name, v] : d.items()) pending.emplace_back(name, expr("derived." + name, v));
    std::swap(symbols_, all);
    std::set<std::string> done;
    std::set<std::string> device_names;
    for (const auto& [name, meaning] : plugin_device_symbols()) device_names.insert(name);
    while (!pending.empty()) {
      const auto ready = std::find_if(pending.begin(), pending.end(), [&](const NamedExpr& e) {
        return std::all_of(e.second->used().begin(), e.second->used().end(),
                           [&](const std::string& s) { return !d.contains(s) || done.count(s); });
      });
      if (ready == pending.end()) fail("derived." + pending.front().first, "", "the derived values name each other in a cycle");
      done.insert(ready->first);
      for (const auto& used : ready->second->used())
        if (device_names.count(used) || device_dependent_.count(used)) device_dependent_.insert(ready->first);
      m_->derived.push_back(*ready);
      pending.erase(ready);
    }
  }

  void read_constraints() {
    if (!j_.contains("constraints")) return;
    const json& c = j_["constraints"];
    if (!c.is_array()) fail("constraints", c.dump(), "allowed: a list of expressions, each true (non-zero) where the config can run");
    for (size_t i = 0; i < c.size(); ++i) m_->constraints.push_back(expr("constraints[" + std::to_string(i) + "]", c[i]));
  }

  void read_defines() {
    if (!j_.contains("defines")) return;
    const json& d = j_["defines"];
    if (!d.is_object()) fail("defines", d.dump(), "allowed: an object {MACRO: expression}, passed as -DMACRO=<integer>");
    // A define is compiled into a cubin cached for every device of the arch: it may not name a device limit.
    std::vector<std::string> all = symbols_, device_free;
    for (const auto& name : all)
      if (!device_dependent_.count(name) &&
          std::none_of(plugin_device_symbols().begin(), plugin_device_symbols().end(), [&](const auto& d) { return d.first == name; }))
        device_free.push_back(name);
    std::swap(symbols_, device_free);
    for (const auto& [name, v] : d.items()) {
      if (!identifier(name)) fail("defines." + name, "'" + name + "'", "allowed: a C macro name");
      m_->defines.emplace_back(name, expr("defines." + name, v));
    }
    std::swap(symbols_, device_free);
  }

  void read_dim3(const json& launch, const char* key, std::array<std::shared_ptr<const Expr>, 3>& out) {
    const std::string field = std::string("launch.") + key;
    if (!launch.contains(key)) fail(field, "", "missing; a list of 1 to 3 expressions (x, y, z)");
    const json& v = launch[key];
    if (!v.is_array() || v.empty() || v.size() > 3) fail(field, v.dump(), "allowed: a list of 1 to 3 expressions (x, y, z)");
    for (size_t i = 0; i < 3; ++i) out[i] = expr(field + "[" + std::to_string(i) + "]", i < v.size() ? v[i] : json(1));
  }

  void read_launch() {
    const json& l = need("launch", "{\"grid\": [...], \"block\": [...], \"dynamic_smem\": expression}");
    if (!l.is_object()) fail("launch", l.dump(), "allowed: {\"grid\": [...], \"block\": [...], \"dynamic_smem\": expression}");
    for (const auto& [k, v] : l.items())
      if (k != "grid" && k != "block" && k != "dynamic_smem") fail("launch." + k, "", "unknown field; allowed: grid, block, dynamic_smem");
    read_dim3(l, "grid", m_->grid);
    read_dim3(l, "block", m_->block);
    m_->dynamic_smem = expr("launch.dynamic_smem", l.value("dynamic_smem", json(0)));
  }

  void read_operands() {
    const Family& family = find_family(m_->family);
    std::vector<std::string> names;
    for (const auto& o : family.operands(family.example())) names.push_back(o.name);
    std::string allowed;
    for (const auto& n : names) allowed += (allowed.empty() ? "[\"" : "\", \"") + n;
    allowed += "\"]";
    const json& o = need("operands", "the family's operands in its order: " + allowed);
    if (!o.is_array() || o.size() != names.size())
      fail("operands", o.dump(), m_->family + " has " + std::to_string(names.size()) + " operands, in this order: " + allowed);
    for (size_t i = 0; i < names.size(); ++i)
      if (o[i] != names[i]) fail("operands[" + std::to_string(i) + "]", o[i].dump(), "the family's operands in order: " + allowed);
    m_->operands = names;
    if (!j_.contains("constants")) return;
    const json& c = j_["constants"];
    if (!c.is_object()) fail("constants", c.dump(), "allowed: an object {__constant__ symbol: operand}");
    for (const auto& [symbol, operand] : c.items()) {
      const auto at = std::find(names.begin(), names.end(), operand.is_string() ? operand.get<std::string>() : "");
      if (!identifier(symbol) || at == names.end() || at + 1 == names.end())
        fail("constants." + symbol, operand.dump(), "allowed: an input operand of " + allowed);
      m_->constants.emplace_back(symbol, int(at - names.begin()));
    }
  }

  void read_scalars() {
    if (j_.contains("scalar_type")) {
      const json& t = j_["scalar_type"];
      if (t != "int" && t != "int64") fail("scalar_type", t.dump(), "allowed: \"int\", \"int64\"");
      m_->scalars_int64 = t == "int64";
    }
    if (!j_.contains("scalars")) return;
    const json& s = j_["scalars"];
    if (!s.is_array()) fail("scalars", s.dump(), "allowed: a list of expressions, the kernel's arguments after the operands");
    for (size_t i = 0; i < s.size(); ++i) m_->scalars.push_back(expr("scalars[" + std::to_string(i) + "]", s[i]));
  }

  void read_cost() {
    for (const char* key : {"cost", "tolerance"}) {
      if (!j_.contains(key)) continue;
      const json& c = j_[key];
      const std::set<std::string> fields = std::string(key) == "cost" ? std::set<std::string>{"bytes_model", "flops"}
                                                                      : std::set<std::string>{"rel_l2", "max_rel"};
      if (!c.is_object()) fail(key, c.dump(), "allowed: an object with " + joined(fields));
      for (const auto& [k, v] : c.items()) {
        if (!fields.count(k)) fail(std::string(key) + "." + k, "", "unknown field; allowed: " + joined(fields));
        auto e = expr(std::string(key) + "." + k, v);
        (k == "bytes_model" ? m_->bytes_model : k == "flops" ? m_->flops : k == "rel_l2" ? m_->rel_l2 : m_->max_rel) = e;
      }
    }
  }

  const json& j_;
  std::string file_;
  std::shared_ptr<PluginManifest> m_;
  std::vector<std::string> symbols_;
  std::set<std::string> device_dependent_;  // derived values that name a device limit
};

std::string fnv1a_hex(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string read_file_text(const fs::path& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = bool(in) && fs::is_regular_file(path);
  std::ostringstream text;
  if (*ok) text << in.rdbuf();
  return text.str();
}

}  // namespace

std::shared_ptr<const PluginManifest> parse_plugin_manifest(const json& manifest,
                                                            const std::map<std::string, std::string>& sources,
                                                            const std::string& file) {
  if (!expressions_available()) throw InputError(file + ": " + expressions_hint());
  auto m = std::const_pointer_cast<PluginManifest>(ManifestReader(manifest, sources, file).read());
  // The hash covers what decides the compiled code and its launch: the manifest and every source.
  std::string material = manifest.dump();
  for (const auto& [name, text] : sources) material += '\0' + name + '\0' + text;
  m->source_hash = fnv1a_hex(material);
  m->manifest_path = file;
  return m;
}

std::shared_ptr<const PluginManifest> read_plugin_folder(const fs::path& path) {
  std::error_code ec;
  const fs::path given = fs::absolute(path, ec);
  const bool is_dir = fs::is_directory(given, ec);
  const fs::path file = is_dir ? given / kPluginManifestName : given;
  bool ok = false;
  const std::string text = read_file_text(file, &ok);
  if (!ok)
    throw InputError("'" + path.string() + "' is not a plug-in: " + (is_dir ? "no " + std::string(kPluginManifestName) + " in it" : "no such file or folder") +
                     "; allowed: a folder holding plugin.json (convtune new-variant writes one), or the manifest itself");
  json manifest;
  try {
    manifest = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(file.string() + ": not valid JSON: " + e.what());
  }
  std::map<std::string, std::string> sources;
  if (manifest.is_object() && manifest.contains("sources") && manifest["sources"].is_array())
    for (const auto& s : manifest["sources"]) {
      if (!s.is_string() || s.get<std::string>().find('/') != std::string::npos) continue;  // the reader names it
      const std::string source = read_file_text(file.parent_path() / s.get<std::string>(), &ok);
      if (ok) sources[s.get<std::string>()] = source;
    }
  auto m = std::const_pointer_cast<PluginManifest>(parse_plugin_manifest(manifest, sources, file.string()));
  m->folder = file.parent_path().string();
  return m;
}

}  // namespace convtune
