#include "harness/params.h"

#include <algorithm>
#include <cmath>

#include "harness/error.h"

namespace convtune {

ParamSpace& ParamSpace::add(std::string name, std::string meaning, std::vector<json> values, json absent) {
  params_.push_back({std::move(name), std::move(meaning), std::move(values), std::move(absent)});
  return *this;
}

ParamSpace& ParamSpace::alternative(std::string name, std::string meaning, std::string instead_of) {
  alternatives_.push_back({std::move(name), std::move(meaning), {}, nullptr, std::move(instead_of)});
  return *this;
}

const Param* ParamSpace::find(const std::string& name) const {
  for (const auto& p : params_)
    if (p.name == name) return &p;
  return nullptr;
}

size_t ParamSpace::size() const {
  size_t n = 1;
  for (const auto& p : params_) n *= p.values.size();
  return n;
}

std::vector<Config> ParamSpace::enumerate() const {
  std::vector<Config> out;
  const size_t total = size();
  out.reserve(total);
  for (size_t index = 0; index < total; ++index) {
    Config cfg = json::object();
    size_t rest = index;
    for (auto it = params_.rbegin(); it != params_.rend(); ++it) {
      cfg[it->name] = it->values[rest % it->values.size()];
      rest /= it->values.size();
    }
    out.push_back(std::move(cfg));
  }
  return out;
}

static std::string known_names(const std::vector<Param>& params) {
  std::string out;
  for (const auto& p : params) out += (out.empty() ? "" : ", ") + p.name;
  return out.empty() ? "(none: this variant has no parameters)" : out;
}

static std::string value_list(const std::vector<json>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + (v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

// Integer tunables count threads, elements, stages: a negative value (or zero, where the space lists no
// zero) would wrap or divide by zero downstream, so it is named here instead of skipped with a wrong reason.
static void check_sign(const Param& p, const json& v, const std::string& at) {
  const auto lowest = std::min_element(p.values.begin(), p.values.end());
  if (lowest == p.values.end() || !lowest->is_number_integer() || lowest->get<int64_t>() < 0) return;
  const bool zero_ok = lowest->get<int64_t>() == 0;
  const int64_t x = v.is_number_unsigned() ? int64_t(v.get<uint64_t>() > 0) : v.get<int64_t>();  // the sign alone
  if (x > 0 || (x == 0 && zero_ok)) return;
  throw InputError(at + ": " + v.dump() + " is " + (x < 0 ? "negative" : "zero") + "; allowed: " +
                   (zero_ok ? "integers >= 0" : "positive integers") + " (the space lists " + value_list(p.values) + ")");
}

ParamSpace ParamSpace::restricted(const json& overrides, const std::string& where) const {
  if (!overrides.is_object()) throw InputError(where + ": must be an object {parameter: value or [values]}");
  ParamSpace out = *this;
  for (const auto& [name, value] : overrides.items()) {
    auto it = std::find_if(out.params_.begin(), out.params_.end(), [&](const Param& p) { return p.name == name; });
    if (it == out.params_.end())
      throw InputError(where + "." + name + ": unknown parameter; allowed: " + known_names(params_));
    std::vector<json> values = value.is_array() ? value.get<std::vector<json>>() : std::vector<json>{value};
    if (values.empty()) throw InputError(where + "." + name + ": needs at least one value");
    const bool want_string = it->values.front().is_string();
    for (const auto& v : values) {
      if (want_string ? !v.is_string() : !v.is_number_integer())
        throw InputError(where + "." + name + ": " + v.dump() + " is not " +
                         (want_string ? "a name" : "an integer") + "; allowed: " + value_list(it->values));
      if (want_string && std::find(it->values.begin(), it->values.end(), v) == it->values.end())
        throw InputError(where + "." + name + ": unknown value " + v.dump() + "; allowed: " + value_list(it->values));
      if (!want_string) check_sign(*it, v, where + "." + name);
    }
    it->values = values;
  }
  return out;
}

Config ParamSpace::complete_config(const Config& given, const std::string& where) const {
  if (!given.is_object()) throw InputError(where + ": must be an object");
  Config cfg = given;
  for (const auto& p : params_)
    if (!cfg.contains(p.name) && !p.absent.is_null()) cfg[p.name] = p.absent;
  std::vector<std::string> stood_in;  // parameters an alternative in the config stands in for
  for (const auto& [name, v] : cfg.items()) {
    const auto alt = std::find_if(alternatives_.begin(), alternatives_.end(), [&](const Param& a) { return a.name == name; });
    if (alt == alternatives_.end()) {
      if (!find(name)) throw InputError(where + "." + name + ": unknown parameter; allowed: " + known_names(params_));
      continue;
    }
    if (cfg.contains(alt->instead_of))
      throw InputError(where + "." + name + ": beside " + alt->instead_of + ", which it stands in for; allowed: one of them");
    const bool positive = v.is_number_unsigned() ? v.get<uint64_t>() > 0 : v.is_number_integer() && v.get<int64_t>() > 0;
    if (!positive) throw InputError(where + "." + name + ": " + v.dump() + "; allowed: a positive integer (" + alt->meaning + ")");
    stood_in.push_back(alt->instead_of);
  }
  for (const auto& p : params_) {
    if (std::find(stood_in.begin(), stood_in.end(), p.name) != stood_in.end()) continue;
    if (!cfg.contains(p.name))
      throw InputError(where + "." + p.name + ": missing (" + p.meaning + "; values: " + value_list(p.values) + ")");
    const json& v = cfg[p.name];
    const bool want_string = p.values.front().is_string();
    if (want_string ? !v.is_string() : !v.is_number_integer())
      throw InputError(where + "." + p.name + ": " + v.dump() + " is not " + (want_string ? "a name" : "an integer") +
                       "; values: " + value_list(p.values));
    if (want_string && std::find(p.values.begin(), p.values.end(), v) == p.values.end())
      throw InputError(where + "." + p.name + ": unknown value " + v.dump() + "; allowed: " + value_list(p.values));
    if (!want_string) check_sign(p, v, where + "." + p.name);
  }
  return cfg;
}

json ParamSpace::to_json() const {
  json out = json::array();
  for (const auto& p : params_) out.push_back({{"name", p.name}, {"meaning", p.meaning}, {"values", p.values}});
  return out;
}

bool read_whole_number(const std::string& text, double& out) {
  size_t used = 0;
  try {
    out = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size() && std::isfinite(out);
}

Config parse_config(const std::string& text, const std::string& where) {
  Config cfg = json::object();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? text.size() : comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(where + ": '" + item + "' is not name=value (expected e.g. tile_x=32,tile_y=8)");
    std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    if (cfg.contains(name))  // which one was meant cannot be told
      throw InputError(where + ": " + name + " given twice; allowed: each name once");
    try {
      size_t used = 0;
      long long n = std::stoll(value, &used);
      if (used == value.size()) {
        cfg[name] = n;
        continue;
      }
    } catch (const std::exception&) {
    }
    cfg[name] = value;
  }
  return cfg;
}

std::string config_string(const Config& cfg) {
  std::string out;
  for (const auto& [k, v] : cfg.items())
    out += (out.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

}  // namespace convtune
