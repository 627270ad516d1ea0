#include "harness/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "harness/error.h"
#include "harness/gpu_set.h"
#include "harness/json_file.h"
#include "harness/plugin.h"
#include "harness/records.h"
#include "harness/sweep_plan.h"

namespace convtune {

namespace fs = std::filesystem;

static std::string timestamp_compact() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
  return buf;
}

fs::path new_run_folder(const SweepSpec& spec, const SweepOptions& options, const DeviceInfo& dev) {
  make_plan(spec, dev);  // bad shapes fail here, before a folder exists
  const std::string shard =
      options.shard.active() ? "-shard" + std::to_string(options.shard.index) + "of" + std::to_string(options.shard.count) : "";
  const fs::path folder = options.results_root / dev.slug() / (spec.name + shard + "-" + timestamp_compact());
  fs::create_directories(folder);
  return folder;
}

void open_run_folder(const SweepSpec& spec, const fs::path& folder, const DeviceInfo& dev, const SweepOptions& options,
                     const std::vector<std::string>& argv, std::ostream& log) {
  fs::create_directories(folder);
  json summary;
  if (fs::exists(folder / "summary.json")) {
    summary = read_json(folder / "summary.json");
    if (summary.value("device", json::object()).value("name", "") != dev.name)
      throw InputError("--resume: " + folder.string() + " was recorded on '" +
                       summary.value("device", json::object()).value("name", "?") + "', this GPU is '" + dev.name + "'");
  }
  if (!summary.is_object() || !summary.contains("ceilings")) {
    Ceilings ceilings;
    if (!options.quiet && options.ceilings)
      log << "measuring ceilings on " + gpu_name(options.worker_gpu) + " (" + dev.name + ")...\n";
    if (options.ceilings) ceilings = measure_ceilings(dev);
    summary = make_summary(spec, dev, ceilings, argv);
    summary["finished"] = nullptr;
    if (options.ceilings) summary["ceilings_gpu"] = gpu_tag(options.worker_gpu, dev.uuid);
    if (options.shard.active()) summary["shard"] = options.shard.to_json();
    if (!options.quiet) {
      std::ostringstream line;
      line << dev.name << " (" << dev.arch() << ", " << dev.sms << " SMs, L2 " << dev.l2_bytes / (1 << 20)
           << " MiB): copy " << std::fixed << std::setprecision(0) << ceilings.copy_gbps << " GB/s, FP32 "
           << ceilings.fp32_gflops << " GFLOP/s\n";
      log << line.str();
    }
  }
  // The strategy's seed is kept in the summary, so that a resumed run retraces the same proposals.
  if (!summary.contains("strategy_seed"))
    summary["strategy_seed"] = options.seed ? options.seed : static_cast<uint64_t>(std::time(nullptr));
  write_json_atomically(folder / "summary.json", summary);
}

json make_summary(const SweepSpec& spec, const DeviceInfo& dev, const Ceilings& ceilings,
                  const std::vector<std::string>& argv) {
  json summary = {{"schema", kSchemaVersion}, {"tool", "convtune"},         {"version", CONVTUNE_VERSION},
                  {"git_sha", CONVTUNE_GIT_SHA}, {"argv", argv},            {"spec", spec.source},
                  {"device", dev.to_json()},  {"ceilings", ceilings.to_json()}, {"measure", spec.measure.to_json()},
                  {"started", now_iso()}};
  // The plug-ins' manifests and sources, so that export, profile and resume need only the run folder.
  if (const json plugins = loaded_plugin_bundles(); !plugins.empty()) summary["plugins"] = plugins;
  return summary;
}

void update_summary(const fs::path& folder, const std::function<void(json&)>& change) {
  const int fd = open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + folder.string());
  while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  try {
    json summary = read_json(folder / "summary.json");
    change(summary);
    write_json_atomically(folder / "summary.json", summary);
  } catch (...) {
    close(fd);  // releases the lock
    throw;
  }
  close(fd);
}

fs::path inflight_path(const fs::path& folder, int gpu) {
  return folder / (gpu < 0 ? std::string("inflight.json") : "inflight-" + gpu_name(gpu) + ".json");
}

bool record_inflight(const fs::path& folder, const std::string& status_value, const std::string& reason, int gpu) {
  const auto path = inflight_path(folder, gpu);
  if (!fs::exists(path)) return false;
  json inflight;
  try {
    inflight = read_json(path);
  } catch (const std::exception&) {
    return false;  // torn while being written: nothing was running yet
  }
  fs::remove(path);
  if (!inflight.contains("record")) return false;
  json rec = inflight["record"];
  std::set<std::string> done;
  if (records_file_exists(folder / "records.jsonl"))
    done = recorded_keys(read_records(folder / "records.jsonl").records);
  if (done.count(record_key(rec))) return false;
  rec["status"] = status_value;
  rec["reason"] = reason;
  RecordWriter(folder / "records.jsonl").append(rec);
  return true;
}

json finalize_summary(const fs::path& folder, bool interrupted, const std::vector<std::string>& argv) {
  std::map<std::string, int> counts;
  json per_gpu = json::object();  // by UUID: indices differ between the machines of merged shards
  if (records_file_exists(folder / "records.jsonl"))
    for (const auto& r : read_records(folder / "records.jsonl").records) {
      counts[r["status"].get<std::string>()]++;
      if (!r.contains("gpu")) continue;
      json& g = per_gpu[r["gpu"].value("uuid", "?")];
      const int earlier = g.is_object() ? g.value("records", 0) : 0;  // null when first seen
      g = {{"index", r["gpu"].value("index", -1)}, {"records", earlier + 1}};
    }
  json out;
  update_summary(folder, [&](json& summary) {
    summary["counts"] = counts;
    if (!per_gpu.empty()) summary["records_per_gpu"] = per_gpu;
    summary["argv"] = argv;
    summary["interrupted"] = interrupted;
    summary["finished"] = interrupted ? json(nullptr) : json(now_iso());
    out = summary;
  });
  return out;
}

}  // namespace convtune
