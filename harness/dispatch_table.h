// A dispatch.json (one table or a fleet) turned into the plain arrays of harness/dispatch_rules.h, which
// lookup(), check-dispatch, the runtime library and every exported header run the rules on. The header
// prints the same arrays, so that what an application compiles and what the harness decides agree.
#pragma once
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/dispatch_rules.h"

namespace convtune {

using json = nlohmann::json;
namespace rules = convtune_dispatch;
class Variant;

// A table's candidate as the harness runs it: its registered variant (nullptr: not registered here) and config.
struct ResolvedCandidate {
  const Variant* variant = nullptr;
  json config;
};

// One table's arrays. Entry i is the table's "entries"[i]; model candidate j of a family is its model's
// "candidates"[j].
struct CompiledTable {
  rules::Table view{};
  const json* source = nullptr;  // the table's JSON (owned by DispatchTable)
  std::vector<rules::FamilyInfo> families;
  std::vector<rules::Entry> entries, defaults;
  std::vector<rules::Model> models;
  std::vector<std::string> model_families;  // models[i]'s family
  // Storage the arrays point into.
  std::deque<std::vector<rules::Entry>> candidate_lists;
  std::deque<std::vector<rules::Node>> node_lists;
  std::deque<std::vector<int>> root_lists;
  std::deque<std::vector<float>> feature_lists;
  std::deque<std::vector<const char*>> name_lists;
  std::deque<std::vector<rules::Step>> step_lists;
  std::deque<std::vector<rules::Quantity>> quantity_lists;

  // An entry's variant and config, looked up once: a lookup asks can_implement of up to dozens of candidates,
  // and finding a variant by name and rebuilding its config each time cost more than the rules themselves.
  const ResolvedCandidate& resolved(const rules::Entry& e) const;

 private:
  mutable std::mutex resolved_mutex_;
  mutable std::unordered_map<const rules::Entry*, ResolvedCandidate> resolved_;
};

class DispatchTable {
 public:
  // A single table or a fleet (harness/fleet.h). Throws InputError naming what is malformed: a family this
  // convtune does not know, a dim missing from an entry, a model that does not match its family.
  explicit DispatchTable(json dispatch);
  DispatchTable(const DispatchTable&) = delete;
  DispatchTable& operator=(const DispatchTable&) = delete;

  const json& source() const { return source_; }
  bool fleet() const { return fleet_; }
  size_t size() const { return tables_.size(); }
  const CompiledTable& table(size_t i) const { return *tables_[i]; }

  // The table a device gets ("single table", or the fleet's "exact model", "same architecture", "default":
  // the first table's defaults alone); of the fleet's tables that have `family` (rules::pick_table), or of
  // all for "" (a single table holds every family it has).
  struct Pick {
    const CompiledTable* table;
    rules::Table view;  // table->view, or its defaults alone
    std::string rule;
  };
  Pick pick(const std::string& device_name, const std::string& compute_capability, const std::string& family) const;

  // Interned text: the arrays hold pointers into this.
  const char* text(const std::string& s);

 private:
  json source_;
  bool fleet_ = false;
  std::vector<std::unique_ptr<CompiledTable>> tables_;
  std::deque<std::string> strings_;
  std::vector<rules::Table> views_;  // for rules::pick_table
  void compile(const json& table, CompiledTable& out);
};

// A model quantity's program (Family::model_quantities: postfix over the family's dims, integers and
// + - * /) as the rules' steps. Throws InputError naming `where` and the token: an unknown name, an operator
// without its two operands, or a program that does not leave exactly one value.
std::vector<rules::Step> compile_quantity(const std::string& program, const std::vector<std::string>& dims,
                                          const std::string& where);

// A candidate of a table as JSON: {"variant", "config", "candidate"}.
json entry_candidate(const rules::Entry& e);

}  // namespace convtune
