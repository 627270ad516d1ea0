// Several GPUs of one host in one sweep (--devices): which GPUs, whether their records may share a run
// folder, and how a worker process is pinned to one of them.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.h"

namespace convtune {

using json = nlohmann::json;

// "all", or a comma list of distinct GPU indices below `visible` ("0,2,3"). Throws InputError naming
// --devices and the allowed values.
std::vector<int> parse_device_list(const std::string& text, int visible);

// "" when the devices' records may share one run folder: the same model, compute capability, SM count,
// maximum clocks and driver. Otherwise one line naming the first difference (DeviceInfo::ordinal is the
// index it names).
std::string device_mix_difference(const std::vector<DeviceInfo>& devices);

// The devices grouped by what device_mix_difference compares, groups in order of first appearance
// (--split-by-model: one run folder per group).
std::vector<std::vector<DeviceInfo>> group_by_model(const std::vector<DeviceInfo>& devices);

// The CUDA_VISIBLE_DEVICES value that shows a child process only GPU `index` of this process's numbering.
// `inherited` is this process's own CUDA_VISIBLE_DEVICES (or null): index i is its i-th entry then.
std::string visible_devices_pin(int index, const char* inherited);

// What every record carries: {"index": i, "uuid": "GPU-..."}.
json gpu_tag(int index, const std::string& uuid);

// "gpu<i>": how progress lines and inflight files name GPU i.
std::string gpu_name(int index);

}  // namespace convtune
