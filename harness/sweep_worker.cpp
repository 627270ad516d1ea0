#include "harness/sweep_worker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iomanip>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>

#include "harness/error.h"
#include "harness/gpu_set.h"
#include "harness/jit.h"
#include "harness/json_file.h"
#include "harness/records.h"
#include "harness/replay.h"
#include "harness/run_folder.h"
#include "harness/runner.h"
#include "harness/shard.h"
#include "harness/stop_signal.h"
#include "harness/strategy.h"
#include "harness/work_claims.h"

namespace convtune {

namespace fs = std::filesystem;

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

namespace {

std::string fmt_seconds(double s) {
  std::ostringstream o;
  if (s >= 60) o << int(s / 60) << "m" << std::setw(2) << std::setfill('0') << int(s) % 60 << "s";
  else o << std::fixed << std::setprecision(1) << s << "s";
  return o.str();
}

// Compiles every kernel the plan needs, in parallel: NVRTC is the slow part of a cold sweep.
void precompile(const SweepPlan& plan, const DeviceInfo& dev, JitCache& jit, int threads, std::ostream& log,
                bool quiet) {
  std::vector<JitProgram> programs;
  for (const auto& c : plan.candidates)
    if (c.status.ok)
      for (auto& prog : c.variant->programs(c.problem, c.variant->resolve(c.problem, c.config, dev)))
        programs.push_back(std::move(prog));
  if (programs.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  jit.compile_all(programs, threads);
  if (!quiet)
    log << "kernels: " + std::to_string(jit.compiles()) + " compiled, " + std::to_string(jit.hits()) +
               " from the disk cache, in " +
               fmt_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) + "\n";
}

// The plan of a run folder: a resumed run keeps the shard it was started with.
SweepPlan plan_for(const SweepSpec& spec, const DeviceInfo& dev, const fs::path& folder, const json& summary, Shard shard) {
  if (summary.is_object()) shard = Shard::from_json(summary.value("shard", json()), (folder / "summary.json").string() + ": shard");
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
    while (!stop_requested()) {
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
    json rec = Runner::skeleton(*c.variant, c.problem, c.config, ceilings_, runner_.device());
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
    json rec = Runner::skeleton(*c.variant, c.problem, c.config, ceilings_, runner_.device());
    rec["strategy"] = spec_.strategy;
    rec["eval_index"] = eval_index;
    rec["fidelity"] = fidelity_name(fidelity);
    rec["gpu"] = gpu_tag_;
    const auto earlier = recorded_.find(record_key(rec));
    if (earlier != recorded_.end()) return earlier->second;
    if (stop_requested()) {
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

}  // namespace

void prepare_folder(const SweepSpec& spec, const fs::path& folder, const SweepOptions& options, const DeviceInfo& dev,
                    const std::vector<std::string>& argv, std::ostream& log) {
  const json summary = fs::exists(folder / "summary.json") ? read_json(folder / "summary.json") : json();
  const SweepPlan plan = plan_for(spec, dev, folder, summary, options.shard);
  open_run_folder(spec, folder, dev, options, argv, log);
  JitCache jit = make_jit(options, dev);
  precompile(plan, dev, jit, options.compile_threads, log, options.quiet);
  add_worker_totals(folder, jit, 0);
}

int measure_folder(const SweepSpec& spec, const fs::path& folder, const SweepOptions& options, const DeviceInfo& dev,
                   std::ostream& log) {
  const json summary = read_json(folder / "summary.json");
  check_pinned_gpu(summary, options.worker_gpu, dev);
  const SweepPlan plan = plan_for(spec, dev, folder, summary, options.shard);
  const auto problems = group_by_problem(plan);
  const auto units =
      make_work_units(plan, spec.strategy, static_cast<size_t>(spec.budget.max_evaluations_per_problem));
  JitCache jit = make_jit(options, dev);
  WorkClaims claims(folder, options.worker_gpu, units.size());

  const StopSignals signals(/*keep_after_stop=*/true);
  WorkerLoop loop(spec, folder, options, dev, summary, jit, log);
  const int exit_code = loop.run(units, problems.size(), expected_evaluations(spec, problems), claims);
  add_worker_totals(folder, jit, loop.elapsed_s());
  return exit_code;
}

int run_sweep_worker(const SweepSpec& spec, const fs::path& folder, const SweepOptions& options,
                     const std::vector<std::string>& argv, std::ostream& log) {
  require_gpu("convtune sweep");
  const DeviceInfo dev = DeviceInfo::query(0);  // the supervisor pinned this process to its GPU
  if (!options.worker_prepare) return measure_folder(spec, folder, options, dev, log);
  prepare_folder(spec, folder, options, dev, argv, log);
  return kWorkerExitDone;
}

}  // namespace convtune
