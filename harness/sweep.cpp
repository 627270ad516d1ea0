#include "harness/sweep.h"

#include <atomic>
#include <limits>
#include <chrono>
#include <csignal>
#include <ctime>
#include <cstring>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "harness/error.h"
#include "harness/records.h"
#include "harness/replay.h"
#include "harness/runner.h"
#include "harness/strategy.h"

namespace convtune {

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

static std::string timestamp_compact() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
  return buf;
}

void write_text_atomically(const std::filesystem::path& path, const std::string& text) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!(out << text) || !out.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

void write_json_atomically(const std::filesystem::path& path, const json& j) {
  write_text_atomically(path, j.dump(2) + "\n");
}

json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot be read");
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(path.string() + ": not valid JSON: " + e.what());
  }
}

json make_summary(const SweepSpec& spec, const DeviceInfo& dev, const Ceilings& ceilings,
                  const std::vector<std::string>& argv) {
  return {{"schema", kSchemaVersion}, {"tool", "convtune"},         {"version", CONVTUNE_VERSION},
          {"git_sha", CONVTUNE_GIT_SHA}, {"argv", argv},            {"spec", spec.source},
          {"device", dev.to_json()},  {"ceilings", ceilings.to_json()}, {"measure", spec.measure.to_json()},
          {"started", now_iso()}};
}

namespace {

std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

std::string fmt_seconds(double s) {
  std::ostringstream o;
  if (s >= 60) o << int(s / 60) << "m" << std::setw(2) << std::setfill('0') << int(s) % 60 << "s";
  else o << std::fixed << std::setprecision(1) << s << "s";
  return o.str();
}

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
    log << "kernels: " << jit.compiles() << " compiled, " << jit.hits() << " from the disk cache, in "
        << fmt_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) << "\n";
}

}  // namespace

static std::filesystem::path inflight_path(const std::filesystem::path& folder) { return folder / "inflight.json"; }

bool record_inflight(const std::filesystem::path& folder, const std::string& status_value, const std::string& reason) {
  const auto path = inflight_path(folder);
  if (!std::filesystem::exists(path)) return false;
  json inflight;
  try {
    inflight = read_json(path);
  } catch (const std::exception&) {
    return false;  // torn while being written: nothing was running yet
  }
  std::filesystem::remove(path);
  if (!inflight.contains("record")) return false;
  json rec = inflight["record"];
  std::set<std::string> done;
  if (std::filesystem::exists(folder / "records.jsonl")) done = recorded_keys(read_records(folder / "records.jsonl").records);
  if (done.count(record_key(rec))) return false;
  rec["status"] = status_value;
  rec["reason"] = reason;
  RecordWriter(folder / "records.jsonl").append(rec);
  return true;
}

json finalize_summary(const std::filesystem::path& folder, bool interrupted, const std::vector<std::string>& argv) {
  json summary = read_json(folder / "summary.json");
  std::map<std::string, int> counts;
  if (std::filesystem::exists(folder / "records.jsonl"))
    for (const auto& r : read_records(folder / "records.jsonl").records) counts[r["status"].get<std::string>()]++;
  summary["counts"] = counts;
  summary["argv"] = argv;
  summary["interrupted"] = interrupted;
  summary["finished"] = interrupted ? json(nullptr) : json(now_iso());
  write_json_atomically(folder / "summary.json", summary);
  return summary;
}

namespace {

// What a worker finds in the run folder: the summary (made here on a first run) and the records so far.
struct RunFolder {
  json summary;
  std::vector<json> earlier;
  Ceilings ceilings;
};

RunFolder open_run_folder(const SweepSpec& spec, const std::filesystem::path& folder, const DeviceInfo& dev,
                          const SweepOptions& options, const std::vector<std::string>& argv, std::ostream& log) {
  std::filesystem::create_directories(folder);
  RunFolder run;
  if (std::filesystem::exists(folder / "summary.json")) {
    run.summary = read_json(folder / "summary.json");
    if (run.summary.value("device", json::object()).value("name", "") != dev.name)
      throw InputError("--resume: " + folder.string() + " was recorded on '" + run.summary["device"].value("name", "?") +
                       "', this GPU is '" + dev.name + "'");
  }
  if (std::filesystem::exists(folder / "records.jsonl")) {
    auto read = read_records(folder / "records.jsonl");
    for (const auto& p : read.problems) log << "warning: skipping unreadable record " << p << "\n";
    run.earlier = std::move(read.records);
  }
  if (run.summary.is_object() && run.summary.contains("ceilings")) {
    run.ceilings = Ceilings::from_json(run.summary["ceilings"]);
  } else {
    if (!options.quiet && options.ceilings) log << "measuring ceilings on " << dev.name << "...\n";
    if (options.ceilings) run.ceilings = measure_ceilings(dev);
    run.summary = make_summary(spec, dev, run.ceilings, argv);
    run.summary["finished"] = nullptr;
    if (options.shard.active()) run.summary["shard"] = options.shard.to_json();
    if (!options.quiet)
      log << dev.name << " (" << dev.arch() << ", " << dev.sms << " SMs, L2 " << dev.l2_bytes / (1 << 20)
          << " MiB): copy " << std::fixed << std::setprecision(0) << run.ceilings.copy_gbps << " GB/s, FP32 "
          << run.ceilings.fp32_gflops << " GFLOP/s\n" << std::defaultfloat;
  }
  // The strategy's seed is kept in the summary, so that a resumed run retraces the same proposals.
  if (!run.summary.contains("strategy_seed"))
    run.summary["strategy_seed"] = options.seed ? options.seed : static_cast<uint64_t>(std::time(nullptr));
  write_json_atomically(folder / "summary.json", run.summary);
  return run;
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

// One worker's pass over the plan: for each problem, the strategy proposes candidates, each is measured (or
// its earlier record replayed) and appended. Stops early on a signal, a budget or a lost CUDA context.
class WorkerLoop {
 public:
  WorkerLoop(const SweepSpec& spec, const std::filesystem::path& folder, const SweepOptions& options,
             const DeviceInfo& dev, const RunFolder& run, JitCache& jit, std::ostream& log)
      : spec_(spec), folder_(folder), options_(options), ceilings_(run.ceilings), log_(log),
        strategy_seed_(run.summary["strategy_seed"].get<uint64_t>()),
        seed_(options.seed ? options.seed : static_cast<uint64_t>(std::time(nullptr)) ^ (uint64_t(getpid()) << 32)),
        runner_(dev, run.ceilings, spec.measure, jit, seed_),
        brief_runner_(dev, run.ceilings, brief_measure(spec.measure), jit, seed_ + 1),
        writer_(folder / "records.jsonl"), earlier_(run.earlier), history_(run.earlier),
        done_(recorded_keys(run.earlier)) {
    for (const auto& r : earlier_) earlier_by_key_[record_key(r)] = &r;
  }

  int run(const std::vector<ProblemCandidates>& problems) {
    expected_ = expected_evaluations(spec_, problems);
    problem_count_ = problems.size();
    start_ = std::chrono::steady_clock::now();
    for (const auto& [problem, planned] : problems) {
      ++problem_index_;
      search_problem(problem, planned);
      if (exit_code_ != kWorkerExitDone) break;
    }
    return exit_code_;
  }

  double elapsed_s() const { return seconds_since(start_); }

 private:
  void record_skipped(const PlannedCandidate& c) {
    if (done_.count(c.problem.key() + " " + candidate_name(c.variant->name(), c.config))) return;
    json rec = Runner::skeleton(*c.variant, c.problem, c.config, ceilings_);
    rec["status"] = status::skipped;
    rec["reason"] = c.status.reason;
    rec["strategy"] = spec_.strategy;
    writer_.append(rec);
  }

  void search_problem(const Problem& problem, const std::vector<const PlannedCandidate*>& planned) {
    std::vector<SearchCandidate> cands;
    std::vector<const PlannedCandidate*> runnable;
    for (const PlannedCandidate* c : planned) {
      if (!c->status.ok) {
        record_skipped(*c);
        continue;
      }
      cands.push_back({c->variant, c->config});
      runnable.push_back(c);
    }
    if (cands.empty()) return;
    StrategyOptions so;
    so.max_evaluations = static_cast<size_t>(spec_.budget.max_evaluations_per_problem);
    so.seed = strategy_seed_ + problem_index_;
    if (spec_.strategy == "warm") so.prior_order = warm_prior(history_, problem, cands);
    auto strategy = make_strategy(spec_.strategy, cands, so);
    const auto t_problem = std::chrono::steady_clock::now();
    int eval_index = 0;
    double best = 0;
    while (auto proposal = strategy->next()) {
      const PlannedCandidate& c = *runnable[proposal->index];
      json rec = Runner::skeleton(*c.variant, c.problem, c.config, ceilings_);
      rec["strategy"] = spec_.strategy;
      rec["eval_index"] = ++eval_index;
      rec["fidelity"] = fidelity_name(proposal->fidelity);
      const auto earlier = earlier_by_key_.find(record_key(rec));
      const bool replayed = earlier != earlier_by_key_.end();
      if (replayed) {
        rec = *earlier->second;  // resumed: the strategy hears the recorded result again
      } else {
        if (g_stop_signal) {
          exit_code_ = kWorkerExitInterrupted;
          return;
        }
        if (over_budget(t_problem)) return;  // not recorded: a later run with a larger budget can resume it
        rec = measure(c, *proposal, rec);
      }
      ++evaluated_;
      const bool ok = rec["status"] == status::ok;
      const double ms = ok ? rec["time"]["median_ms"].get<double>() : std::numeric_limits<double>::infinity();
      strategy->tell(*proposal, ms);
      if (ok && proposal->fidelity == Fidelity::full) best = best == 0 ? ms : std::min(best, ms);
      if (replayed) continue;
      report(problem, rec, *proposal, ms, best);
      if (rec.value("context_lost", false)) {
        log_ << "the CUDA context is lost after " << rec["candidate"].get<std::string>() << "; a new worker goes on\n";
        exit_code_ = kWorkerExitContextLost;
        return;
      }
    }
  }

  bool over_budget(std::chrono::steady_clock::time_point t_problem) const {
    return (spec_.budget.seconds_per_problem > 0 && seconds_since(t_problem) > spec_.budget.seconds_per_problem) ||
           (spec_.budget.seconds_total > 0 && elapsed_s() > spec_.budget.seconds_total);
  }

  // inflight.json names the candidate while it runs, so that the supervisor can record a crash or a hang.
  json measure(const PlannedCandidate& c, const Proposal& proposal, const json& skeleton) {
    write_json_atomically(inflight_path(folder_),
                          {{"record", skeleton}, {"started_unix", std::time(nullptr)}, {"pid", getpid()}});
    Runner& r = proposal.fidelity == Fidelity::brief ? brief_runner_ : runner_;
    json rec = r.run(*c.variant, c.problem, c.config);
    for (const char* k : {"strategy", "eval_index", "fidelity"}) rec[k] = skeleton[k];
    writer_.append(rec);
    std::filesystem::remove(inflight_path(folder_));
    history_.push_back(rec);
    ++measured_;
    return rec;
  }

  // One progress line: done/expected, problem, candidate, result, best so far, elapsed, ETA.
  void report(const Problem& problem, const json& rec, const Proposal& proposal, double ms, double best) {
    if (options_.quiet) return;
    const double el = elapsed_s();
    const double eta = measured_ ? el / double(measured_) * double(expected_ > evaluated_ ? expected_ - evaluated_ : 0) : 0;
    log_ << "[" << evaluated_ << "/~" << expected_ << ", problem " << problem_index_ << "/" << problem_count_ << "] "
         << problem.key() << " " << rec["candidate"].get<std::string>()
         << (proposal.fidelity == Fidelity::brief ? " (brief)" : "") << " " << rec["status"].get<std::string>();
    if (rec["status"] == status::ok)
      log_ << " " << std::setprecision(4) << std::defaultfloat << ms << " ms (best " << best << " ms)";
    else if (rec.contains("reason"))
      log_ << ": " << rec["reason"].get<std::string>().substr(0, 160);
    log_ << "  elapsed " << fmt_seconds(el) << ", ETA " << fmt_seconds(eta) << "\n";
  }

  const SweepSpec& spec_;
  const std::filesystem::path folder_;
  const SweepOptions& options_;
  const Ceilings ceilings_;
  std::ostream& log_;
  const uint64_t strategy_seed_, seed_;
  Runner runner_, brief_runner_;
  RecordWriter writer_;
  const std::vector<json> earlier_;  // records of earlier workers, replayed to the strategy
  std::vector<json> history_;        // earlier and new records: what warm start learns from
  const std::set<std::string> done_;
  std::map<std::string, const json*> earlier_by_key_;
  std::chrono::steady_clock::time_point start_;
  size_t expected_ = 0, evaluated_ = 0, measured_ = 0, problem_index_ = 0, problem_count_ = 0;
  int exit_code_ = kWorkerExitDone;
};

// Adds this worker's compilations and measuring time to the summary's totals.
void add_worker_totals(const std::filesystem::path& folder, const JitCache& jit, double measure_s) {
  json summary = read_json(folder / "summary.json");
  json jit_totals = summary.value("jit", json{{"compiles", 0}, {"cache_hits", 0}, {"compile_ms", 0.0}});
  jit_totals["compiles"] = jit_totals["compiles"].get<int>() + jit.compiles();
  jit_totals["cache_hits"] = jit_totals["cache_hits"].get<int>() + jit.hits();
  jit_totals["compile_ms"] = jit_totals["compile_ms"].get<double>() + jit.compile_ms();
  summary["jit"] = jit_totals;
  summary["measure_wall_s"] = summary.value("measure_wall_s", 0.0) + measure_s;
  write_json_atomically(folder / "summary.json", summary);
}

}  // namespace

// plan -> open the folder (summary, earlier records, ceilings) -> compile -> search each problem -> totals.
int run_sweep_worker(const SweepSpec& spec, const std::filesystem::path& folder, const SweepOptions& options,
                     const std::vector<std::string>& argv, std::ostream& log) {
  require_gpu("convtune sweep");
  const DeviceInfo dev = DeviceInfo::query(0);
  SweepOptions own = options;
  if (std::filesystem::exists(folder / "summary.json"))
    own.shard = Shard::from_json(read_json(folder / "summary.json").value("shard", json()));
  const SweepPlan plan = shard_plan(make_plan(spec, dev), own.shard, shard_by_problem(spec.strategy));
  const RunFolder run = open_run_folder(spec, folder, dev, own, argv, log);
  JitCache jit(options.jit_cache.empty() ? JitCache::default_dir() : options.jit_cache, dev.arch());
  precompile(plan, jit, options.compile_threads, log, options.quiet);

  g_stop_signal = 0;
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);
  WorkerLoop loop(spec, folder, options, dev, run, jit, log);
  const int exit_code = loop.run(group_by_problem(plan));
  add_worker_totals(folder, jit, loop.elapsed_s());
  // Once stopped, keep the handlers: the supervisor forwards the signal too, and it must not kill us now.
  if (!g_stop_signal) {
    std::signal(SIGINT, old_int);
    std::signal(SIGTERM, old_term);
  }
  return exit_code;
}

namespace {

// Starts `argv` as a child process; returns its pid.
pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> cargs;
  for (const auto& a : args) cargs.push_back(const_cast<char*>(a.c_str()));
  cargs.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot fork a sweep worker");
  if (pid == 0) {
    execv("/proc/self/exe", cargs.data());
    std::perror("convtune: cannot start the sweep worker");
    _exit(127);
  }
  return pid;
}

std::string describe_exit(int wstatus) {
  if (WIFSIGNALED(wstatus)) return std::string("the worker died of signal ") + strsignal(WTERMSIG(wstatus));
  return "the worker exited with code " + std::to_string(WEXITSTATUS(wstatus));
}

}  // namespace

SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options, const std::vector<std::string>& argv,
                      std::ostream& log) {
  require_gpu("convtune sweep");
  SweepResult result;
  if (!options.resume.empty()) {
    result.folder = options.resume;
    if (!std::filesystem::exists(result.folder / "summary.json"))
      throw InputError("--resume: " + result.folder.string() + " is not a run folder (no summary.json)");
    // The whole sweep stopped (killed, machine lost) while a candidate ran: nothing says the candidate
    // was at fault, so it runs again.
    std::filesystem::remove(inflight_path(result.folder));
    const Shard recorded = Shard::from_json(read_json(result.folder / "summary.json").value("shard", json()));
    if (options.shard.active() && options.shard.text() != recorded.text())
      throw InputError("--shard: " + result.folder.string() + " is shard " + recorded.text() + ", not " +
                       options.shard.text() + "; a resumed run keeps its shard (leave --shard out)");
  } else {
    const DeviceInfo dev = DeviceInfo::query(0);
    make_plan(spec, dev);  // bad shapes fail here, before a folder exists
    const std::string shard =
        options.shard.active() ? "-shard" + std::to_string(options.shard.index) + "of" + std::to_string(options.shard.count) : "";
    result.folder = options.results_root / dev.slug() / (spec.name + shard + "-" + timestamp_compact());
    std::filesystem::create_directories(result.folder);
  }
  if (!options.quiet) log << "run folder: " << result.folder.string() << "\n";

  if (!options.isolate) {
    const int rc = run_sweep_worker(spec, result.folder, options, argv, log);
    result.context_lost = rc == kWorkerExitContextLost;
    result.interrupted = rc == kWorkerExitInterrupted;
  } else {
    std::vector<std::string> worker_args = {argv.empty() ? "convtune" : argv[0], "sweep", options.spec_path,
                                            "--worker-for", result.folder.string()};
    if (options.seed) worker_args.insert(worker_args.end(), {"--seed", std::to_string(options.seed)});
    if (!spec.measure.cold) worker_args.push_back("--hot");
    if (options.quiet) worker_args.push_back("--quiet");
    if (!options.ceilings) worker_args.push_back("--no-ceilings");
    if (options.shard.active()) worker_args.insert(worker_args.end(), {"--shard", options.shard.text()});
    // Ctrl-C reaches the worker through the terminal's process group: it stops after its candidate.
    g_stop_signal = 0;
    auto old_int = std::signal(SIGINT, on_stop_signal);
    auto old_term = std::signal(SIGTERM, on_stop_signal);
    int restarts = 0, startup_failures = 0;
    for (;;) {
      const pid_t pid = spawn(worker_args);
      int wstatus = 0;
      bool timed_out = false, forwarded = false;
      for (;;) {
        const pid_t r = waitpid(pid, &wstatus, WNOHANG);
        if (r == pid) break;
        if (g_stop_signal && !forwarded) {
          kill(pid, SIGINT);
          forwarded = true;
        }
        std::error_code ec;
        const auto inflight = inflight_path(result.folder);
        if (std::filesystem::exists(inflight, ec)) {
          try {
            const json j = read_json(inflight);
            const double ran = double(std::time(nullptr)) - j.value("started_unix", 0.0);
            if (ran > spec.budget.candidate_timeout_s) {
              kill(pid, SIGKILL);
              waitpid(pid, &wstatus, 0);
              timed_out = true;
              break;
            }
          } catch (const std::exception&) {
            // Being rewritten: look again next time.
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      const auto exited_as = [&](int code) { return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == code; };
      if (g_stop_signal && !timed_out && !exited_as(kWorkerExitDone) && !exited_as(kWorkerExitContextLost)) {
        // Stopped by Ctrl-C or SIGTERM: however the worker ended, no new one starts. A candidate it was
        // running when it died is not its fault: it runs again on --resume.
        std::filesystem::remove(inflight_path(result.folder));
        result.interrupted = true;
        break;
      }
      if (timed_out) {
        char why[128];
        std::snprintf(why, sizeof why, "killed after %.0f s (budget.candidate_timeout_s)", spec.budget.candidate_timeout_s);
        record_inflight(result.folder, status::timeout, why);
        log << "a candidate ran past " << spec.budget.candidate_timeout_s << " s: recorded as timeout\n";
      } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == kWorkerExitDone) {
        break;
      } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == kWorkerExitInterrupted) {
        result.interrupted = true;
        break;
      } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == kWorkerExitContextLost) {
        // The worker recorded the candidate itself.
      } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 2) {
        throw InputError("the sweep worker refused its input (see above)");
      } else if (!record_inflight(result.folder, status::runtime_error, describe_exit(wstatus) + " while this candidate ran")) {
        // Died before any candidate: often the GPU still tearing down the context of a killed worker.
        // Wait and try again a few times before giving up.
        if (++startup_failures > 4)
          throw std::runtime_error(describe_exit(wstatus) + " outside any candidate, " +
                                   std::to_string(startup_failures) + " times; records so far are in " +
                                   result.folder.string());
        log << describe_exit(wstatus) << " before its first candidate; retrying in " << (1 << startup_failures) << " s\n";
        std::this_thread::sleep_for(std::chrono::seconds(1 << startup_failures));
        continue;
      } else {
        log << describe_exit(wstatus) << ": recorded as runtime_error, a new worker goes on\n";
      }
      startup_failures = 0;
      if (g_stop_signal) {
        result.interrupted = true;
        break;
      }
      if (++restarts > 1000) throw std::runtime_error("the sweep worker failed more than 1000 times");
    }
    std::signal(SIGINT, old_int);
    std::signal(SIGTERM, old_term);
  }
  const json summary = finalize_summary(result.folder, result.interrupted, argv);
  result.counts = summary["counts"];
  return result;
}

}  // namespace convtune
