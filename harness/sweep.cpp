#include "harness/sweep.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <future>
#include <mutex>
#include <ostream>
#include <sstream>
#include <thread>

#include "harness/error.h"
#include "harness/gpu_set.h"
#include "harness/json_file.h"
#include "harness/pack.h"
#include "harness/records.h"
#include "harness/run_folder.h"
#include "harness/stop_signal.h"
#include "harness/sweep_worker.h"
#include "harness/work_claims.h"

namespace convtune {

namespace fs = std::filesystem;

namespace {

// The supervisor's lines, each written whole: several threads (one per GPU) and the workers share the stream.
class LineLog {
 public:
  explicit LineLog(std::ostream& out) : out_(out) {}
  void line(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    out_ << text + "\n" << std::flush;
  }
  std::ostream& stream() { return out_; }

 private:
  std::ostream& out_;
  std::mutex mutex_;
};

// A worker process for one GPU: its command line and its environment, pinned to that GPU.
struct WorkerLaunch {
  int gpu;
  std::vector<std::string> args, env;
};

WorkerLaunch worker_launch(const SweepSpec& spec, const SweepOptions& options, const std::vector<std::string>& argv,
                           const fs::path& folder, int gpu, bool prepare) {
  WorkerLaunch w{gpu, {argv.empty() ? "convtune" : argv[0], "sweep", options.spec_path, "--worker-for", folder.string(),
                       "--worker-gpu", std::to_string(gpu)}, {}};
  if (prepare) w.args.push_back("--worker-prepare");
  if (options.seed) w.args.insert(w.args.end(), {"--seed", std::to_string(options.seed)});
  if (!spec.measure.cold) w.args.push_back("--hot");
  if (options.quiet) w.args.push_back("--quiet");
  if (!options.ceilings) w.args.push_back("--no-ceilings");
  if (options.shard.active()) w.args.insert(w.args.end(), {"--shard", options.shard.text()});
  // With one GPU visible the worker sees it anyway: its environment stays as it is (MIG setups included).
  const bool pin = DeviceInfo::count() > 1;
  const std::string variable = "CUDA_VISIBLE_DEVICES=";
  for (char** e = environ; *e; ++e)
    if (!pin || std::strncmp(*e, variable.c_str(), variable.size()) != 0) w.env.push_back(*e);
  if (pin) w.env.push_back(variable + visible_devices_pin(gpu, std::getenv("CUDA_VISIBLE_DEVICES")));
  return w;
}

// Starts the worker; returns its pid. Everything the child needs is made before fork: the supervisor has threads.
pid_t spawn(const WorkerLaunch& w) {
  std::vector<char*> args, env;
  for (const auto& a : w.args) args.push_back(const_cast<char*>(a.c_str()));
  for (const auto& e : w.env) env.push_back(const_cast<char*>(e.c_str()));
  args.push_back(nullptr);
  env.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot fork a sweep worker");
  if (pid == 0) {
    execve("/proc/self/exe", args.data(), env.data());
    static const char message[] = "convtune: cannot start the sweep worker\n";
    (void)!write(STDERR_FILENO, message, sizeof message - 1);
    _exit(127);
  }
  return pid;
}

std::string describe_exit(int wstatus) {
  if (WIFSIGNALED(wstatus)) return std::string("the worker died of signal ") + strsignal(WTERMSIG(wstatus));
  return "the worker exited with code " + std::to_string(WEXITSTATUS(wstatus));
}

bool candidate_ran_past(const fs::path& inflight, double timeout_s) {
  std::error_code ec;
  if (!fs::exists(inflight, ec)) return false;
  try {
    return double(std::time(nullptr)) - read_json(inflight).value("started_unix", 0.0) > timeout_s;
  } catch (const std::exception&) {
    return false;  // being rewritten: look again next time
  }
}

struct WorkerEnd {
  int wstatus = 0;
  bool timed_out = false;
};

// Waits for the worker, killing it when its candidate runs past the timeout; a stop (Ctrl-C, SIGTERM, or
// another GPU's fatal error) is forwarded to it once, and it stops after its candidate.
WorkerEnd wait_for_worker(pid_t pid, const fs::path& inflight, double timeout_s, const std::atomic<bool>& abort_all) {
  WorkerEnd end;
  bool forwarded = false;
  for (;;) {
    if (waitpid(pid, &end.wstatus, WNOHANG) == pid) return end;
    if ((stop_requested() || abort_all) && !forwarded) {
      kill(pid, SIGINT);
      forwarded = true;
    }
    if (candidate_ran_past(inflight, timeout_s)) {
      kill(pid, SIGKILL);
      waitpid(pid, &end.wstatus, 0);
      end.timed_out = true;
      return end;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// How one GPU's succession of workers ended.
struct SlotOutcome {
  bool interrupted = false;
  bool refused = false;  // a worker refused its input (exit 2): the whole sweep stops
  std::string gave_up;   // why this GPU stopped for good; empty when it did not
};

constexpr int kWorkerExitInputError = 2;

// Runs workers for one GPU until one finishes: a crash or a timeout is recorded against the candidate in
// the GPU's inflight file and a new worker goes on; the other GPUs' workers are not touched.
SlotOutcome supervise_worker(const WorkerLaunch& w, const fs::path& folder, double timeout_s,
                             std::atomic<bool>& abort_all, LineLog& log) {
  const std::string who = gpu_name(w.gpu) + ": ";
  const fs::path inflight = inflight_path(folder, w.gpu);
  SlotOutcome out;
  int restarts = 0, startup_failures = 0;
  for (;;) {
    const WorkerEnd end = wait_for_worker(spawn(w), inflight, timeout_s, abort_all);
    const auto exited_as = [&](int code) { return WIFEXITED(end.wstatus) && WEXITSTATUS(end.wstatus) == code; };
    const bool stopping = stop_requested() || abort_all;
    if (stopping && !end.timed_out && !exited_as(kWorkerExitDone) && !exited_as(kWorkerExitContextLost)) {
      // However the worker ended, no new one starts. A candidate it was running when it died is not its
      // fault: it runs again on --resume.
      std::error_code ec;
      fs::remove(inflight, ec);
      out.interrupted = true;
      return out;
    }
    if (end.timed_out) {
      char why[128];
      std::snprintf(why, sizeof why, "killed after %.0f s (budget.candidate_timeout_s)", timeout_s);
      record_inflight(folder, status::timeout, why, w.gpu);
      std::ostringstream line;
      line << who << "a candidate ran past " << timeout_s << " s: recorded as timeout";
      log.line(line.str());
    } else if (exited_as(kWorkerExitDone)) {
      return out;
    } else if (exited_as(kWorkerExitInterrupted)) {
      out.interrupted = true;
      return out;
    } else if (exited_as(kWorkerExitContextLost)) {
      // The worker recorded the candidate itself.
    } else if (exited_as(kWorkerExitInputError)) {
      out.refused = true;
      abort_all = true;
      return out;
    } else if (!record_inflight(folder, status::runtime_error, describe_exit(end.wstatus) + " while this candidate ran", w.gpu)) {
      // Died before any candidate: often the GPU still tearing down the context of a killed worker.
      // Wait and try again a few times before giving up.
      if (++startup_failures > 4) {
        out.gave_up = describe_exit(end.wstatus) + " outside any candidate, " + std::to_string(startup_failures) + " times";
        return out;
      }
      log.line(who + describe_exit(end.wstatus) + " before its first candidate; retrying in " +
               std::to_string(1 << startup_failures) + " s");
      std::this_thread::sleep_for(std::chrono::seconds(1 << startup_failures));
      continue;
    } else {
      log.line(who + describe_exit(end.wstatus) + ": recorded as runtime_error, a new worker goes on");
    }
    startup_failures = 0;
    if (stop_requested() || abort_all) {
      out.interrupted = true;
      return out;
    }
    if (++restarts > 1000) {
      out.gave_up = "its workers failed more than 1000 times";
      return out;
    }
  }
}

std::vector<DeviceInfo> describe_devices(const std::vector<int>& indices) {
  std::vector<DeviceInfo> devices;
  for (int i : indices.empty() ? std::vector<int>{0} : indices) devices.push_back(DeviceInfo::properties(i));
  return devices;
}

// Checks a folder to resume against the options and GPUs before anything in it changes.
fs::path resumed_run_folder(const SweepOptions& options, const std::vector<DeviceInfo>& devices, LineLog& log) {
  const fs::path folder = options.resume;
  if (!fs::exists(folder / "summary.json"))
    throw InputError("--resume: " + folder.string() + " is not a run folder (no summary.json)");
  const json summary = read_json(folder / "summary.json");
  const Shard recorded = Shard::from_json(summary.value("shard", json()), "--resume: " + (folder / "summary.json").string() + ": shard");
  if (options.shard.active() && options.shard.text() != recorded.text())
    throw InputError("--shard: " + folder.string() + " is shard " + recorded.text() + ", not " + options.shard.text() +
                     "; a resumed run keeps its shard (leave --shard out)");
  const std::string model = summary.value("device", json::object()).value("name", "");
  for (const DeviceInfo& d : devices)
    if (d.name != model)
      throw InputError("--resume: " + folder.string() + " was recorded on '" + model + "', GPU " +
                       std::to_string(d.ordinal) + " is '" + d.name + "'");
  // The whole sweep stopped (killed, machine lost) while candidates ran: nothing says they were at fault,
  // so they run again; every unit is handed out again, and the finished ones replay from their records.
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().filename().string().rfind("inflight", 0) == 0) fs::remove(entry.path());
  WorkClaims::clear(folder);
  // Records are appended to the plain files: a packed run (convtune pack) is unpacked first.
  if (is_packed(folder))
    log.line("--resume: " + folder.string() + " was packed: unpacked " + describe_converted(unpack_run(folder)));
  return folder;
}

// summary.json lists every GPU that worked on the run (by UUID; a resumed run may add some).
void note_devices(const fs::path& folder, const std::vector<DeviceInfo>& devices, bool quiet, LineLog& log) {
  std::string measured_on;
  update_summary(folder, [&](json& summary) {
    json listed = summary.value("devices", json::array());
    for (const DeviceInfo& d : devices) {
      const json entry = {{"index", d.ordinal}, {"uuid", d.uuid}, {"name", d.name}};
      auto same = std::find_if(listed.begin(), listed.end(), [&](const json& e) { return e.value("uuid", "") == d.uuid; });
      if (same == listed.end()) listed.push_back(entry);
      else *same = entry;
    }
    summary["devices"] = listed;
    if (summary.contains("ceilings_gpu")) measured_on = gpu_name(summary["ceilings_gpu"].value("index", 0));
  });
  if (quiet || devices.size() < 2) return;
  std::string names;
  for (const DeviceInfo& d : devices) names += (names.empty() ? "" : ", ") + gpu_name(d.ordinal);
  log.line(std::to_string(devices.size()) + " GPUs, one model (" + devices.front().name + "): " + names +
           (measured_on.empty() ? "" : "; ceilings measured once, on " + measured_on + ", used for all"));
}

struct RunOutcome {
  bool interrupted = false, refused = false, context_lost = false;
  std::vector<std::string> failures;  // GPUs given up, each with why
};

// --in-process: one GPU, no worker process (a crashing candidate ends the sweep).
RunOutcome run_in_process(const SweepSpec& spec, const SweepOptions& options, const std::vector<std::string>& argv,
                          const fs::path& folder, const DeviceInfo& device, LineLog& log) {
  SweepOptions own = options;
  own.worker_gpu = device.ordinal;
  const DeviceInfo dev = DeviceInfo::query(device.ordinal);
  prepare_folder(spec, folder, own, dev, argv, log.stream());
  note_devices(folder, {device}, options.quiet, log);
  const int rc = measure_folder(spec, folder, own, dev, log.stream());
  RunOutcome out;
  out.context_lost = rc == kWorkerExitContextLost;
  out.interrupted = rc == kWorkerExitInterrupted;
  return out;
}

// One GPU's workers, in their own thread. A GPU given up hands its units back to the others.
SlotOutcome supervise_gpu(const WorkerLaunch& launch, const fs::path& folder, double timeout_s,
                          std::atomic<bool>& abort_all, LineLog& log) {
  SlotOutcome out;
  try {
    out = supervise_worker(launch, folder, timeout_s, abort_all, log);
  } catch (const std::exception& e) {
    out.gave_up = e.what();
  }
  if (!out.gave_up.empty()) {
    const size_t released = WorkClaims::release(folder, launch.gpu);
    log.line(gpu_name(launch.gpu) + ": given up (" + out.gave_up + "); its " + std::to_string(released) +
             " work unit(s) go back to the other GPUs");
  }
  return out;
}

// The folder prepared by a worker on the first GPU, then one worker per GPU, all at once.
RunOutcome run_workers(const SweepSpec& spec, const SweepOptions& options, const std::vector<std::string>& argv,
                       const fs::path& folder, const std::vector<DeviceInfo>& devices, LineLog& log) {
  RunOutcome out;
  std::atomic<bool> abort_all{false};
  const double timeout_s = spec.budget.candidate_timeout_s;
  const SlotOutcome prepared = supervise_worker(worker_launch(spec, options, argv, folder, devices.front().ordinal, true),
                                                folder, timeout_s, abort_all, log);
  if (!prepared.gave_up.empty())
    throw std::runtime_error("preparing " + folder.string() + " on " + gpu_name(devices.front().ordinal) +
                             " failed: " + prepared.gave_up + "; nothing was measured");
  out.refused = prepared.refused;
  out.interrupted = prepared.interrupted;
  if (out.refused || out.interrupted) return out;
  note_devices(folder, devices, options.quiet, log);
  std::vector<std::future<SlotOutcome>> gpus;
  for (const DeviceInfo& d : devices)
    gpus.push_back(std::async(std::launch::async, supervise_gpu,
                              worker_launch(spec, options, argv, folder, d.ordinal, false), folder, timeout_s,
                              std::ref(abort_all), std::ref(log)));
  for (size_t i = 0; i < gpus.size(); ++i) {
    const SlotOutcome o = gpus[i].get();
    out.interrupted = out.interrupted || o.interrupted;
    out.refused = out.refused || o.refused;
    if (!o.gave_up.empty()) out.failures.push_back(gpu_name(devices[i].ordinal) + ": " + o.gave_up);
  }
  return out;
}

// One run folder on `options.devices`; the caller holds the stop-signal handlers.
SweepResult supervise_run(const SweepSpec& spec, const SweepOptions& options, const std::vector<std::string>& argv,
                          LineLog& log) {
  require_gpu("convtune sweep");
  const std::vector<DeviceInfo> devices = describe_devices(options.devices);
  if (const std::string difference = device_mix_difference(devices); !difference.empty()) throw InputError(difference);
  if (!options.isolate && devices.size() > 1)
    throw InputError("--in-process: runs on one GPU; give --devices one index, or leave out --in-process");
  SweepResult result;
  result.folder = options.resume.empty() ? new_run_folder(spec, options, devices.front())
                                         : resumed_run_folder(options, devices, log);
  if (!options.quiet) log.line("run folder: " + result.folder.string());
  const RunOutcome run = options.isolate ? run_workers(spec, options, argv, result.folder, devices, log)
                                         : run_in_process(spec, options, argv, result.folder, devices.front(), log);
  result.interrupted = run.interrupted || run.refused;
  result.context_lost = run.context_lost;
  WorkClaims::clear(result.folder);  // a resumed run hands its units out again anyway
  if (fs::exists(result.folder / "summary.json"))
    result.counts = finalize_summary(result.folder, result.interrupted, argv)["counts"];
  if (run.refused) throw InputError("the sweep worker refused its input (see above)");
  if (!run.failures.empty()) {
    std::string why;
    for (const auto& f : run.failures) why += (why.empty() ? "" : "; ") + f;
    throw std::runtime_error(why + ". The other GPUs took what they could of its work; the records are in " +
                             result.folder.string() + ", and --resume " + result.folder.string() +
                             " finishes what is left");
  }
  return result;
}

}  // namespace

SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options, const std::vector<std::string>& argv,
                      std::ostream& log) {
  LineLog lines(log);
  StopSignals signals;  // Ctrl-C also reaches the workers through the terminal's process group
  return supervise_run(spec, options, argv, lines);
}

std::vector<SweepResult> run_sweep_split_by_model(const SweepSpec& spec, const SweepOptions& options,
                                                  const std::vector<std::string>& argv, std::ostream& log) {
  require_gpu("convtune sweep");
  if (!options.resume.empty())
    throw InputError("--split-by-model: starts one run folder per GPU model; resume each folder on its own "
                     "(--resume <folder> --devices <its GPUs>)");
  if (!options.isolate) throw InputError("--split-by-model: runs worker processes; leave out --in-process");
  LineLog lines(log);
  StopSignals signals;
  std::vector<std::future<SweepResult>> runs;
  for (const auto& group : group_by_model(describe_devices(options.devices))) {
    SweepOptions own = options;
    own.devices.clear();
    for (const DeviceInfo& d : group) own.devices.push_back(d.ordinal);
    runs.push_back(std::async(std::launch::async, [&spec, &argv, &lines, own] { return supervise_run(spec, own, argv, lines); }));
  }
  std::vector<SweepResult> results;
  std::exception_ptr first_error;
  for (auto& run : runs) try {
      results.push_back(run.get());
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  if (first_error) std::rethrow_exception(first_error);
  return results;
}

}  // namespace convtune
