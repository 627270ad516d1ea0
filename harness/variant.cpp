#include "harness/variant.h"

#include <algorithm>

#include "harness/error.h"

namespace convtune {

Status wgmma_supported(const DeviceInfo& dev) {
  if (dev.cc_major == 9 && dev.cc_minor == 0) return Status::yes();
  return Status::no("wgmma needs compute capability 9.0 (this device is " + std::to_string(dev.cc_major) + "." +
                    std::to_string(dev.cc_minor) + ")");
}

json Cost::to_json() const {
  return {{"flops", flops}, {"flops_variant", flops_variant}, {"bytes_min", bytes_min}, {"bytes_model", bytes_model}};
}

Registry& Registry::instance() {
  static Registry r;
  return r;
}

void Registry::add(std::unique_ptr<Variant> v) {
  if (find(v->name())) throw std::logic_error("variant registered twice: " + v->name());
  by_name_.emplace(v->name(), v.get());
  variants_.push_back(std::move(v));
  std::sort(variants_.begin(), variants_.end(), [](const auto& a, const auto& b) { return a->name() < b->name(); });
}

const Variant* Registry::find(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::string Registry::names_joined() const {
  std::string out;
  for (const auto& v : variants_) out += (out.empty() ? "" : ", ") + v->name();
  return out;
}

const Variant& Registry::get(const std::string& name) const {
  if (const Variant* v = find(name)) return *v;
  throw InputError("unknown variant '" + name + "'; allowed: " + names_joined());
}

std::vector<const Variant*> Registry::all() const {
  std::vector<const Variant*> out;
  for (const auto& v : variants_) out.push_back(v.get());
  return out;
}

std::vector<const Variant*> Registry::of_family(const std::string& family) const {
  std::vector<const Variant*> out;
  for (const auto& v : variants_)
    if (v->family() == family) out.push_back(v.get());
  return out;
}

bool glob_match(const std::string& pattern, const std::string& text) {
  // '*' matches any run of characters, '?' one character.
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<const Variant*> Registry::match(const std::string& pattern) const {
  std::vector<const Variant*> out;
  for (const auto& v : variants_)
    if (glob_match(pattern, v->name())) out.push_back(v.get());
  if (out.empty()) throw InputError("no variant matches '" + pattern + "'; allowed: " + names_joined());
  return out;
}

}  // namespace convtune
