#include "harness/problem.h"

#include <algorithm>

#include "harness/error.h"
#include "harness/family.h"

namespace convtune {

FamilyRegistry& FamilyRegistry::instance() {
  static FamilyRegistry registry;
  return registry;
}

void FamilyRegistry::add(std::unique_ptr<Family> f) {
  if (find(f->name())) throw std::logic_error("family registered twice: " + f->name());
  families_.push_back(std::move(f));
  std::sort(families_.begin(), families_.end(), [](const auto& a, const auto& b) { return a->name() < b->name(); });
  dims_.clear();
  for (const auto& family : families_) dims_.push_back(family->dims());
}

const std::vector<DimSpec>* FamilyRegistry::dims_of(const std::string& name) const {
  for (size_t i = 0; i < families_.size(); ++i)
    if (families_[i]->name() == name) return &dims_[i];
  return nullptr;
}

const Family* FamilyRegistry::find(const std::string& name) const {
  for (const auto& f : families_)
    if (f->name() == name) return f.get();
  return nullptr;
}

const Family& FamilyRegistry::get(const std::string& name) const {
  if (const Family* f = find(name)) return *f;
  throw InputError("unknown family '" + name + "'; allowed: " + names_joined());
}

std::vector<const Family*> FamilyRegistry::all() const {
  std::vector<const Family*> out;
  for (const auto& f : families_) out.push_back(f.get());
  return out;
}

std::string FamilyRegistry::names_joined() const {
  std::string out;
  for (const auto& f : families_) out += (out.empty() ? "" : ", ") + f->name();
  return out;
}


Problem example_problem(const std::string& family) { return find_family(family).example(); }

const Family& Problem::type() const { return find_family(family); }

static const DimSpec* dim_spec(const std::string& family, const std::string& dim) {
  const std::vector<DimSpec>* specs = FamilyRegistry::instance().dims_of(family);
  if (!specs) return nullptr;
  for (const auto& d : *specs)
    if (d.name == dim) return &d;
  return nullptr;
}

int64_t Problem::at(const std::string& dim) const {
  auto it = dims.find(dim);
  if (it != dims.end()) return it->second;
  const DimSpec* d = dim_spec(family, dim);
  if (d && d->has_default) return d->default_value;
  throw std::logic_error("problem " + key() + " has no dimension '" + dim + "'");
}

// Whether a dim is left out of the key and the JSON: at its default, and declared so by the family.
static bool left_out(const std::string& family, const std::string& dim, int64_t value) {
  const DimSpec* d = dim_spec(family, dim);
  return d && !d->keyed_at_default && d->has_default && value == d->default_value;
}

std::string Problem::key() const {
  std::string out = family + "/";
  bool first = true;
  for (const auto& [k, v] : dims) {
    if (left_out(family, k, v)) continue;
    out += (first ? "" : ",") + k + "=" + std::to_string(v);
    first = false;
  }
  return out;
}

json Problem::to_json() const {
  json j;
  j["family"] = family;
  for (const auto& [k, v] : dims)
    if (!left_out(family, k, v)) j[k] = v;
  return j;
}

static std::string range_text(const DimSpec& d) {
  return std::to_string(d.min) + ".." + std::to_string(d.max) + " (" + d.meaning + ")";
}

void validate(Problem& p, const std::string& where) {
  const Family& fam = p.type();
  const auto dims = fam.dims();
  std::string allowed;
  for (const auto& d : dims) allowed += (allowed.empty() ? "" : ", ") + d.name;
  for (const auto& kv : p.dims)
    if (std::none_of(dims.begin(), dims.end(), [&](const DimSpec& d) { return d.name == kv.first; }))
      throw InputError(where + "." + kv.first + ": unknown dimension for family " + fam.name() + "; allowed: " + allowed);
  for (const auto& d : dims) {
    auto it = p.dims.find(d.name);
    if (it == p.dims.end()) {
      if (!d.has_default) throw InputError(where + "." + d.name + ": missing; allowed " + range_text(d));
      p.dims[d.name] = d.default_value;
      continue;
    }
    if (it->second < d.min || it->second > d.max)
      throw InputError(where + "." + d.name + ": " + std::to_string(it->second) + " is out of range; allowed " +
                       range_text(d));
  }
  fam.check(p, where);
}

Problem Problem::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": must be an object with a 'family' and its dimensions");
  if (!j.contains("family") || !j["family"].is_string())
    throw InputError(where + ".family: missing; allowed: " + FamilyRegistry::instance().names_joined());
  Problem p;
  p.family = find_family(j["family"].get<std::string>()).name();
  for (const auto& [k, v] : j.items()) {
    if (k == "family") continue;
    if (!v.is_number_integer()) throw InputError(where + "." + k + ": must be an integer, got " + v.dump());
    p.dims[k] = v.get<int64_t>();
  }
  validate(p, where);
  return p;
}

std::vector<Operand> Problem::operands() const { return type().operands(*this); }

double Problem::direct_flops() const { return type().direct_flops(*this); }

double Problem::min_bytes() const {
  double total = 0;
  for (const auto& o : operands()) total += 4.0 * double(o.elements);
  return total;
}

}  // namespace convtune
