#include "harness/sweep.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "harness/error.h"
#include "harness/records.h"
#include "harness/runner.h"

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

static std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void write_json_atomically(const std::filesystem::path& path, const json& j) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error("cannot write " + tmp);
    out << j.dump(2) << "\n";
  }
  std::filesystem::rename(tmp, path);
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

SweepResult run_sweep(const SweepSpec& spec, const SweepOptions& options, const std::vector<std::string>& argv,
                      std::ostream& log) {
  require_gpu("convtune sweep");
  const DeviceInfo dev = DeviceInfo::query(0);
  SweepPlan plan = make_plan(spec, dev);

  SweepResult result;
  std::vector<json> earlier;
  json summary;
  if (!options.resume.empty()) {
    result.folder = options.resume;
    const auto sp = result.folder / "summary.json";
    summary = read_json(sp);
    if (summary.value("device", json::object()).value("name", "") != dev.name)
      throw InputError("--resume: " + result.folder.string() + " was recorded on '" +
                       summary["device"].value("name", "?") + "', this GPU is '" + dev.name + "'");
    if (std::filesystem::exists(result.folder / "records.jsonl")) {
      auto read = read_records(result.folder / "records.jsonl");
      for (const auto& p : read.problems) log << "warning: skipping unreadable record " << p << "\n";
      earlier = std::move(read.records);
    }
  } else {
    result.folder = options.results_root / dev.slug() / (spec.name + "-" + timestamp_compact());
    std::filesystem::create_directories(result.folder);
  }
  const std::set<std::string> done = recorded_keys(earlier);

  Ceilings ceilings;
  if (summary.is_object() && summary.contains("ceilings")) {
    ceilings = Ceilings::from_json(summary["ceilings"]);
  } else {
    if (!options.quiet) log << "measuring ceilings on " << dev.name << "...\n";
    ceilings = measure_ceilings(dev);
    summary = make_summary(spec, dev, ceilings, argv);
  }
  if (!options.quiet)
    log << dev.name << " (" << dev.arch() << ", " << dev.sms << " SMs, L2 " << dev.l2_bytes / (1 << 20)
        << " MiB): copy " << std::fixed << std::setprecision(0) << ceilings.copy_gbps << " GB/s, FP32 "
        << ceilings.fp32_gflops << " GFLOP/s\n"
        << "run folder: " << result.folder.string() << "\n";
  summary["finished"] = nullptr;
  write_json_atomically(result.folder / "summary.json", summary);

  JitCache jit(options.jit_cache.empty() ? JitCache::default_dir() : options.jit_cache, dev.arch());
  precompile(plan, jit, options.compile_threads, log, options.quiet);

  const uint64_t seed = options.seed ? options.seed : static_cast<uint64_t>(std::time(nullptr));
  Runner runner(dev, ceilings, spec.measure, jit, seed);
  RecordWriter writer(result.folder / "records.jsonl");

  g_stop_signal = 0;
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);

  std::map<std::string, int> counts;
  for (const auto& r : earlier) counts[r["status"].get<std::string>()]++;
  size_t todo = 0;
  for (const auto& c : plan.candidates)
    if (!done.count(c.problem.key() + " " + candidate_name(c.variant->name(), c.config))) ++todo;

  const auto t_start = std::chrono::steady_clock::now();
  auto elapsed = [](auto since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  };
  size_t finished = 0;
  std::string current_problem;
  auto t_problem = t_start;
  int evals_in_problem = 0;
  std::map<std::string, double> best_ms;
  for (const auto& c : plan.candidates) {
    if (g_stop_signal) break;
    const std::string key = c.problem.key();
    if (done.count(key + " " + candidate_name(c.variant->name(), c.config))) continue;
    if (key != current_problem) {
      current_problem = key;
      t_problem = std::chrono::steady_clock::now();
      evals_in_problem = 0;
    }
    const bool over_budget =
        (spec.budget.max_evaluations_per_problem > 0 && evals_in_problem >= spec.budget.max_evaluations_per_problem) ||
        (spec.budget.seconds_per_problem > 0 && elapsed(t_problem) > spec.budget.seconds_per_problem) ||
        (spec.budget.seconds_total > 0 && elapsed(t_start) > spec.budget.seconds_total);
    if (over_budget && c.status.ok) {
      ++finished;
      continue;  // not recorded: a later run with a larger budget can resume it
    }
    json rec = c.status.ok ? runner.run(*c.variant, c.problem, c.config)
                           : Runner::skeleton(*c.variant, c.problem, c.config, ceilings);
    if (!c.status.ok) {
      rec["status"] = status::skipped;
      rec["reason"] = c.status.reason;
    } else {
      ++evals_in_problem;
    }
    rec["strategy"] = spec.strategy;
    rec["eval_index"] = evals_in_problem;
    writer.append(rec);
    ++finished;
    const std::string st = rec["status"].get<std::string>();
    counts[st]++;
    if (st == status::ok) {
      const double ms = rec["time"]["median_ms"].get<double>();
      if (!best_ms.count(key) || ms < best_ms[key]) best_ms[key] = ms;
    }
    if (!options.quiet && (c.status.ok || finished == todo)) {
      const double el = elapsed(t_start);
      const double eta = finished ? el / double(finished) * double(todo - finished) : 0;
      log << "[" << finished << "/" << todo << "] " << key << " " << rec["candidate"].get<std::string>() << " " << st;
      if (st == status::ok)
        log << " " << std::setprecision(4) << std::defaultfloat << rec["time"]["median_ms"].get<double>()
            << " ms (best " << best_ms[key] << " ms)";
      else if (rec.contains("reason"))
        log << ": " << rec["reason"].get<std::string>().substr(0, 160);
      log << "  ETA " << fmt_seconds(eta) << "\n";
    }
    if (rec.value("context_lost", false)) {
      result.context_lost = true;
      log << "error: the CUDA context is lost after " << rec["candidate"].get<std::string>()
          << "; records so far are saved. Resume with: convtune sweep --resume " << result.folder.string() << "\n";
      break;
    }
  }
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  result.interrupted = g_stop_signal != 0;
  result.counts = json(counts);
  summary["counts"] = result.counts;
  summary["finished"] = result.interrupted || result.context_lost ? json(nullptr) : json(now_iso());
  summary["interrupted"] = result.interrupted;
  summary["jit"] = {{"compiles", jit.compiles()}, {"cache_hits", jit.hits()}, {"compile_ms", jit.compile_ms()}};
  summary["wall_s"] = elapsed(t_start);
  write_json_atomically(result.folder / "summary.json", summary);
  return result;
}

}  // namespace convtune
