// Problems: a family plus a shape. Every family's shape is a set of named integer dimensions with
// documented ranges (FamilySchema), so specs, records and errors treat all families alike.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

enum class Family { conv2d, conv1d, conv1d_parts, layer_fwd, layer_bwd_data, layer_bwd_filter };

struct DimSpec {
  std::string name;
  int64_t min;
  int64_t max;
  std::string meaning;
  bool has_default = false;
  int64_t default_value = 0;
};

struct FamilySchema {
  Family family;
  std::string name;
  std::string summary;
  std::vector<DimSpec> dims;
};

const std::vector<FamilySchema>& family_schemas();
const FamilySchema& schema_of(Family f);
std::string family_name(Family f);
Family family_from_name(const std::string& name);  // throws InputError naming the allowed families
std::string family_names_joined();

// An operand of a problem: one device array of floats (inputs first, the output last).
struct Operand {
  std::string name;
  int64_t elements;
};

struct Problem {
  Family family = Family::conv2d;
  std::map<std::string, int64_t> dims;

  int64_t at(const std::string& dim) const;
  std::string key() const;  // "conv2d/h=8192,r=3,w=8192": stable, used to match records on resume
  json to_json() const;
  static Problem from_json(const json& j, const std::string& where = "problem");  // validates

  std::vector<Operand> operands() const;
  double direct_flops() const;  // 2 * taps * outputs: one axis on which all variants compare
  double min_bytes() const;     // each input read once, the output written once
  int64_t output_elements() const { return operands().back().elements; }

  bool operator==(const Problem& o) const { return family == o.family && dims == o.dims; }
  bool operator<(const Problem& o) const { return key() < o.key(); }
};

// A representative problem of a family (for listing spaces and for tests).
Problem example_problem(Family f);

// Validates ranges against the schema and fills defaults; throws InputError naming `where`.<dim>.
void validate(Problem& p, const std::string& where);

// Typed view of a conv2d problem: image h x w, filter (2r+1)^2, zero ghost cells, 'same' output,
// cross-correlation (out(i,j) = sum in(i+m, j+n) * f(m, n)), as in the seeds and cuDNN.
struct Conv2d {
  int64_t h, w, r;
  explicit Conv2d(const Problem& p) : h(p.at("h")), w(p.at("w")), r(p.at("r")) {}
  int64_t fw() const { return 2 * r + 1; }
};

}  // namespace convtune
