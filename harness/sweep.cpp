#include "harness/sweep.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <future>
#include <iomanip>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include "harness/error.h"
#include "harness/gpu_set.h"
#include "harness/pack.h"
#include "harness/records.h"
#include "harness/replay.h"
#include "harness/plugin.h"
#include "harness/runner.h"
#include "harness/strategy.h"
#include "harness/work_claims.h"

extern char** environ;

namespace convtune {

namespace fs = std::filesystem;

size_t SweepPlan::runnable() const {
  size_t n = 0;
  for (const auto& c : candidates) n += c.status.ok;
  return n;
}

json SweepPlan::to_json() const {
  std::map<std::string, json> per_problem;
  for (const auto& c : candidates) {
    json& p = per_problem[c.problem.key()];
    if (p.is_null()) p = {{"problem", c.problem.key()}, {"candidates", 0}, {"skipped", json::object()}};
    if (c.status.ok) {
      p["candidates"] = p["candidates"].get<int>() + 1;
    } else {
      json& s = p["skipped"][c.variant->name()];
      if (!s.is_object()) s = json::object();
      s[c.status.reason] = s.value(c.status.reason, 0) + 1;
    }
  }
  json out = json::array();
  for (auto& [k, v] : per_problem) out.push_back(v);
  return out;
}

SweepPlan make_plan(const SweepSpec& spec, const DeviceInfo& dev) {
  SweepPlan plan;
  for (const auto& p : spec.problems) {
    check_fits(p, dev, "spec.problems");
    for (const Variant* v : spec.variants_for(p))
      for (const auto& cfg : spec.space_for(*v, p, dev).enumerate())
        plan.candidates.push_back({v, p, cfg, v->can_implement(p, cfg, dev)});
  }
  return plan;
}

std::vector<WorkUnit> make_work_units(const SweepPlan& plan, const std::string& strategy, size_t max_evaluations) {
  const bool whole = shard_by_problem(strategy);
  std::vector<WorkUnit> units;
  size_t problem_index = 0, runnable = 0;
  const Problem* problem = nullptr;
  for (const auto& c : plan.candidates) {
    if (!problem || !(*problem == c.problem)) {
      problem = &c.problem;
      ++problem_index;
      runnable = 0;
      if (whole) units.push_back({problem_index, {}, true});
    }
    if (whole) units.back().candidates.push_back(&c);
    else if (!c.status.ok) units.push_back({problem_index, {&c}, false, 0});
    else if (max_evaluations == 0 || runnable < max_evaluations) units.push_back({problem_index, {&c}, false, int(++runnable)});
  }
  return units;
}

static std::string timestamp_compact() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
  return buf;
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

namespace {

std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

// SIGINT and SIGTERM set g_stop_signal while it lives; the old handlers come back after.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    old_int_ = std::signal(SIGINT, on_stop_signal);
    old_term_ = std::signal(SIGTERM, on_stop_signal);
  }
  ~StopSignals() {
    std::signal(SIGINT, old_int_);
    std::signal(SIGTERM, old_term_);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  void (*old_int_)(int);
  void (*old_term_)(int);
};

std::string fmt_seconds(double s) {
  std::ostringstream o;
  if (s >= 60) o << int(s / 60) << "m" << std::setw(2) << std::setfill('0') << int(s) % 60 << "s";
  else o << std::fixed << std::setprecision(1) << s << "s";
  return o.str();
}

std::string gpu_name(int gpu) { return "gpu" + std::to_string(gpu); }

// Compiles every kernel the plan needs, in parallel: NVRTC is the slow part of a cold sweep.
void precompile(const SweepPlan& plan, JitCache& jit, int threads, std::ostream& log, bool quiet) {
  std::vector<JitProgram> programs;
  for (const auto& c : plan.candidates)
    if (c.status.ok)
      for (auto& prog : c.variant->programs(c.problem, c.config)) programs.push_back(std::move(prog));
  if (programs.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  jit.compile_all(programs, threads);
  if (!quiet)
    log << "kernels: " + std::to_string(jit.compiles()) + " compiled, " + std::to_string(jit.hits()) +
               " from the disk cache, in " +
               fmt_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) + "\n";
}

}  // namespace

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

namespace {

// A first run makes summary.json, with the ceilings measured on this GPU; a resumed one checks the model.
void open_run_folder(const SweepSpec& spec, const fs::path& folder, const DeviceInfo& dev, const SweepOptions& options,
                     const std::vector<std::string>& argv, std::ostream& log) {
  fs::create_directories(folder);
  json summary;
  if (fs::exists(folder / "summary.json")) {
    summary = read_json(folder / "summary.json");
    if (summary.value("device", json::object()).value("name", "") != dev.name)
      throw InputError("--resume: " + folder.string() + " was recorded on '" + summary["device"].value("name", "?") +
                       "', this GPU is '" + dev.name + "'");
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

// The plan of a run folder: a resumed run keeps the shard it was started with.
SweepPlan plan_for(const SweepSpec& spec, const DeviceInfo& dev, const json& summary, Shard shard) {
  if (summary.is_object()) shard = Shard::from_json(summary.value("shard", json()));
  return shard_plan(make_plan(spec, dev), shard, shard_by_problem(spec.strategy));
}

using ProblemCandidates = std::pair<Problem, std::vector<const PlannedCandidate*>>;

// Problems in plan order, each with its candidates.
std::vector<ProblemCandidates> group_by_problem(const SweepPlan& plan) {
  std::vector<ProblemCandidates> problems;
  for (const auto& c : plan.candidates) {
    if (problems.empty() || !(problems.back().first == c.problem)) problems.push_back({c.problem, {}});
    problems.back().second.push_back(&c);
  }
  return problems;
}

// Expected evaluations, for the ETA: each problem's strategy says its budget.
size_t expected_evaluations(const SweepSpec& spec, const std::vector<ProblemCandidates>& problems) {
  StrategyOptions so;
  so.max_evaluations = static_cast<size_t>(spec.budget.max_evaluations_per_problem);
  size_t expected = 0;
  for (const auto& [problem, planned] : problems) {
    std::vector<SearchCandidate> cands;
    for (const PlannedCandidate* c : planned)
      if (c->status.ok) cands.push_back({c->variant, c->config});
    expected += make_strategy(spec.strategy, cands, so)->budget();
  }
  return expected;
}

// Brief fidelity (successive halving's screening round): a few samples, still verified.
MeasureOptions brief_measure(const MeasureOptions& full) {
  MeasureOptions brief = full;
  brief.warmup = 1;
  brief.min_samples = 3;
  brief.max_samples = 5;
  brief.max_rel_stderr = 0.05;
  brief.time_cap_s = std::min(0.1, full.time_cap_s);
  return brief;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double time_of(const json& rec) {
  return rec["status"] == status::ok ? rec["time"]["median_ms"].get<double>() : std::numeric_limits<double>::infinity();
}

// One worker's pass over the units its GPU holds or can claim: for a whole problem the strategy proposes
// candidates, for one candidate it is the proposal; each is measured, or its record (from an earlier
// worker or a resumed run) replayed, and appended. Stops early on a signal, a budget or a lost CUDA context.
class WorkerLoop {
 public:
  WorkerLoop(const SweepSpec& spec, const fs::path& folder, const SweepOptions& options, const DeviceInfo& dev,
             const json& summary, JitCache& jit, std::ostream& log)
      : spec_(spec), folder_(folder), options_(options),
        ceilings_(Ceilings::from_json(summary.value("ceilings", json::object()))), log_(log),
        gpu_(options.worker_gpu), gpu_tag_(gpu_tag(options.worker_gpu, dev.uuid)),
        strategy_seed_(summary["strategy_seed"].get<uint64_t>()),
        seed_(options.seed ? options.seed : static_cast<uint64_t>(std::time(nullptr)) ^ (uint64_t(getpid()) << 32)),
        runner_(dev, ceilings_, spec.measure, jit, seed_),
        brief_runner_(dev, ceilings_, brief_measure(spec.measure), jit, seed_ + 1),
        writer_(folder / "records.jsonl"), follower_(folder / "records.jsonl") {}

  // Units this GPU held before (a restarted worker finishes them), then claimed ones until none is left.
  int run(const std::vector<WorkUnit>& units, size_t problem_count, size_t expected, WorkClaims& claims) {
    expected_ = expected;
    problem_count_ = problem_count;
    start_ = std::chrono::steady_clock::now();
    follow();
    evaluated_at_start_ = evaluated_;
    for (size_t u : claims.held())
      if (u < units.size() && !run_unit(units[u])) return exit_code_;
    while (!g_stop_signal) {
      const auto u = claims.claim_next();
      if (!u) return exit_code_;
      if (!run_unit(units[*u])) return exit_code_;
    }
    return kWorkerExitInterrupted;
  }

  double elapsed_s() const { return seconds_since(start_); }

 private:
  // Returns false when the worker must stop (a signal, a lost CUDA context).
  bool run_unit(const WorkUnit& unit) {
    follow();  // what the other GPUs recorded: warm starts learn from it, the progress counts it
    const auto t_problem = problem_started_.emplace(unit.problem_index, std::chrono::steady_clock::now()).first->second;
    for (const PlannedCandidate* c : unit.candidates)
      if (!c->status.ok) record_skipped(*c);
    if (unit.whole_problem) search_problem(unit, t_problem);
    else if (unit.eval_index > 0) evaluate(*unit.candidates.front(), Fidelity::full, unit.eval_index, unit.problem_index, t_problem);
    return exit_code_ == kWorkerExitDone;
  }

  void record_skipped(const PlannedCandidate& c) {
    json rec = Runner::skeleton(*c.variant, c.problem, c.config, ceilings_);
    if (recorded_.count(record_key(rec))) return;
    rec["status"] = status::skipped;
    rec["reason"] = c.status.reason;
    rec["strategy"] = spec_.strategy;
    rec["gpu"] = gpu_tag_;
    writer_.append(rec);
    ingest(rec);
  }

  void search_problem(const WorkUnit& unit, std::chrono::steady_clock::time_point t_problem) {
    std::vector<SearchCandidate> cands;
    std::vector<const PlannedCandidate*> runnable;
    for (const PlannedCandidate* c : unit.candidates)
      if (c->status.ok) {
        cands.push_back({c->variant, c->config});
        runnable.push_back(c);
      }
    if (cands.empty()) return;
    StrategyOptions so;
    so.max_evaluations = static_cast<size_t>(spec_.budget.max_evaluations_per_problem);
    so.seed = strategy_seed_ + unit.problem_index;
    if (strategy_traits(spec_.strategy).needs_prior) so.prior_order = warm_prior(history_, runnable.front()->problem, cands);
    auto strategy = make_strategy(spec_.strategy, cands, so);
    int eval_index = 0;
    while (auto proposal = strategy->next()) {
      const auto rec = evaluate(*runnable[proposal->index], proposal->fidelity, ++eval_index, unit.problem_index, t_problem);
      if (!rec) return;
      strategy->tell(*proposal, time_of(*rec));
    }
  }

  // The candidate's record: an earlier one replayed (a resumed run: the strategy hears it again), else a
  // new measurement. Nothing when the worker stops first, the budget is spent, or the context is lost.
  std::optional<json> evaluate(const PlannedCandidate& c, Fidelity fidelity, int eval_index, size_t problem_index,
                               std::chrono::steady_clock::time_point t_problem) {
    json rec = Runner::skeleton(*c.variant, c.problem, c.config, ceilings_);
    rec["strategy"] = spec_.strategy;
    rec["eval_index"] = eval_index;
    rec["fidelity"] = fidelity_name(fidelity);
    rec["gpu"] = gpu_tag_;
    const auto earlier = recorded_.find(record_key(rec));
    if (earlier != recorded_.end()) return earlier->second;
    if (g_stop_signal) {
      exit_code_ = kWorkerExitInterrupted;
      return std::nullopt;
    }
    if (over_budget(t_problem)) return std::nullopt;  // not recorded: a later run with a larger budget can resume it
    rec = measure(c, fidelity, rec);
    report(rec, fidelity, problem_index);
    if (rec.value("context_lost", false)) {
      say("the CUDA context is lost after " + rec["candidate"].get<std::string>() + "; a new worker goes on");
      exit_code_ = kWorkerExitContextLost;
      return std::nullopt;
    }
    return rec;
  }

  bool over_budget(std::chrono::steady_clock::time_point t_problem) const {
    return (spec_.budget.seconds_per_problem > 0 && seconds_since(t_problem) > spec_.budget.seconds_per_problem) ||
           (spec_.budget.seconds_total > 0 && elapsed_s() > spec_.budget.seconds_total);
  }

  // The inflight file names the candidate while it runs, so that the supervisor can record a crash or a hang.
  json measure(const PlannedCandidate& c, Fidelity fidelity, const json& skeleton) {
    write_json_atomically(inflight_path(folder_, gpu_),
                          {{"record", skeleton}, {"started_unix", std::time(nullptr)}, {"pid", getpid()}});
    Runner& r = fidelity == Fidelity::brief ? brief_runner_ : runner_;
    json rec = r.run(*c.variant, c.problem, c.config);
    for (const char* k : {"strategy", "eval_index", "fidelity", "gpu"}) rec[k] = skeleton[k];
    writer_.append(rec);
    fs::remove(inflight_path(folder_, gpu_));
    ingest(rec);
    return rec;
  }

  // Records appended since the last look, by this worker's GPU or any other.
  void follow() {
    const ReadResult read = follower_.read_new();
    for (const auto& p : read.problems) say("warning: skipping unreadable record " + p);
    for (const auto& r : read.records) ingest(r);
  }

  void ingest(const json& rec) {
    if (!recorded_.emplace(record_key(rec), rec).second) return;
    history_.push_back(rec);
    if (rec["status"] == status::skipped) return;
    ++evaluated_;
    if (rec["status"] == status::ok && rec.value("fidelity", "full") == "full") {
      double& best = best_ms_[rec["problem_key"].get<std::string>()];
      const double ms = time_of(rec);
      best = best == 0 ? ms : std::min(best, ms);
    }
  }

  // One progress line, written whole (the GPUs' workers share the terminal): GPU, evaluations of the run
  // on every GPU / expected, problem, candidate, result, the problem's best so far, elapsed, ETA.
  void report(const json& rec, Fidelity fidelity, size_t problem_index) {
    if (options_.quiet) return;
    follow();
    const double el = elapsed_s();
    const size_t done_here = evaluated_ - evaluated_at_start_;  // on every GPU since this worker started
    const size_t left = expected_ > evaluated_ ? expected_ - evaluated_ : 0;
    const double eta = done_here ? el / double(done_here) * double(left) : 0;
    std::ostringstream line;
    line << "[" << gpu_name(gpu_) << " " << evaluated_ << "/~" << expected_ << ", problem " << problem_index << "/"
         << problem_count_ << "] " << rec["problem_key"].get<std::string>() << " " << rec["candidate"].get<std::string>()
         << (fidelity == Fidelity::brief ? " (brief)" : "") << " " << rec["status"].get<std::string>();
    if (rec["status"] == status::ok)
      line << " " << std::setprecision(4) << time_of(rec) << " ms (best "
           << best_ms_[rec["problem_key"].get<std::string>()] << " ms)";
    else if (rec.contains("reason"))
      line << ": " << rec["reason"].get<std::string>().substr(0, 160);
    line << "  elapsed " << fmt_seconds(el) << ", ETA " << fmt_seconds(eta) << "\n";
    log_ << line.str();
  }

  void say(const std::string& text) { log_ << gpu_name(gpu_) + ": " + text + "\n"; }

  const SweepSpec& spec_;
  const fs::path folder_;
  const SweepOptions& options_;
  const Ceilings ceilings_;
  std::ostream& log_;
  const int gpu_;
  const json gpu_tag_;
  const uint64_t strategy_seed_, seed_;
  Runner runner_, brief_runner_;
  RecordWriter writer_;
  RecordFollower follower_;
  std::map<std::string, json> recorded_;  // by record_key: every record of the run seen so far
  std::vector<json> history_;             // the same in file order: what warm start learns from
  std::map<std::string, double> best_ms_;  // per problem, full fidelity, every GPU
  std::map<size_t, std::chrono::steady_clock::time_point> problem_started_;  // for budget.seconds_per_problem
  std::chrono::steady_clock::time_point start_;
  size_t expected_ = 0, evaluated_ = 0, evaluated_at_start_ = 0, problem_count_ = 0;
  int exit_code_ = kWorkerExitDone;
};

// Adds this worker's compilations and measuring time to the summary's totals.
void add_worker_totals(const fs::path& folder, const JitCache& jit, double measure_s) {
  update_summary(folder, [&](json& summary) {
    json jit_totals = summary.value("jit", json{{"compiles", 0}, {"cache_hits", 0}, {"compile_ms", 0.0}});
    jit_totals["compiles"] = jit_totals["compiles"].get<int>() + jit.compiles();
    jit_totals["cache_hits"] = jit_totals["cache_hits"].get<int>() + jit.hits();
    jit_totals["compile_ms"] = jit_totals["compile_ms"].get<double>() + jit.compile_ms();
    summary["jit"] = jit_totals;
    summary["measure_wall_s"] = summary.value("measure_wall_s", 0.0) + measure_s;
  });
}

JitCache make_jit(const SweepOptions& options, const DeviceInfo& dev) {
  return JitCache(options.jit_cache.empty() ? JitCache::default_dir() : options.jit_cache, dev.arch());
}

// A run's first step, in one worker: summary.json (on a first run, with the ceilings measured here) and
// every kernel of the plan compiled into the shared disk cache, so that no GPU's worker compiles one.
void prepare_folder(const SweepSpec& spec, const fs::path& folder, const SweepOptions& options, const DeviceInfo& dev,
                    const std::vector<std::string>& argv, std::ostream& log) {
  const json summary = fs::exists(folder / "summary.json") ? read_json(folder / "summary.json") : json();
  const SweepPlan plan = plan_for(spec, dev, summary, options.shard);
  open_run_folder(spec, folder, dev, options, argv, log);
  JitCache jit = make_jit(options, dev);
  precompile(plan, jit, options.compile_threads, log, options.quiet);
  add_worker_totals(folder, jit, 0);
}

// A worker pinned to the wrong GPU would tag its records with another GPU's index.
void check_pinned_gpu(const json& summary, int gpu, const DeviceInfo& dev) {
  bool listed = false, matches = false;
  for (const auto& d : summary.value("devices", json::array()))
    if (d.value("index", -1) == gpu) {
      listed = true;
      matches = matches || d.value("uuid", "") == dev.uuid;
    }
  if (listed && !matches)
    throw InputError("--worker-gpu " + std::to_string(gpu) + ": this worker sees " + dev.uuid +
                     ", which the run does not list as GPU " + std::to_string(gpu) + " (CUDA_VISIBLE_DEVICES)");
}

// A worker's main part: the units of the plan, claimed from the folder, searched and recorded.
int measure_folder(const SweepSpec& spec, const fs::path& folder, const SweepOptions& options, const DeviceInfo& dev,
                   std::ostream& log) {
  const json summary = read_json(folder / "summary.json");
  check_pinned_gpu(summary, options.worker_gpu, dev);
  const SweepPlan plan = plan_for(spec, dev, summary, options.shard);
  const auto problems = group_by_problem(plan);
  const auto units =
      make_work_units(plan, spec.strategy, static_cast<size_t>(spec.budget.max_evaluations_per_problem));
  JitCache jit = make_jit(options, dev);
  WorkClaims claims(folder, options.worker_gpu, units.size());

  g_stop_signal = 0;
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);
  WorkerLoop loop(spec, folder, options, dev, summary, jit, log);
  const int exit_code = loop.run(units, problems.size(), expected_evaluations(spec, problems), claims);
  add_worker_totals(folder, jit, loop.elapsed_s());
  // Once stopped, keep the handlers: the supervisor forwards the signal too, and it must not kill us now.
  if (!g_stop_signal) {
    std::signal(SIGINT, old_int);
    std::signal(SIGTERM, old_term);
  }
  return exit_code;
}

}  // namespace

int run_sweep_worker(const SweepSpec& spec, const fs::path& folder, const SweepOptions& options,
                     const std::vector<std::string>& argv, std::ostream& log) {
  require_gpu("convtune sweep");
  const DeviceInfo dev = DeviceInfo::query(0);  // the supervisor pinned this process to its GPU
  if (!options.worker_prepare) return measure_folder(spec, folder, options, dev, log);
  prepare_folder(spec, folder, options, dev, argv, log);
  return kWorkerExitDone;
}

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
    if ((g_stop_signal || abort_all) && !forwarded) {
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
    const bool stopping = g_stop_signal || abort_all;
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
    if (g_stop_signal || abort_all) {
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

fs::path new_run_folder(const SweepSpec& spec, const SweepOptions& options, const DeviceInfo& dev) {
  make_plan(spec, dev);  // bad shapes fail here, before a folder exists
  const std::string shard =
      options.shard.active() ? "-shard" + std::to_string(options.shard.index) + "of" + std::to_string(options.shard.count) : "";
  const fs::path folder = options.results_root / dev.slug() / (spec.name + shard + "-" + timestamp_compact());
  fs::create_directories(folder);
  return folder;
}

// Checks a folder to resume against the options and GPUs before anything in it changes.
fs::path resumed_run_folder(const SweepOptions& options, const std::vector<DeviceInfo>& devices, LineLog& log) {
  const fs::path folder = options.resume;
  if (!fs::exists(folder / "summary.json"))
    throw InputError("--resume: " + folder.string() + " is not a run folder (no summary.json)");
  const json summary = read_json(folder / "summary.json");
  const Shard recorded = Shard::from_json(summary.value("shard", json()));
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
