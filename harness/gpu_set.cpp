#include "harness/gpu_set.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "harness/error.h"

namespace convtune {

namespace {

std::string allowed_indices(int visible) {
  if (visible <= 0) return "allowed: none (no GPU visible here)";
  if (visible == 1) return "allowed: all, or 0 (1 GPU visible here)";
  return "allowed: all, or a comma list of 0.." + std::to_string(visible - 1) + " (" + std::to_string(visible) +
         " GPUs visible here)";
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  if (!text.empty() && text.back() == ',') parts.push_back("");
  return parts;
}

int parse_index(const std::string& token, int visible) {
  const bool digits = !token.empty() && token.size() < 6 && token.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) throw InputError("--devices: '" + token + "' is not a GPU index; " + allowed_indices(visible));
  const int index = std::stoi(token);
  if (index >= visible) throw InputError("--devices: there is no GPU " + token + "; " + allowed_indices(visible));
  return index;
}

// What must agree for records to share a folder, with the words that name each field.
std::vector<std::pair<std::string, std::string>> identity(const DeviceInfo& d) {
  return {{"model", d.name},
          {"compute capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
          {"SM count", std::to_string(d.sms)},
          {"maximum SM clock (kHz)", std::to_string(d.sm_clock_khz)},
          {"maximum memory clock (kHz)", std::to_string(d.mem_clock_khz)},
          {"driver", std::to_string(d.driver_version)}};
}

}  // namespace

std::vector<int> parse_device_list(const std::string& text, int visible) {
  std::vector<int> indices;
  if (text == "all") {
    if (visible <= 0) throw InputError("--devices: 'all' names no GPU; " + allowed_indices(visible));
    for (int i = 0; i < visible; ++i) indices.push_back(i);
    return indices;
  }
  std::set<int> seen;
  for (const std::string& token : split_commas(text)) {
    const int index = parse_index(token, visible);
    if (!seen.insert(index).second)
      throw InputError("--devices: GPU " + token + " is listed twice; " + allowed_indices(visible));
    indices.push_back(index);
  }
  if (indices.empty()) throw InputError("--devices: names no GPU; " + allowed_indices(visible));
  return indices;
}

std::string device_mix_difference(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return "";
  const auto first = identity(devices.front());
  for (const DeviceInfo& d : devices) {
    const auto other = identity(d);
    for (size_t f = 0; f < first.size(); ++f)
      if (other[f].second != first[f].second)
        return "--devices: GPU " + std::to_string(d.ordinal) + " differs from GPU " +
               std::to_string(devices.front().ordinal) + " in " + first[f].first + " ('" + other[f].second +
               "' vs '" + first[f].second + "'); one run folder holds one GPU model at one setting: list GPUs " +
               "that agree, or add --split-by-model for one run folder per model";
  }
  return "";
}

std::vector<std::vector<DeviceInfo>> group_by_model(const std::vector<DeviceInfo>& devices) {
  std::vector<std::vector<DeviceInfo>> groups;
  for (const DeviceInfo& d : devices) {
    auto same = [&](const std::vector<DeviceInfo>& g) { return identity(g.front()) == identity(d); };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) groups.push_back({d});
    else it->push_back(d);
  }
  return groups;
}

std::string visible_devices_pin(int index, const char* inherited) {
  if (!inherited) return std::to_string(index);
  const std::vector<std::string> entries = split_commas(inherited);
  if (index < 0 || size_t(index) >= entries.size())
    throw std::logic_error("GPU " + std::to_string(index) + " is not in CUDA_VISIBLE_DEVICES=" + inherited);
  std::string entry = entries[size_t(index)];
  entry.erase(0, entry.find_first_not_of(' '));
  entry.erase(entry.find_last_not_of(' ') + 1);
  return entry;
}

json gpu_tag(int index, const std::string& uuid) { return {{"index", index}, {"uuid", uuid}}; }

std::string gpu_name(int index) { return "gpu" + std::to_string(index); }

}  // namespace convtune
