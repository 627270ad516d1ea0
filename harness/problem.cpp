#include "harness/problem.h"

#include <algorithm>

#include "harness/error.h"

namespace convtune {

static std::vector<FamilySchema> make_schemas() {
  // The three layer families share one shape (cuDNN's names).
  const std::vector<DimSpec> layer = {{"n", 1, 4096, "batch"},
                                      {"c", 1, 65536, "input maps"},
                                      {"h", 1, 65536, "input height"},
                                      {"w", 1, 65536, "input width"},
                                      {"k", 1, 65536, "output maps"},
                                      {"r", 1, 64, "mask height"},
                                      {"s", 1, 64, "mask width"},
                                      {"pad", 0, 64, "zero padding on each side", true, 0},
                                      {"stride", 1, 16, "stride", true, 1}};
  return {
      {Family::conv2d, "conv2d", "one image h x w, filter (2r+1)^2, zero ghost cells, 'same' output",
       {{"h", 1, 1 << 16, "image height"}, {"w", 1, 1 << 16, "image width"}, {"r", 0, 32, "filter radius"}}},
      {Family::conv1d, "conv1d", "signal n, filter m, mode 0 = valid, 1 = full",
       {{"n", 1, int64_t(1) << 31, "signal length"},
        {"m", 1, int64_t(1) << 24, "filter length"},
        {"mode", 0, 1, "0 = valid, 1 = full", true, 1}}},
      {Family::conv1d_parts, "conv1d_parts", "two long sequences a (n) and b (m), output slice [start, end)",
       {{"n", 1, int64_t(1) << 31, "length of a"},
        {"m", 1, int64_t(1) << 31, "length of b"},
        {"start", 0, int64_t(1) << 32, "first output index"},
        {"end", 1, int64_t(1) << 32, "one past the last output index"}}},
      {Family::layer_fwd, "layer_fwd", "NCHW layer forward: y = conv(x, w)", layer},
      {Family::layer_bwd_data, "layer_bwd_data", "NCHW layer backward data: dx from dy and w", layer},
      {Family::layer_bwd_filter, "layer_bwd_filter", "NCHW layer backward filter: dw from x and dy", layer},
  };
}

const std::vector<FamilySchema>& family_schemas() {
  static const std::vector<FamilySchema> schemas = make_schemas();
  return schemas;
}

const FamilySchema& schema_of(Family f) {
  for (const auto& s : family_schemas())
    if (s.family == f) return s;
  throw std::logic_error("unknown family");
}

std::string family_name(Family f) { return schema_of(f).name; }

std::string family_names_joined() {
  std::string out;
  for (const auto& s : family_schemas()) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

Family family_from_name(const std::string& name) {
  for (const auto& s : family_schemas())
    if (s.name == name) return s.family;
  throw InputError("unknown family '" + name + "'; allowed: " + family_names_joined());
}

int64_t Problem::at(const std::string& dim) const {
  auto it = dims.find(dim);
  if (it == dims.end()) throw std::logic_error("problem " + key() + " has no dimension '" + dim + "'");
  return it->second;
}

std::string Problem::key() const {
  std::string out = family_name(family) + "/";
  bool first = true;
  for (const auto& [k, v] : dims) {
    out += (first ? "" : ",") + k + "=" + std::to_string(v);
    first = false;
  }
  return out;
}

json Problem::to_json() const {
  json j;
  j["family"] = family_name(family);
  for (const auto& [k, v] : dims) j[k] = v;
  return j;
}

void validate(Problem& p, const std::string& where) {
  const auto& schema = schema_of(p.family);
  std::string allowed;
  for (const auto& d : schema.dims) allowed += (allowed.empty() ? "" : ", ") + d.name;
  for (const auto& [k, v] : p.dims) {
    (void)v;
    if (std::none_of(schema.dims.begin(), schema.dims.end(), [&](const DimSpec& d) { return d.name == k; }))
      throw InputError(where + "." + k + ": unknown dimension for family " + schema.name + "; allowed: " + allowed);
  }
  for (const auto& d : schema.dims) {
    auto it = p.dims.find(d.name);
    if (it == p.dims.end()) {
      if (!d.has_default)
        throw InputError(where + "." + d.name + ": missing (" + d.meaning + ", " + std::to_string(d.min) + ".." +
                         std::to_string(d.max) + ")");
      p.dims[d.name] = d.default_value;
      continue;
    }
    if (it->second < d.min || it->second > d.max)
      throw InputError(where + "." + d.name + ": " + std::to_string(it->second) + " is out of range; allowed " +
                       std::to_string(d.min) + ".." + std::to_string(d.max) + " (" + d.meaning + ")");
  }
  if (p.family == Family::conv1d_parts && p.at("end") <= p.at("start"))
    throw InputError(where + ".end: must be greater than start");
}

Problem example_problem(Family f) {
  Problem p;
  p.family = f;
  switch (f) {
    case Family::conv2d: p.dims = {{"h", 4096}, {"w", 4096}, {"r", 3}}; break;
    case Family::conv1d: p.dims = {{"n", 1 << 20}, {"m", 63}, {"mode", 1}}; break;
    case Family::conv1d_parts: p.dims = {{"n", 1 << 20}, {"m", 1 << 20}, {"start", 0}, {"end", 1 << 20}}; break;
    default:
      p.dims = {{"n", 8}, {"c", 64}, {"h", 56}, {"w", 56}, {"k", 64}, {"r", 3}, {"s", 3}, {"pad", 1}, {"stride", 1}};
  }
  return p;
}

Problem Problem::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": must be an object with a 'family' and its dimensions");
  if (!j.contains("family") || !j["family"].is_string())
    throw InputError(where + ".family: missing; allowed: " + family_names_joined());
  Problem p;
  p.family = family_from_name(j["family"].get<std::string>());
  for (const auto& [k, v] : j.items()) {
    if (k == "family") continue;
    if (!v.is_number_integer())
      throw InputError(where + "." + k + ": must be an integer, got " + v.dump());
    p.dims[k] = v.get<int64_t>();
  }
  validate(p, where);
  return p;
}

std::vector<Operand> Problem::operands() const {
  switch (family) {
    case Family::conv2d: {
      Conv2d c(*this);
      return {{"image", c.h * c.w}, {"filter", c.fw() * c.fw()}, {"output", c.h * c.w}};
    }
    case Family::conv1d: {
      int64_t n = at("n"), m = at("m");
      int64_t out = at("mode") == 0 ? std::max<int64_t>(n - m + 1, 0) : n + m - 1;
      return {{"signal", n}, {"filter", m}, {"output", out}};
    }
    case Family::conv1d_parts:
      return {{"a", at("n")}, {"b", at("m")}, {"output", at("end") - at("start")}};
    default: {
      int64_t n = at("n"), c = at("c"), h = at("h"), w = at("w"), k = at("k"), r = at("r"), s = at("s");
      int64_t pad = at("pad"), st = at("stride");
      int64_t p = (h + 2 * pad - r) / st + 1, q = (w + 2 * pad - s) / st + 1;
      Operand x{"x", n * c * h * w}, wt{"w", k * c * r * s}, y{"y", n * k * p * q};
      if (family == Family::layer_fwd) return {x, wt, y};
      if (family == Family::layer_bwd_data) return {{"dy", y.elements}, wt, {"dx", x.elements}};
      return {x, {"dy", y.elements}, {"dw", wt.elements}};
    }
  }
}

double Problem::direct_flops() const {
  switch (family) {
    case Family::conv2d: {
      Conv2d c(*this);
      return 2.0 * double(c.fw() * c.fw()) * double(c.h * c.w);
    }
    case Family::conv1d: {
      // Every (input, tap) pair that lands inside the output.
      int64_t n = at("n"), m = at("m");
      if (at("mode") == 1) return 2.0 * double(n) * double(m);
      return 2.0 * double(std::max<int64_t>(n - m + 1, 0)) * double(m);
    }
    case Family::conv1d_parts: {
      // Each output index i sums a[j] * b[i - j] over the j for which both exist.
      int64_t n = at("n"), m = at("m");
      double total = 0;
      for (int64_t i = at("start"); i < at("end"); ++i) {
        int64_t lo = std::max<int64_t>(0, i - m + 1), hi = std::min<int64_t>(n - 1, i);
        if (hi >= lo) total += double(hi - lo + 1);
      }
      return 2.0 * total;
    }
    default: {
      auto ops = operands();
      int64_t y = family == Family::layer_fwd ? ops[2].elements : family == Family::layer_bwd_data ? ops[0].elements : ops[1].elements;
      return 2.0 * double(y) * double(at("c") * at("r") * at("s"));
    }
  }
}

double Problem::min_bytes() const {
  double total = 0;
  for (const auto& o : operands()) total += 4.0 * double(o.elements);
  return total;
}

}  // namespace convtune
