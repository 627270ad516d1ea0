// Problems: a family plus a shape. Every family's shape is a set of named integer dimensions with
// documented ranges (the family's dims()), so specs, records and errors treat all families alike.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

class Family;

struct DimSpec {
  std::string name;
  int64_t min;
  int64_t max;
  std::string meaning;
  bool has_default = false;
  int64_t default_value = 0;
  // false: a problem at the default leaves the dim out of its key and JSON, so that a dim added later
  // (conv2d's batch) keeps the keys of earlier records.
  bool keyed_at_default = true;
};

// Accepted error of a method against the float64 reference.
struct Tolerance {
  double rel_l2 = 1e-5;  // ||out - ref|| / ||ref||
  double max_rel = 1e-4;  // max |out - ref| / max |ref|
  json to_json() const { return {{"rel_l2", rel_l2}, {"max_rel", max_rel}}; }
};
constexpr Tolerance kDirectFp32Tolerance{1e-5, 1e-4};
constexpr Tolerance kSpectralFp32Tolerance{1e-4, 1e-3};

// An operand of a problem: one device array of floats (inputs first, the output last).
struct Operand {
  std::string name;
  int64_t elements;
  // Verification draws this input uniform in [-amplitude, amplitude): 1 unless the family keeps a sum at
  // unit scale (a layer's weights before a squashing activation, which would otherwise saturate).
  double amplitude = 1.0;
};

struct Problem {
  std::string family;  // a registered family's name
  std::map<std::string, int64_t> dims;

  const Family& type() const;  // the registered family (throws InputError when unknown)
  int64_t at(const std::string& dim) const;  // a dim left out reads as its default, where it has one
  std::string key() const;  // "conv2d/h=8192,r=3,w=8192": stable, used to match records on resume
  json to_json() const;
  static Problem from_json(const json& j, const std::string& where = "problem");  // validates

  std::vector<Operand> operands() const;
  double direct_flops() const;  // 2 * taps * outputs: one axis on which all variants compare
  double min_bytes() const;     // each input read once, the output written once
  int64_t output_elements() const { return operands().back().elements; }

  bool operator==(const Problem& o) const { return family == o.family && (dims == o.dims || key() == o.key()); }
  bool operator<(const Problem& o) const { return key() < o.key(); }
};

// A representative problem of a family (for listing spaces and for tests).
Problem example_problem(const std::string& family);

// Validates ranges against the family's dims and its own rules, fills defaults; throws InputError
// naming `where`.<dim>.
void validate(Problem& p, const std::string& where);

}  // namespace convtune
