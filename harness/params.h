// Parameter spaces: each tunable has a name, a meaning and its allowed values (integers or names).
// A config is one point: a JSON object {name: value}. Constraints between parameters, the problem and
// the device live in each variant's can_implement, which says why a point is rejected.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;
using Config = json;  // an object: parameter name -> integer or string

struct Param {
  std::string name;
  std::string meaning;
  std::vector<json> values;
  json absent;  // the value a config without this parameter means (null: required); for a parameter added
                // after dispatch tables were shipped, so that their configs still name a point
  std::string instead_of;  // an alternative's: the parameter it stands in for (see ParamSpace::alternative)
};

class ParamSpace {
 public:
  ParamSpace& add(std::string name, std::string meaning, std::vector<json> values, json absent = nullptr);
  // A positive integer that a config may name in place of parameter `instead_of`: a count where the space now
  // has a rule (a split count where it has waves), so that configs of shipped tables still name a point.
  // enumerate() never gives it; complete_config() takes it when the config lacks `instead_of`.
  ParamSpace& alternative(std::string name, std::string meaning, std::string instead_of);
  const std::vector<Param>& params() const { return params_; }
  const Param* find(const std::string& name) const;
  size_t size() const;  // points in the full product

  // Every point of the product, in a fixed order (first parameter slowest).
  std::vector<Config> enumerate() const;
  // Keeps only the listed values of some parameters; throws InputError naming `where`.<param> when a
  // parameter is unknown (it lists the known ones). Values outside the declared ones are allowed, so
  // that a user can reach any point; can_implement still judges them.
  ParamSpace restricted(const json& overrides, const std::string& where) const;
  // `cfg` with each left-out parameter that has an `absent` value set to it; throws InputError unless the
  // result names exactly this space's parameters with values of the right kind.
  Config complete_config(const Config& cfg, const std::string& where) const;
  json to_json() const;

 private:
  std::vector<Param> params_;
  std::vector<Param> alternatives_;
};

// "tile_x=32,tile_y=8" -> {"tile_x": 32, "tile_y": 8}; values that are not integers stay strings.
Config parse_config(const std::string& text, const std::string& where);
// `text` as a finite number when it is one whole ("5x", "nan", "inf" and "" are not).
bool read_whole_number(const std::string& text, double& out);
// {"tile_x": 32, "dir": "y"} -> "dir=y,tile_x=32" (sorted: stable candidate names)
std::string config_string(const Config& cfg);

}  // namespace convtune
