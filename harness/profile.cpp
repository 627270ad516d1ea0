#include "harness/profile.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <thread>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "harness/device.h"
#include "harness/error.h"
#include "harness/jit.h"
#include "harness/ncu_profile.h"
#include "harness/pack.h"
#include "harness/nvtx.h"
#include "harness/records.h"
#include "harness/runner.h"
#include "harness/select.h"
#include "harness/variant.h"

namespace convtune {

namespace fs = std::filesystem;

std::string profile_key(const json& record) {
  return record.at("problem_key").get<std::string>() + " " + record.at("candidate").get<std::string>();
}


// Per problem: its ok full-fidelity records, fastest first.
static std::map<std::string, std::vector<json>> ranked(const std::vector<json>& records) {
  std::map<std::string, std::vector<json>> out;
  for (const auto& r : records)
    if (r.value("status", "") == status::ok && r.contains("time") && r.value("fidelity", "full") != "brief")
      out[r.value("problem_key", "")].push_back(r);
  for (auto& [key, list] : out)
    std::stable_sort(list.begin(), list.end(), [](const json& a, const json& b) { return record_median_ms(a) < record_median_ms(b); });
  return out;
}

std::vector<ProfileTarget> choose_profile_targets(const std::vector<json>& records, const ProfileSelection& sel) {
  std::vector<ProfileTarget> out;
  const auto by_problem = ranked(records);
  for (const Choice& c : select_best(records)) {
    if (!sel.problem.empty() && c.problem_key.find(sel.problem) == std::string::npos) continue;
    const std::vector<json>& ok = by_problem.at(c.problem_key);
    std::vector<std::string> taken;
    auto add = [&](const json& r, const std::string& why) {
      const std::string name = r["candidate"].get<std::string>();
      if (std::find(taken.begin(), taken.end(), name) != taken.end()) return;
      taken.push_back(name);
      out.push_back({r, why});
    };
    if (!sel.candidate.empty()) {
      for (const auto& r : ok)
        if (r["candidate"].get<std::string>().find(sel.candidate) != std::string::npos) add(r, "asked");
      continue;
    }
    add(c.best, "best");
    for (size_t i = 0; i < ok.size() && static_cast<int>(taken.size()) < sel.top; ++i)
      add(ok[i], "top " + std::to_string(taken.size() + 1));
    if (!sel.libraries) continue;
    const json* lib = nullptr;
    for (const auto& [variant, r] : c.best_per_variant)
      if (r.value("library", false) && (!lib || record_median_ms(r) < record_median_ms(*lib))) lib = &r;
    if (lib) add(*lib, "best_library");
  }
  return out;
}

static bool executable(const fs::path& p) { return !p.empty() && access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p); }

std::string find_ncu() {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string dir; std::getline(ss, dir, ':');)
      if (!dir.empty() && executable(fs::path(dir) / "ncu")) return (fs::path(dir) / "ncu").string();
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* home = std::getenv(var))
      if (executable(fs::path(home) / "bin" / "ncu")) return (fs::path(home) / "bin" / "ncu").string();
  if (executable("/usr/local/cuda/bin/ncu")) return "/usr/local/cuda/bin/ncu";
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/opt/nvidia/nsight-compute", ec))
    if (executable(e.path() / "ncu")) found.push_back(e.path() / "ncu");
  std::sort(found.begin(), found.end());
  return found.empty() ? "" : found.back().string();
}

namespace {

constexpr int kTimedOut = 124;  // as timeout(1) says it

// Runs args[0] with its output (stdout and stderr) to `out`; returns its exit status (128 + signal), or
// kTimedOut after killing it and everything it started when it runs past timeout_s.
int run_process(const std::vector<std::string>& args, const fs::path& out, double timeout_s) {
  std::vector<char*> cargs;
  for (const auto& a : args) cargs.push_back(const_cast<char*>(a.c_str()));
  cargs.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot fork to run " + args[0]);
  if (pid == 0) {
    setpgid(0, 0);  // its own process group: a timeout kills ncu and the worker it started
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(cargs[0], cargs.data());
    std::perror(("cannot start " + args[0]).c_str());
    _exit(127);
  }
  const auto start = std::chrono::steady_clock::now();
  int wstatus = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return 127;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s) {
      kill(-pid, SIGKILL);
      while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
      }
      return kTimedOut;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ncu's error lines ("==ERROR== ..."), or the last lines of its output when it printed none.
std::string ncu_errors(const std::string& log) {
  std::string errors, line;
  std::stringstream ss(log);
  std::vector<std::string> lines;
  while (std::getline(ss, line)) {
    lines.push_back(line);
    if (line.rfind("==ERROR==", 0) == 0) errors += (errors.empty() ? "" : " ") + line.substr(10);
  }
  if (!errors.empty()) return errors;
  for (size_t i = lines.size() > 3 ? lines.size() - 3 : 0; i < lines.size(); ++i) errors += lines[i] + " ";
  return errors;
}

// A profiler that cannot read counters at all is the user's to fix, not a candidate's failure.
void check_counters_permitted(const std::string& log) {
  if (log.find("ERR_NVGPUCTRPERM") != std::string::npos)
    throw InputError("profile: this user may not read the GPU's performance counters (ncu: "
                     "ERR_NVGPUCTRPERM); run as root or load the driver with NVreg_RestrictProfilingToAdminUsers=0");
  if (log.find("LibraryNotLoaded") != std::string::npos || log.find("Failed to initialize the profiler") != std::string::npos)
    throw InputError("profile: ncu cannot read hardware counters here (" + ncu_errors(log) +
                     "); sandboxed runtimes such as gVisor do not expose them");
}

std::string ncu_version(const std::string& ncu, const fs::path& scratch) {
  run_process({ncu, "--version"}, scratch, 60);
  std::stringstream ss(read_text(scratch));
  std::string line, version;
  while (std::getline(ss, line))
    if (line.rfind("Version ", 0) == 0) version = line.substr(8, line.find(' ', 8) - 8);
  fs::remove(scratch);
  return version;
}

std::string slug(const std::string& text) {
  std::string out;
  for (char ch : text) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '-';
  return out.substr(0, 80);
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::vector<std::string> ncu_command(const std::string& ncu, const fs::path& report, const fs::path& targets, int device) {
  std::vector<std::string> args = {ncu, "--clock-control", "none", "--nvtx", "--nvtx-include",
                                   std::string(kNvtxDomain) + "@" + kNvtxTimed + "]", "--metrics", join(ncu_metrics(), ",")};
  // The sections make the saved report readable in Nsight Compute's own views as well.
  for (const char* s : {"SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "MemoryWorkloadAnalysis"}) {
    args.push_back("--section");
    args.push_back(s);
  }
  const std::vector<std::string> rest = {"--export", report.string(), "--force-overwrite",
                                        fs::read_symlink("/proc/self/exe").string(), "profile", "--worker",
                                        targets.string(), "--device", std::to_string(device)};
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

json profile_record(const ProfileTarget& t, const std::vector<NcuKernel>& kernels, const json& common) {
  const json& r = t.record;
  json p = common;
  p["schema"] = 1;
  for (const char* k : {"problem_key", "candidate", "variant", "family", "library", "flops", "bytes_min", "bytes_model"})
    p[k] = r.value(k, json());
  p["why"] = t.why;
  p["record_key"] = record_key(r);
  p["time_ms"] = record_median_ms(r);
  p["timestamp"] = now_iso();
  const std::string range = nvtx_candidate_range(r["candidate"].get<std::string>(), r["problem_key"].get<std::string>());
  std::vector<NcuKernel> mine;
  for (const auto& k : kernels)
    for (const auto& [domain, message] : k.nvtx)
      if (domain == kNvtxDomain && message == range) mine.push_back(k);
  if (mine.empty()) {
    p["status"] = "failed";
    p["reason"] = "no kernel of its timed range was profiled";
    return p;
  }
  p["status"] = "ok";
  p["kernels"] = json::array();
  for (const auto& k : mine) p["kernels"].push_back(kernel_json(k));
  p["metrics"] = aggregate_kernels(mine);
  p["derived"] = derive(p["metrics"], r.value("flops", 0.0), r.value("bytes_model", 0.0));
  return p;
}

// What the worker said of this candidate, e.g. ": wrong_result (...)".
std::string worker_line(const std::string& log, const json& r) {
  const std::string head = "convtune profile worker: " + nvtx_candidate_range(r["candidate"].get<std::string>(),
                                                                             r["problem_key"].get<std::string>());
  const auto at = log.find(head);
  if (at == std::string::npos) return " (the worker did not reach it)";
  return " (worker" + log.substr(at + head.size(), log.find('\n', at) - at - head.size()) + ")";
}

// One ncu session for one problem's targets (they share the problem's buffers and reference).
void profile_group(const std::vector<ProfileTarget>& group, const std::string& ncu, const ProfileOptions& o,
                   const json& common, RecordWriter& out, std::ostream& log, int& ok) {
  std::string stamp;
  for (char ch : now_iso()) if (std::isdigit(static_cast<unsigned char>(ch)) || ch == 'T') stamp += ch;
  const std::string base = stamp + "-" + slug(group.front().record["problem_key"].get<std::string>());
  const fs::path dir = o.folder / "profiles";
  const fs::path targets = dir / (base + ".targets.json"), report = dir / (base + ".ncu-rep");
  json list = json::array();
  for (const auto& t : group)
    list.push_back({{"variant", t.record["variant"]}, {"problem", t.record["problem"]}, {"config", t.record["config"]}});
  std::ofstream(targets) << list.dump(1) << "\n";
  const int rc = run_process(ncu_command(ncu, report, targets, o.device), dir / (base + ".log"), o.timeout_s);
  const std::string ncu_log = read_text(dir / (base + ".log"));
  check_counters_permitted(ncu_log);
  std::string failure;
  std::vector<NcuKernel> kernels;
  if (rc == kTimedOut) {
    failure = "ncu ran past " + std::to_string(int(o.timeout_s)) + " s (--timeout) and was killed";
  } else if (!fs::exists(report)) {
    failure = "ncu exited with status " + std::to_string(rc) + " and wrote no report: " + ncu_errors(ncu_log);
  } else {
    const fs::path csv = dir / (base + ".csv");
    run_process({ncu, "--import", report.string(), "--csv", "--page", "raw", "--print-units", "base"}, csv, o.timeout_s);
    try {
      kernels = parse_ncu_raw_csv(read_text(csv));
    } catch (const InputError& e) {
      failure = e.what();
    }
  }
  json with_report = common;
  with_report["ncu"]["report"] = fs::relative(report, o.folder).string();
  for (const auto& t : group) {
    json p = profile_record(t, kernels, with_report);
    if (!failure.empty()) p["reason"] = failure;
    else if (p["status"] != "ok") p["reason"] = p["reason"].get<std::string>() + worker_line(ncu_log, t.record);
    ok += p["status"] == "ok";
    out.append(p);
    if (!o.quiet)
      log << "  " << p["candidate"].get<std::string>() << " @ " << p["problem_key"].get<std::string>() << ": "
          << (p["status"] == "ok" ? p["derived"].value("limiter", std::string("profiled"))
                                  : "failed: " + p["reason"].get<std::string>())
          << "\n";
  }
}

}  // namespace

std::string require_ncu(const std::string& given) {
  if (!given.empty()) {
    if (!executable(given)) throw InputError("profile: --ncu " + given + " is not an executable file");
    return given;
  }
  const std::string ncu = find_ncu();
  if (ncu.empty())
    throw InputError("profile: Nsight Compute (ncu) was not found on PATH, in $CUDA_HOME/bin, "
                     "/usr/local/cuda/bin or /opt/nvidia/nsight-compute/*/; install it or put ncu on PATH");
  return ncu;
}

int profile_targets(const std::vector<ProfileTarget>& targets, const ProfileOptions& o, std::ostream& log) {
  const std::string ncu = require_ncu(o.ncu);
  fs::create_directories(o.folder / "profiles");
  json common = {{"ncu", {{"path", ncu}, {"version", ncu_version(ncu, o.folder / "profiles" / ".version")},
                          {"clock_control", "none"}}}};
  const json summary = json::parse(read_text(o.folder / "summary.json"), nullptr, false);
  if (summary.is_object() && summary.contains("device")) common["device"] = summary["device"].value("name", "");
  if (!o.quiet) log << "profiling " << targets.size() << " candidates with " << ncu << "\n";
  // Profiles are appended to the plain profiles.jsonl: a packed run is unpacked first.
  if (is_packed(o.folder))
    log << "profile: " << o.folder.string() << " was packed: unpacked " << describe_converted(unpack_run(o.folder)) << "\n";
  RecordWriter out(o.folder / "profiles.jsonl");
  int ok = 0;
  for (size_t i = 0; i < targets.size();) {
    size_t j = i;
    while (j < targets.size() && targets[j].record["problem_key"] == targets[i].record["problem_key"]) ++j;
    profile_group({targets.begin() + long(i), targets.begin() + long(j)}, ncu, o, common, out, log, ok);
    i = j;
  }
  return ok;
}

int run_profile_worker(const fs::path& targets_file, int device) {
  const json list = json::parse(read_text(targets_file));
  const DeviceInfo dev = DeviceInfo::query(device);
  JitCache jit(JitCache::default_dir(), dev.arch());
  MeasureOptions once;
  once.warmup = 1;  // outside the timed range: first-launch costs stay out of the counters
  once.min_samples = once.max_samples = 1;
  Runner runner(dev, Ceilings{}, once, jit, 1);
  runner.guard_clocks(false);
  int failures = 0;
  for (const auto& t : list) {
    const Variant& v = Registry::instance().get(t["variant"].get<std::string>());
    const Problem p = Problem::from_json(t["problem"], "profile target");
    const json r = runner.run(v, p, t["config"]);
    failures += r["status"] != status::ok;
    std::cerr << "convtune profile worker: " << r["candidate"].get<std::string>() << " @ " << p.key() << ": "
              << r["status"].get<std::string>() << (r.contains("reason") ? " (" + r["reason"].get<std::string>() + ")" : "")
              << "\n";
    if (r.value("context_lost", false)) return 1;
  }
  return failures ? 1 : 0;
}

std::map<std::string, json> read_profiles(const fs::path& folder) {
  std::map<std::string, json> out;
  if (!records_file_exists(folder / "profiles.jsonl")) return out;
  for (const auto& p : read_records(folder / "profiles.jsonl").records)
    if (p.contains("problem_key") && p.contains("candidate")) out[profile_key(p)] = p;
  return out;
}

}  // namespace convtune
