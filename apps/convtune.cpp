// The convtune command line: devices, list, run, sweep, best.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <cctype>
#include <set>
#include <sstream>

#include "harness/device.h"
#include "harness/dispatch.h"
#include "harness/cross_validate.h"
#include "harness/dispatch_check.h"
#include "harness/error.h"
#include "harness/family.h"
#include "harness/fleet.h"
#include "harness/gpu_set.h"
#include "harness/merge.h"
#include "harness/pack.h"
#include "harness/params.h"
#include "harness/plugin.h"
#include "harness/plugin_template.h"
#include "harness/profile.h"
#include "harness/records.h"
#include "harness/replay.h"
#include "harness/strategy.h"
#include "harness/subprocess.h"
#include "harness/run_summary.h"
#include "harness/runner.h"
#include "harness/select.h"
#include "harness/spec.h"
#include "harness/json_file.h"
#include "harness/sweep.h"
#include "harness/sweep_plan.h"
#include "harness/sweep_worker.h"
#include "harness/variant.h"

using namespace convtune;

namespace {

constexpr int kExitInputError = 2;

// "conv2d:h=8192,w=8192,r=3"
Problem parse_problem(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos)
    throw InputError("--problem: '" + text + "' must be family:dim=value,... e.g. conv2d:h=8192,w=8192,r=3");
  json j = parse_config(text.substr(colon + 1), "--problem");
  j["family"] = text.substr(0, colon);
  return Problem::from_json(j, "--problem");
}

std::string fixed(double v, int precision) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(precision) << v;
  return o.str();
}

// Each TF32 method's rate (or why it gave none) and the data sheet's peak where known.
void print_tf32_trials(const DeviceInfo& d, const Ceilings& c) {
  if (!c.tf32_unavailable.empty()) std::cout << "    TF32: " << c.tf32_unavailable << "\n";
  if (const double peak = nominal_tf32_gflops(d); peak > 0)
    std::cout << "    TF32 nominal peak: " << fixed(peak, 0) << " GFLOP/s (SMs x clock x per-SM rate)\n";
  for (const auto& [name, gflops] : c.tf32_trials.items())
    std::cout << "    TF32 " << fixed(gflops.get<double>(), 0) << " GFLOP/s: " << name
              << (name == c.tf32_method ? "  (best)" : "") << "\n";
  for (const auto& [name, why] : c.tf32_failures.items())
    std::cout << "    TF32 failed: " << name << ": " << why.get<std::string>() << "\n";
}

void print_device(const DeviceInfo& d, const Ceilings* c) {
  std::cout << d.name << "  " << d.arch() << "  " << d.sms << " SMs  L2 " << d.l2_bytes / (1 << 20) << " MiB  "
            << d.global_mem_bytes / (int64_t(1) << 30) << " GiB  smem/block " << d.max_smem_per_block_optin / 1024
            << " KiB (opt-in)\n  driver " << d.driver_version << "  runtime " << d.runtime_version << "  cuDNN "
            << d.cudnn_version << "  cuFFT " << d.cufft_version << "  NVRTC " << d.nvrtc_major << "." << d.nvrtc_minor
            << "\n";
  if (c) {
    std::cout << "  measured: copy " << fixed(c->copy_gbps, 0) << " GB/s (read + write), FP32 FMA "
              << fixed(c->fp32_gflops, 0) << " GFLOP/s, TF32 tensor cores "
              << (c->tf32_gflops > 0 ? fixed(c->tf32_gflops, 0) + " GFLOP/s" : "none") << "\n    copy: " << c->copy_method
              << "\n    FMA: " << c->fma_method << "\n";
    print_tf32_trials(d, *c);
  }
}

int cmd_devices(bool as_json, bool ceilings) {
  require_gpu("convtune devices");
  json out = json::array();
  for (int i = 0; i < DeviceInfo::count(); ++i) {
    const DeviceInfo d = DeviceInfo::query(i);
    Ceilings c;
    if (ceilings) c = measure_ceilings(d);
    if (as_json) {
      json j = d.to_json();
      if (ceilings) j["ceilings"] = c.to_json();
      out.push_back(j);
    } else {
      print_device(d, ceilings ? &c : nullptr);
    }
  }
  if (as_json) std::cout << out.dump(2) << "\n";
  return 0;
}

// --plugins: its errors name the flag (a manifest's name their file).
void load_cli_plugins(const std::vector<std::string>& paths) {
  try {
    load_plugins(paths);
  } catch (const InputError& e) {
    throw InputError(std::string("--plugins: ") + e.what());
  }
}

// The plug-ins a command names, and those a run folder's summary carries: loaded here and passed on to the
// worker processes this one starts (CONVTUNE_PLUGINS).
void use_plugins(std::vector<std::string> paths, const std::string& run_folder) {
  if (!run_folder.empty() && std::filesystem::exists(std::filesystem::path(run_folder) / "summary.json") &&
      read_json(std::filesystem::path(run_folder) / "summary.json").contains("plugins"))
    paths.push_back(run_folder);
  if (paths.empty()) return;
  load_cli_plugins(paths);
  add_plugins_to_environment(paths);
}

int cmd_list(const std::string& family, const std::string& problem_text, bool as_json) {
  const DeviceInfo dev = DeviceInfo::count() > 0 ? DeviceInfo::query(0) : DeviceInfo::offline_sm90();
  Problem problem;
  bool have_problem = !problem_text.empty();
  if (have_problem) problem = parse_problem(problem_text);
  if (!family.empty()) find_family(family);  // validates
  json out = json::array();
  for (const Variant* v : Registry::instance().all()) {
    if (!family.empty() && v->family() != family) continue;
    if (have_problem && v->family() != problem.family) continue;
    const Problem p = have_problem ? problem : example_problem(v->family());
    json j = {{"name", v->name()}, {"family", v->family()}, {"summary", v->summary()},
              {"library", v->library()}};
    if (const auto* plugin = dynamic_cast<const PluginVariant*>(v)) j["plugin"] = plugin->provenance();
    j["params"] = v->space(p, dev).to_json();
    if (have_problem) {
      size_t ok = 0, total = 0;
      for (const auto& cfg : v->space(p, dev).enumerate()) {
        ++total;
        ok += v->can_implement(p, cfg, dev).ok;
      }
      j["configs"] = total;
      j["implementable"] = ok;
    }
    out.push_back(j);
  }
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const auto& j : out) {
    std::cout << j["name"].get<std::string>() << (j["library"].get<bool>() ? "  (library)" : "")
              << (j.contains("plugin") ? "  (plug-in " + j["plugin"]["manifest"].get<std::string>() + ", source " +
                                             j["plugin"]["source_hash"].get<std::string>() + ")"
                                       : "")
              << "\n    " << j["summary"].get<std::string>() << "\n";
    for (const auto& p : j["params"]) {
      std::cout << "    " << p["name"].get<std::string>() << ": ";
      std::string vals;
      for (const auto& v : p["values"]) vals += (vals.empty() ? "" : ", ") + (v.is_string() ? v.get<std::string>() : v.dump());
      std::cout << vals << "  (" << p["meaning"].get<std::string>() << ")\n";
    }
    if (j.contains("configs"))
      std::cout << "    " << j["implementable"] << " of " << j["configs"] << " configs implementable for "
                << problem.key() << "\n";
  }
  return 0;
}

// --config over the variant's space on `dev`: unnamed parameters take their first listed value, so that
// `run` works with a partial config. Throws InputError naming --config.<parameter>.
Config run_config(const Variant& v, const Problem& p, const std::string& config_text, const DeviceInfo& dev) {
  const ParamSpace space = v.space(p, dev);
  Config cfg = parse_config(config_text, "--config");
  for (const auto& prm : space.params())
    if (!cfg.contains(prm.name)) cfg[prm.name] = prm.values.front();
  return space.complete_config(cfg, "--config");
}

int cmd_run(const std::string& variant, const std::string& problem_text, const std::string& config_text, bool hot,
            double time_cap, bool ceilings) {
  const Variant& v = Registry::instance().get(variant);
  const Problem p = parse_problem(problem_text);
  if (p.family != v.family())
    throw InputError("--problem: " + variant + " is a " + v.family() + " variant, the problem is " +
                     p.family);
  run_config(v, p, config_text, DeviceInfo::offline_sm90());  // a bad --config is named with or without a GPU
  require_gpu("convtune run");
  const DeviceInfo dev = DeviceInfo::query(0);
  check_fits(p, dev, "--problem");
  const ParamSpace space = v.space(p, dev);
  const Config cfg = run_config(v, p, config_text, dev);
  // An integer off the space's grid is allowed on purpose (exploring by hand), but said and marked.
  json off_grid = json::array();
  for (const auto& prm : space.params())
    if (std::find(prm.values.begin(), prm.values.end(), cfg[prm.name]) == prm.values.end()) {
      off_grid.push_back(prm.name);
      std::string vals;
      for (const auto& v : prm.values) vals += (vals.empty() ? "" : ", ") + v.dump();
      std::cerr << "note: --config " << prm.name << "=" << cfg[prm.name].dump() << " is outside " << variant
                << "'s space (" << vals << "); measured as asked, marked off_grid in the record\n";
    }
  MeasureOptions mo;
  mo.cold = !hot;
  mo.time_cap_s = time_cap;
  JitCache jit(JitCache::default_dir(), dev.arch());
  Runner runner(dev, ceilings ? measure_ceilings(dev) : Ceilings{}, mo, jit, static_cast<uint64_t>(std::time(nullptr)));
  json rec = runner.run(v, p, cfg);
  if (!off_grid.empty()) rec["off_grid"] = off_grid;
  std::cout << rec.dump(2) << "\n";
  return rec["status"] == status::ok ? 0 : 1;
}

std::string short_ms(const json& rec) {
  return rec.is_null() ? "-" : fixed(rec["time"]["median_ms"].get<double>(), 3);
}

std::string gigabytes(double bytes) { return fixed(bytes / 1e9, 3) + " GB"; }

// Under a problem's row of `best`: what the counters say of the chosen candidate, and what to beware of.
void print_profile_notes(const json& rec, const json& profile) {
  if (rec.value("throttled", false))
    std::cout << "    warning: measured while the GPU throttled (" << rec.value("throttle_reason", std::string("?"))
              << ")\n";
  const int static_local = rec.contains("kernel") ? rec["kernel"].value("local_bytes", 0) : 0;
  const json metrics = profile.is_object() ? profile.value("metrics", json::object()) : json::object();
  const double spilled = metrics.value("local_spill_bytes", 0.0);
  if (static_local > 0 || spilled > 0)
    std::cout << "    warning: spills registers to local memory (" << static_local << " B per thread"
              << (spilled > 0 ? ", " + gigabytes(spilled) + " of local traffic measured" : std::string()) << ")\n";
  if (!profile.is_object() || profile.value("status", "") != "ok") return;
  const json d = profile.value("derived", json::object());
  std::cout << "    profile: " << d.value("limiter", std::string("-"));
  if (d.contains("bytes_measured"))
    std::cout << "; DRAM " << gigabytes(d["bytes_measured"].get<double>()) << " measured vs "
              << gigabytes(rec.value("bytes_model", 0.0)) << " modelled";
  if (d.contains("intensity_measured")) std::cout << ", " << fixed(d["intensity_measured"].get<double>(), 2) << " flop/B";
  if (metrics.contains("achieved_occupancy_pct"))
    std::cout << "; occupancy " << fixed(metrics["achieved_occupancy_pct"].get<double>(), 0) << "%";
  std::cout << "\n";
}

// " [3 of 8 configs]" when a spec measured only part of a library variant's space for this problem: a
// speed-up over the algorithms measured is not one over the library's best.
using CandidatesMeasured = std::map<std::pair<std::string, std::string>, std::set<std::string>>;

// (problem key, variant) -> the candidates recorded for it, any status: gathered once per run.
CandidatesMeasured candidates_measured(const std::vector<json>& records) {
  CandidatesMeasured out;
  for (const auto& r : records) out[{r.value("problem_key", ""), r.value("variant", "")}].insert(r.value("candidate", ""));
  return out;
}

std::string measured_share(const CandidatesMeasured& measured, const json& lib) {
  const Variant* v = Registry::instance().find(lib["variant"].get<std::string>());
  if (!v) return "";
  const auto it = measured.find({lib["problem_key"].get<std::string>(), lib["variant"].get<std::string>()});
  const size_t seen = it == measured.end() ? 0 : it->second.size();
  const size_t total = v->space(Problem::from_json(lib["problem"], "record"), DeviceInfo::offline_sm90()).enumerate().size();
  return seen < total ? " [" + std::to_string(seen) + " of " + std::to_string(total) + " configs]" : "";
}

int cmd_best(const std::string& folder, bool as_json) {
  auto read = read_records(std::filesystem::path(folder) / "records.jsonl");
  for (const auto& p : read.problems) std::cerr << "warning: skipping unreadable record " << p << "\n";
  const auto choices = select_best(read.records);
  if (choices.empty()) {  // with --json too: an empty list is no answer
    std::cerr << "no ok records in " << folder << "\n";
    return 1;
  }
  const auto profiles = read_profiles(folder);
  const CandidatesMeasured measured = candidates_measured(read.records);
  auto profile_of = [&](const json& rec) {
    const auto it = profiles.find(profile_key(rec));
    return it == profiles.end() ? json() : it->second;
  };
  if (as_json) {
    json out = json::array();
    for (const auto& c : choices) {
      out.push_back({{"problem", c.problem_key}, {"best", c.best}, {"runner_up", c.runner_up}, {"margin", c.margin},
                     {"ties", c.ties.size()}});
      if (const json p = profile_of(c.best); !p.is_null()) out.back()["profile"] = p;
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (choices.empty()) {
    std::cerr << "no ok records in " << folder << "\n";
    return 1;
  }
  size_t key_width = 8, cand_width = 15;
  for (const auto& c : choices) {
    key_width = std::max(key_width, c.problem_key.size() + 2);
    cand_width = std::max(cand_width, c.best["candidate"].get<std::string>().size() + 2);
  }
  // %floor: floor_ms / time (may pass 100 where a method does less work than the direct sum);
  // %roof: the same against the variant's own work; %math: the own work against the ceiling of the math it
  // ran on (FP32 FMA, TF32, or a third of TF32 for 3xTF32). Libraries: each library variant's fastest config,
  // then the config the library picks by itself where it says (cuDNN's find), if that differs.
  std::cout << std::left << std::setw(int(key_width)) << "problem" << std::setw(int(cand_width)) << "best candidate"
            << std::right << std::setw(9) << "ms" << std::setw(7) << "GB/s" << std::setw(10) << "%floor" << std::setw(7)
            << "%roof" << std::setw(8) << "math" << std::setw(7) << "%math" << "  vs libraries (ms)  runner-up (margin)\n";
  for (const auto& c : choices) {
    const json& b = c.best;
    const double ms = b["time"]["median_ms"].get<double>();
    const MathFraction math = math_fraction(b);
    std::string libs;
    for (const auto& [variant, rec] : c.best_per_variant) {
      if (!rec.value("library", false)) continue;
      const double lib_ms = rec["time"]["median_ms"].get<double>();
      libs += (libs.empty() ? "" : ", ") + variant.substr(variant.find('.') + 1) + measured_share(measured, rec) + " " +
              fixed(lib_ms / ms, 2) + "x (" + short_ms(rec) + ")";
      const auto pick = c.library_pick.find(variant);
      if (pick != c.library_pick.end() && pick->second["candidate"] != rec["candidate"])
        libs += " pick " + fixed(pick->second["time"]["median_ms"].get<double>() / ms, 2) + "x (" + short_ms(pick->second) + ")";
    }
    std::cout << std::left << std::setw(int(key_width)) << c.problem_key << std::setw(int(cand_width))
              << b["candidate"].get<std::string>() << std::right << std::setw(9) << short_ms(b) << std::setw(7)
              << fixed(b.value("gbps_effective", 0.0), 0) << std::setw(10)
              << fixed(100 * b.value("roofline_fraction", 0.0), 1) << std::setw(7)
              << fixed(100 * b.value("roofline_fraction_own", b.value("roofline_fraction", 0.0)), 1) << std::setw(8)
              << math.math << std::setw(7) << (std::isnan(math.fraction) ? "-" : fixed(100 * math.fraction, 1)) << "  "
              << (libs.empty() ? "-" : libs) << "  "
              << (c.runner_up.is_null() ? "-" : c.runner_up["variant"].get<std::string>() + " (" + (c.margin >= 0 ? "+" : "") +
                                                 fixed(100 * c.margin, 1) + "%)")
              << (c.ties.empty() ? "" : "  [" + std::to_string(c.ties.size()) + " within noise]") << "\n";
    print_profile_notes(b, profile_of(b));
  }
  return 0;
}

// The table's choice on every problem of a run (typically shapes outside the table's grid) against the run's best.
int cmd_check_dispatch(const std::string& table, const std::string& run, bool as_json) {
  namespace fs = std::filesystem;
  if (table.empty() || run.empty())
    throw InputError("check-dispatch: give a table and a run (check-dispatch <table> <run>), or --cross-validate <run>...");
  const fs::path table_path = fs::is_directory(table) ? fs::path(table) / "dispatch.json" : fs::path(table);
  if (!fs::exists(table_path)) throw InputError("check-dispatch: no dispatch table at " + table_path.string());
  if (!records_file_exists(fs::path(run) / "records.jsonl"))
    throw InputError("check-dispatch: " + run + " is not a run folder (no records.jsonl or records.jsonl.gz)");
  const json summary = read_run_summary(run);
  const std::vector<json> records = read_records(fs::path(run) / "records.jsonl").records;  // fields checked
  json check;
  try {
    check = check_dispatch(read_json(table_path), summary.value("device", json::object()), records);
  } catch (const json::exception& e) {  // a field of the wrong kind: the table was not written by export
    const std::string what = e.what();  // "[json.exception.type_error.302] type must be ...": the reason alone
    throw InputError("check-dispatch: " + table_path.string() + ": not a table as convtune export writes it (" +
                     what.substr(what.find("] ") == std::string::npos ? 0 : what.find("] ") + 2) + ")");
  } catch (const InputError& e) {  // the table's own errors ("dispatch table: ...") name no file
    const std::string what = e.what(), own = "dispatch table";
    if (what.rfind(own, 0) != 0) throw;
    throw InputError("check-dispatch: " + own + " " + table_path.string() + what.substr(own.size()));
  }
  if (as_json) std::cout << check.dump(2) << "\n";
  else std::cout << format_dispatch_check(check);
  return 0;
}

// Each problem of the runs judged by a table made without it (harness/cross_validate.h).
// With leave_runs_out, each run is a fold: its problems (those no run before it measured) are judged by a table
// made from the other runs, as a network no sweep measured would be.
int cmd_cross_validate(const std::vector<std::string>& runs, int folds, bool leave_runs_out, const std::string& stray,
                       bool as_json) {
  if (!stray.empty())
    throw InputError("check-dispatch --cross-validate: " + stray + " given beside it; allowed: runs, each after its "
                     "own --cross-validate");
  json summary;
  std::vector<json> records;
  std::vector<int> run_of;  // records[i] is of runs[run_of[i]]
  for (size_t r = 0; r < runs.size(); ++r) {
    const RunTable t = read_run(runs[r]);
    if (summary.is_null()) summary = t.summary;
    else if (device_field(t.summary, "name") != device_field(summary, "name"))
      throw InputError("check-dispatch --cross-validate " + runs[r] + ": device.name is '" +
                       device_field(t.summary, "name") + "'; allowed: '" + device_field(summary, "name") +
                       "', the GPU model of " + runs[0]);
    records.insert(records.end(), t.records.begin(), t.records.end());
    run_of.resize(records.size(), int(r));
  }
  json cv;
  if (leave_runs_out) {
    std::vector<int> fold_runs;
    cv = cross_validate(summary, records, folds_by_group(records, run_of, fold_runs));
    cv["fold_runs"] = json::array();
    for (int r : fold_runs) cv["fold_runs"].push_back(runs[size_t(r)]);
  } else {
    cv = cross_validate(summary, records, folds);
  }
  if (as_json) std::cout << cv.dump(2) << "\n";
  else std::cout << format_cross_validation(cv);
  return 0;
}

int cmd_compare(const std::string& a, const std::string& b, bool as_json) {
  auto load = [](const std::string& folder) {
    auto read = read_records(std::filesystem::path(folder) / "records.jsonl");
    for (const auto& p : read.problems) std::cerr << "warning: skipping unreadable record " << p << "\n";
    std::map<std::string, Choice> by_key;
    for (auto& c : select_best(read.records)) by_key[c.problem_key] = c;
    return by_key;
  };
  const auto ra = load(a), rb = load(b);
  json out = json::array();
  for (const auto& [key, ca] : ra) {
    auto it = rb.find(key);
    if (it == rb.end()) continue;
    const json& x = ca.best;
    const json& y = it->second.best;
    const double ta = x["time"]["median_ms"].get<double>(), tb = y["time"]["median_ms"].get<double>();
    const double noise = noise_threshold(x, y);
    std::string verdict = std::abs(tb / ta - 1.0) <= noise ? "same within noise" : tb < ta ? "b faster" : "a faster";
    // A record measured while the GPU throttled says more about the GPU's state than about the kernel.
    const bool suspect = x.value("throttled", false) || y.value("throttled", false);
    if (suspect) verdict += ", suspect: " + std::string(x.value("throttled", false) ? "a" : "b") + " throttled";
    out.push_back({{"problem", key}, {"a", x["candidate"]}, {"b", y["candidate"]}, {"a_ms", ta}, {"b_ms", tb},
                   {"speedup_b_over_a", ta / tb}, {"noise", noise}, {"verdict", verdict}, {"suspect", suspect}});
  }
  if (out.empty()) {
    std::cerr << "convtune: the two runs share no problem with ok records\n";
    return 1;
  }
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << std::left << std::setw(28) << "problem" << std::right << std::setw(10) << "a ms" << std::setw(10)
            << "b ms" << std::setw(9) << "a/b" << "  verdict (noise band)\n";
  for (const auto& r : out)
    std::cout << std::left << std::setw(28) << r["problem"].get<std::string>() << std::right << std::setw(10)
              << fixed(r["a_ms"].get<double>(), 4) << std::setw(10) << fixed(r["b_ms"].get<double>(), 4) << std::setw(9)
              << fixed(r["speedup_b_over_a"].get<double>(), 3) << "  " << r["verdict"].get<std::string>() << " (+-"
              << fixed(100 * r["noise"].get<double>(), 1) << "%)\n";
  return 0;
}

// --strategies as names, each one checked, so that a typo names the flag rather than a spec field.
std::vector<std::string> replay_strategy_names(const std::string& strategies) {
  if (strategies.empty()) return strategy_names();
  std::string allowed;
  for (const auto& n : strategy_names()) allowed += (allowed.empty() ? "" : ", ") + n;
  std::vector<std::string> names;
  std::stringstream ss(strategies);
  for (std::string n; std::getline(ss, n, ',');) {
    if (std::find(strategy_names().begin(), strategy_names().end(), n) == strategy_names().end())
      throw InputError("--strategies: '" + n + "' is not a strategy; allowed: a comma list of " + allowed);
    names.push_back(n);
  }
  if (names.empty() || strategies.back() == ',')
    throw InputError("--strategies: '" + strategies + "' names no strategy; allowed: a comma list of " + allowed);
  return names;
}

// Replay judges strategies against the whole landscape: a run that measured part of it is refused.
void require_exhaustive_run(const std::string& folder) {
  const std::filesystem::path file = std::filesystem::path(folder) / "summary.json";
  if (!std::filesystem::exists(file)) {
    std::cerr << "warning: " << file.string() << " is missing: cannot tell whether the run was exhaustive\n";
    return;
  }
  const std::string gap = replay_data_gap(read_run_summary(folder));
  if (!gap.empty())
    throw InputError("replay: " + file.string() + ": " + gap + "; replay needs every candidate measured (allowed: "
                     "the run of an exhaustive sweep with no evaluation budget)");
}

int cmd_replay(const std::string& folder, const std::string& strategies, int trials, double budget, bool as_json) {
  const std::vector<std::string> names = replay_strategy_names(strategies);
  require_exhaustive_run(folder);
  auto read = read_records(std::filesystem::path(folder) / "records.jsonl");
  for (const auto& p : read.problems) std::cerr << "warning: skipping unreadable record " << p << "\n";
  if (select_best(read.records).empty()) {
    std::cerr << "no ok records in " << folder << "\n";
    return 1;
  }
  const auto results = replay_strategies(read.records, names, trials, budget);
  if (as_json) {
    json out = json::array();
    for (const auto& r : results) out.push_back(r.to_json());
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "replay of " << folder << ": " << trials << " trials per problem, budget " << fixed(100 * budget, 0)
            << "% of each problem's candidates (strategies' own default when 0)\n";
  size_t family_width = 8;  // "family" and a margin, or the longest family name
  for (const auto& r : results) family_width = std::max(family_width, r.family.size() + 2);
  const auto percent = [](double fraction, int digits) {
    return std::isfinite(fraction) ? fixed(100 * fraction, digits) + "%" : std::string("-");
  };
  std::cout << std::left << std::setw(12) << "strategy" << std::setw(int(family_width)) << "family" << std::right
            << std::setw(10) << "problems" << std::setw(16) << "evals to 5%" << std::setw(14) << "of space"
            << std::setw(11) << "success" << std::setw(12) << "final/best" << "\n";
  for (const auto& r : results)  // "never": no trial came within 5% of the best
    std::cout << std::left << std::setw(12) << r.strategy << std::setw(int(family_width)) << r.family << std::right
              << std::setw(10) << r.problems << std::setw(16)
              << (std::isfinite(r.mean_evals_to_5pct) ? fixed(r.mean_evals_to_5pct, 1) : std::string("never"))
              << std::setw(14) << percent(r.mean_fraction_of_space, 1) << std::setw(11) << percent(r.success_rate, 0)
              << std::setw(12) << fixed(r.mean_best_ratio, 3) << "\n";
  return 0;
}

int cmd_profile(const std::string& folder, const std::string& worker_targets, const ProfileSelection& sel,
                ProfileOptions opt) {
  if (!worker_targets.empty()) return run_profile_worker(worker_targets, opt.device);
  if (folder.empty()) throw InputError("profile: give a run folder (results/<gpu>/<run>)");
  use_plugins({}, folder);
  if (!records_file_exists(std::filesystem::path(folder) / "records.jsonl"))
    throw InputError("profile: " + folder + " is not a run folder (no records.jsonl or records.jsonl.gz)");
  const auto read = read_records(std::filesystem::path(folder) / "records.jsonl");
  const auto targets = choose_profile_targets(read.records, sel);
  if (targets.empty())
    throw InputError("profile: no ok record in " + folder + " matches" +
                     (sel.problem.empty() ? "" : " --problem '" + sel.problem + "'") +
                     (sel.candidate.empty() ? "" : " --candidate '" + sel.candidate + "'"));
  opt.ncu = require_ncu(opt.ncu);
  require_gpu("convtune profile");
  opt.folder = folder;
  const int ok = profile_targets(targets, opt, std::cerr);
  std::cerr << ok << " of " << targets.size() << " candidates profiled: " << folder << "/profiles.jsonl\n";
  if (ok > 0) cmd_best(folder, false);
  return ok == static_cast<int>(targets.size()) ? 0 : 1;
}

// pack / unpack: every folder checked before any changes.
int cmd_pack(const std::vector<std::string>& folders, bool pack) {
  for (const auto& f : folders) pack ? check_packable(f) : check_unpackable(f);
  for (const auto& f : folders) {
    const auto files = pack ? pack_run(f) : unpack_run(f);
    std::cout << f << ": " << (files.empty() ? (pack ? "already packed" : "not packed")
                                             : (pack ? "packed " : "unpacked ") + describe_converted(files)) << "\n";
  }
  return 0;
}

// The plan as JSON, one entry per (problem, candidate): what a shard would run, without a GPU.
void print_plan_json(const SweepSpec& spec, const DeviceInfo& dev, const Shard& shard, const SweepPlan& plan) {
  json out = {{"spec", spec.name}, {"device", dev.name}, {"strategy", spec.strategy}, {"shard", shard.to_json()},
              {"candidates", json::array()}};
  for (const auto& c : plan.candidates) {
    json e = {{"problem", c.problem.key()}, {"candidate", candidate_name(c.variant->name(), c.config)},
              {"status", c.status.ok ? "runnable" : "skipped"}};
    if (!c.status.ok) e["reason"] = c.status.reason;
    out["candidates"].push_back(e);
  }
  std::cout << out.dump(1) << "\n";
}

struct SweepFlags {
  bool dry_run = false, hot = false, in_process = false, quiet = false, no_ceilings = false, plot = false,
       profile_best = false, as_json = false, split_by_model = false, worker_prepare = false;
  std::string resume, results = "results", worker_for, shard, devices;
  std::vector<std::string> plugins;
  uint64_t seed = 0;
  int worker_gpu = 0;
};

std::string plot_script() { return std::string(CONVTUNE_SOURCE_DIR) + "/scripts/plot.py"; }

// The folder reaches plot.py as one argument (no shell): any name, quotes included, is plotted as typed.
int cmd_plot(const std::string& folder, const std::string& compare_with) {
  std::vector<std::string> args = {"python3", plot_script()};
  if (!compare_with.empty()) args.push_back("--compare=" + compare_with);
  args.insert(args.end(), {"--", folder});  // a folder named -x is a folder, not an option
  return run_program(args);
}

// After a sweep: best, the dispatch table, and profiles and plots when asked for, so that one command
// leaves everything behind. Returns the exit code.
int finish_sweep(const SweepResult& r, const SweepFlags& f) {
  std::cerr << "records: " << (r.folder / "records.jsonl").string() << "  counts: " << r.counts.dump() << "\n";
  if (r.context_lost) return 1;
  if (cmd_best(r.folder.string(), false) != 0) return 1;
  export_run(r.folder);
  std::cerr << "dispatch table: " << (r.folder / "dispatch.json").string() << " and "
            << (r.folder / "convtune_dispatch.h").string() << "\n";
  if (f.profile_best && !r.interrupted) {
    ProfileSelection winners;
    winners.libraries = false;
    const auto records = read_records(r.folder / "records.jsonl").records;
    ProfileOptions po;
    po.folder = r.folder;
    po.quiet = f.quiet;
    // On the run's first GPU (a multi-GPU run's GPUs are one model).
    const json devices = read_json(r.folder / "summary.json").value("devices", json::array());
    po.device = devices.empty() ? 0 : devices.front().value("index", 0);
    profile_targets(choose_profile_targets(records, winners), po, std::cerr);
    std::cerr << "profiles: " << (r.folder / "profiles.jsonl").string() << "\n";
  }
  if (f.plot) {
    if (run_program({"python3", plot_script(), "-q", "--", r.folder.string()}) != 0)
      std::cerr << "plots were not drawn (needs python3 with matplotlib: bash scripts/deps.sh test)\n";
    else
      std::cerr << "plots and report: " << (r.folder / "plots").string() << "/report.html\n";
  }
  return r.interrupted ? 130 : 0;
}

int cmd_sweep(const std::string& spec_path, const SweepFlags& f, const std::vector<std::string>& argv) {
  if (f.worker_for.empty()) use_plugins(f.plugins, f.resume);  // a worker has them from its environment
  SweepSpec spec = SweepSpec::load(spec_path);
  if (f.worker_for.empty() && spec.source.contains("plugins")) {  // for --profile-best's worker, which reads no spec
    std::vector<std::string> paths;  // relative to the spec's folder, as SweepSpec::load resolves them
    for (const auto& p : spec.source["plugins"])
      paths.push_back((std::filesystem::path(spec_path).parent_path() / p.get<std::string>()).lexically_normal().string());
    add_plugins_to_environment(paths);
  }
  if (f.hot) spec.measure.cold = false;
  SweepOptions opt;
  opt.results_root = f.results;
  opt.resume = f.resume;
  opt.seed = f.seed;
  opt.isolate = !f.in_process;
  opt.quiet = f.quiet;
  opt.ceilings = !f.no_ceilings;
  opt.spec_path = spec_path;
  opt.worker_gpu = f.worker_gpu;
  opt.worker_prepare = f.worker_prepare;
  if (!f.shard.empty()) opt.shard = Shard::parse(f.shard, "--shard");
  if (!f.worker_for.empty()) return run_sweep_worker(spec, f.worker_for, opt, argv, std::cerr);
  if (f.split_by_model && f.devices.empty()) throw InputError("--split-by-model: give the GPUs with --devices");
  if (!f.devices.empty()) {  // refused before anything is planned or written, --dry-run or not
    if (!f.dry_run) require_gpu("convtune sweep");
    opt.devices = parse_device_list(f.devices, DeviceInfo::count());
  }
  const bool dry_run = f.dry_run;
  if (dry_run) {
    const DeviceInfo dev = DeviceInfo::count() > 0 ? DeviceInfo::query(0) : DeviceInfo::offline_sm90();
    const SweepPlan plan = shard_plan(make_plan(spec, dev), opt.shard, shard_by_problem(spec.strategy));
    if (f.as_json) {
      print_plan_json(spec, dev, opt.shard, plan);
      return 0;
    }
    std::cout << "plan for " << spec.name << " on " << dev.name << ": " << spec.problems.size() << " problems, "
              << plan.runnable() << " runnable candidates, " << plan.candidates.size() - plan.runnable()
              << " skipped\n";
    if (DeviceInfo::count() == 0)
      std::cout << "  (no GPU here: planned with an H100's limits and compute capability 9.0; on a GPU the plan "
                   "takes that device's, and Hopper-only variants are skipped elsewhere)\n";
    for (const auto& p : plan.to_json()) {
      std::cout << "  " << p["problem"].get<std::string>() << ": " << p["candidates"] << " candidates\n";
      for (const auto& [variant, reasons] : p["skipped"].items()) {
        // Reasons that differ only in their numbers are one line, shown by its first reason.
        struct Kind {
          std::string first;  // the first reason of the kind
          int count = 0, reasons = 0;
        };
        std::map<std::string, Kind> kinds;  // the reason with its numbers masked -> its reasons
        for (const auto& [reason, n] : reasons.items()) {
          std::string masked;
          for (char ch : reason)
            if (!std::isdigit(static_cast<unsigned char>(ch))) masked += ch;
            else if (masked.empty() || masked.back() != '#') masked += '#';
          Kind& k = kinds[masked];
          if (k.reasons++ == 0) k.first = reason;
          k.count += n.get<int>();
        }
        for (const auto& [masked, k] : kinds)
          std::cout << "      skip " << k.count << " of " << variant << ": " << k.first
                    << (k.reasons > 1 ? " (and " + std::to_string(k.reasons - 1) + " reasons alike)" : "") << "\n";
      }
    }
    // Each candidate: verification, warm-up and samples until 1% noise; a rough upper bound.
    const double per = std::min(spec.measure.time_cap_s, 0.25) + 0.05;
    std::cout << "estimated time: up to " << fixed(double(plan.runnable()) * per / 60.0, 1)
              << " min of measurement, plus kernel compilation (cached after the first run)\n";
    return 0;
  }
  if (f.profile_best) require_ncu("");  // before the sweep, not after it
  if (!f.split_by_model) return finish_sweep(run_sweep(spec, opt, argv, std::cerr), f);
  int rc = 0;
  for (const SweepResult& r : run_sweep_split_by_model(spec, opt, argv, std::cerr)) {
    const int one = finish_sweep(r, f);
    if (rc == 0 || one == 1) rc = one;
  }
  return rc;
}

// A whole number in (low, high] or [low, high], its range in words: CLI11's own checks pass NaN and state
// PositiveNumber's range up to DBL_MAX, 309 digits.
CLI::Validator number_in(double low, bool open_low, double high, const std::string& allowed, const std::string& name) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        if (read_whole_number(text, v) && (open_low ? v > low : v >= low) && v <= high) return "";
        return "'" + text + "' is not allowed; allowed: " + allowed;
      },
      name);
}

CLI::Validator seconds_up_to(double most) {
  return number_in(0, true, most, "a number of seconds in (0, " + fixed(most, 0) + "]", "SECONDS");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"convtune: autotuning benchmark and profiling harness for GPU convolution"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(CONVTUNE_VERSION) + " (" + CONVTUNE_GIT_SHA + ")");
  std::vector<std::string> args(argv, argv + argc);

  bool as_json = false, no_ceilings = false, run_no_ceilings = false;
  auto* devices = app.add_subcommand("devices", "GPUs, their limits and measured ceilings");
  devices->add_flag("--json", as_json, "print JSON");
  devices->add_flag("--no-ceilings", no_ceilings, "skip measuring copy bandwidth and FP32 rate");

  std::string family, problem, variant, config, spec_path, folder;
  auto* list = app.add_subcommand("list", "variants and their parameter spaces (works without a GPU)");
  list->add_option("--family", family, "only this family");
  list->add_option("--problem", problem, "show how many configs fit this problem, e.g. conv2d:h=8192,w=8192,r=3");
  list->add_flag("--json", as_json, "print JSON");
  std::vector<std::string> plugin_paths;
  const std::string plugins_help = "plug-in folders (plugin.json and kernels; see convtune new-variant), or run folders "
                                   "or dispatch tables carrying plug-ins";
  list->add_option("--plugins", plugin_paths, plugins_help);

  bool hot = false;
  double time_cap = 2.0;
  uint64_t seed = 0;
  auto* run = app.add_subcommand("run", "one candidate on one problem: verify, time, print its record");
  run->add_option("--variant", variant, "variant name (see list)")->required();
  run->add_option("--problem", problem, "family:dims, e.g. conv2d:h=8192,w=8192,r=3")->required();
  run->add_option("--config", config, "name=value,... (unnamed parameters take their first value)");
  run->add_flag("--hot", hot, "do not flush L2 before each sample");
  run->add_flag("--no-ceilings", run_no_ceilings,
                "do not measure the ceilings (no roofline figures; seconds saved, minutes under compute-sanitizer)");
  run->add_option("--plugins", plugin_paths, plugins_help);
  run->add_option("--time-cap", time_cap, "seconds of sampling at most, in (0, 3600]")->check(seconds_up_to(3600));

  SweepFlags sf;
  auto* sweep = app.add_subcommand("sweep", "run a sweep spec; records go to results/<device>/<spec>-<time>/");
  sweep->add_option("spec", spec_path, "sweep spec (sweeps/*.json)")->required();
  sweep->add_flag("--dry-run", sf.dry_run, "print the plan (candidates, skipped points with reasons) and stop");
  sweep->add_option("--resume", sf.resume, "finish an interrupted run folder");
  sweep->add_option("--results", sf.results, "root folder for run folders");
  sweep->add_flag("--hot", sf.hot, "do not flush L2 before each sample");
  sweep->add_option("--seed", sf.seed, "seed of the random inputs, 1 or more (default, or 0: from the clock)")
      ->check(CLI::Range(uint64_t(0), uint64_t(std::numeric_limits<int64_t>::max())));
  sweep->add_flag("--in-process", sf.in_process, "no worker process: a crashing candidate ends the sweep");
  sweep->add_flag("--quiet", sf.quiet, "no progress lines");
  sweep->add_flag("--plot", sf.plot, "draw the plots and the report at the end (python3 + matplotlib)");
  sweep->add_flag("--no-ceilings", sf.no_ceilings, "do not measure the ceilings (no roofline figures)");
  sweep->add_option("--shard", sf.shard, "run only part i of n of the spec's work (i/n, 0 <= i < n <= 100000); join with merge");
  sweep->add_flag("--json", sf.as_json, "with --dry-run: the plan as JSON");
  sweep->add_flag("--profile-best", sf.profile_best, "at the end, profile each problem's winner under Nsight Compute");
  sweep->add_option("--devices", sf.devices, "GPUs to sweep on, one worker each, one run folder: all, or indices "
                                             "such as 0,2,3 (default: GPU 0)");
  sweep->add_flag("--split-by-model", sf.split_by_model, "with --devices over several GPU models: one run folder per "
                                                          "model (otherwise refused)");
  sweep->add_option("--plugins", sf.plugins, plugins_help);
  sweep->add_option("--worker-for", sf.worker_for, "internal: run as the supervised worker of this run folder");
  sweep->add_option("--worker-gpu", sf.worker_gpu, "internal: the GPU index the worker's records carry")->group("");
  sweep->add_flag("--worker-prepare", sf.worker_prepare, "internal: the worker only prepares the run folder")->group("");

  auto* best = app.add_subcommand("best", "best candidate per problem of a run folder");
  best->add_option("folder", folder, "run folder")->required();
  best->add_flag("--json", as_json, "print JSON");

  std::string folder_b;
  auto* compare = app.add_subcommand("compare", "per problem: time ratio of the best candidates of two runs, and whether it exceeds noise");
  compare->add_option("a", folder, "run folder a")->required();
  compare->add_option("b", folder_b, "run folder b")->required();
  compare->add_flag("--json", as_json, "print JSON");

  auto* plot = app.add_subcommand("plot", "plots and a report of a run folder (runs scripts/plot.py)");
  plot->add_option("folder", folder, "run folder")->required();
  plot->add_option("--compare", folder_b, "a second run folder to compare with");

  ProfileSelection psel;
  ProfileOptions popt;
  std::string worker_targets;
  auto* profile = app.add_subcommand(
      "profile", "re-run a run's chosen candidates under Nsight Compute; appends <run>/profiles.jsonl");
  profile->add_option("folder", folder, "run folder");
  profile->add_option("--top", psel.top, "the N fastest candidates of each problem (default 1)")->check(CLI::Range(1, 1000));
  profile->add_flag("!--no-libraries", psel.libraries, "leave out each problem's fastest library candidate");
  profile->add_option("--candidate", psel.candidate, "only candidates whose name contains this");
  profile->add_option("--problem", psel.problem, "only problems whose key contains this");
  profile->add_option("--ncu", popt.ncu, "path of ncu (default: PATH, CUDA toolkit, /opt/nvidia/nsight-compute)");
  profile->add_option("--device", popt.device, "GPU index")->check(CLI::Range(0, 1023));
  profile->add_flag("--quiet", popt.quiet, "no progress lines");
  profile->add_option("--timeout", popt.timeout_s, "seconds one problem's ncu session may take (default 900)")
      ->check(seconds_up_to(86400));
  profile->add_option("--worker", worker_targets, "internal: the process ncu runs")->group("");

  std::string new_family, new_name, new_dir;
  auto* new_variant = app.add_subcommand("new-variant", "write a minimal working plug-in of a family (a plain kernel and "
                                                        "its manifest) to tune from: docs/PLUGINS.md");
  new_variant->add_option("family", new_family, "the family")->required();
  new_variant->add_option("name", new_name, "the variant's name after '<family>.'")->required();
  new_variant->add_option("-o,--output", new_dir, "the plug-in's folder (new, or without plugin.json and kernel.cuh)")->required();

  std::vector<std::string> merge_runs_in;
  std::string merge_out;
  auto* merge = app.add_subcommand("merge", "join the run folders of a sharded sweep into one run");
  merge->add_option("runs", merge_runs_in, "shard run folders")->required();
  merge->add_option("-o,--output", merge_out, "the merged run folder (must not hold a run)")->required();

  std::vector<std::string> export_runs;
  std::string export_out;
  auto* exp = app.add_subcommand("export", "write dispatch.json and the C++ header convtune_dispatch.h into a run folder; "
                                           "with several runs (one per GPU model) and -o, one fleet table");
  exp->add_option("runs", export_runs, "run folder(s)")->required();
  exp->add_option("-o,--output", export_out, "where a fleet table goes (several runs)");
  std::vector<std::string> export_repeats, export_train;
  exp->add_option("--train", export_train,
                  "another run on the GPU model of a run given (other shapes): its records train that table's "
                  "performance model too, not its entries (repeatable)")
      ->allow_extra_args(false);
  exp->add_option("--repeat", export_repeats,
                  "another run on the GPU model of a run given (the spec measured again): that model's table "
                  "then takes each candidate's slowest run, so a choice is fast in every run (repeatable)")
      ->allow_extra_args(false);

  std::string check_table, check_run;
  std::vector<std::string> cv_runs;
  int cv_folds = 10;
  auto* check = app.add_subcommand("check-dispatch", "a dispatch table's choices on the problems of another run "
                                                     "(shapes it never measured) against each problem's measured best; "
                                                     "or --cross-validate runs of one GPU model");
  check->add_option("table", check_table, "dispatch.json, or the run folder that holds it");
  check->add_option("run", check_run, "run folder, measured on the GPU model of the table");
  check->add_option("--cross-validate", cv_runs, "run folder(s) of one GPU model: each problem judged by a table "
                                                 "made from the others (model, nearest rule, first-use tuning)")
      ->allow_extra_args(false);
  auto* folds_option = check->add_option("--folds", cv_folds, "folds of the cross-validation (per family; its problem "
                                                              "count: leave one out)")
                           ->check(CLI::Range(2, 100000));
  bool cv_leave_runs_out = false;
  check->add_flag("--leave-runs-out", cv_leave_runs_out, "with --cross-validate: each run a fold, its problems judged by "
                                                         "a table made from the other runs (whole networks held out)")
      ->excludes(folds_option);
  check->add_flag("--json", as_json, "print JSON");

  std::string strategies;
  int trials = 50;
  double budget = 0.25;
  auto* replay = app.add_subcommand("replay", "strategy quality without a GPU: replay strategies on an exhaustive run's measurements");
  replay->add_option("folder", folder, "run folder of an exhaustive sweep")->required();
  replay->add_option("--strategies", strategies, "comma-separated (default: all)");
  replay->add_option("--trials", trials, "seeds per problem")->check(CLI::Range(1, 10000));
  replay->add_option("--budget", budget, "evaluations allowed, as a fraction of each problem's candidates (0: defaults)")
      ->check(number_in(0, false, 1, "a fraction in [0, 1]", "FRACTION in [0, 1]"));
  replay->add_flag("--json", as_json, "print JSON");

  std::vector<std::string> pack_folders;
  auto* pack = app.add_subcommand("pack", "gzip a finished run's records.jsonl and profiles.jsonl to <name>.gz (a tenth "
                                          "of the size, for shipped runs); every command reads either form");
  pack->add_option("runs", pack_folders, "run folder(s)")->required();
  auto* unpack = app.add_subcommand("unpack", "the reverse of pack: records.jsonl and profiles.jsonl again");
  unpack->add_option("runs", pack_folders, "run folder(s)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "convtune: " << e.what() << " (see --help)\n";
    return kExitInputError;
  }

  try {
    load_plugins_from_environment();
    load_cli_plugins(plugin_paths);
    if (*new_variant) {
      write_plugin_template(new_family, new_name, new_dir);
      std::cout << (std::filesystem::path(new_dir) / "plugin.json").string() << "\n"
                << (std::filesystem::path(new_dir) / "kernel.cuh").string() << "\n";
      return 0;
    }
    if (*devices) return cmd_devices(as_json, !no_ceilings);
    if (*list) return cmd_list(family, problem, as_json);
    if (*run) return cmd_run(variant, problem, config, hot, time_cap, !run_no_ceilings);
    if (*sweep) return cmd_sweep(spec_path, sf, args);
    if (*best) return cmd_best(folder, as_json);
    if (*compare) return cmd_compare(folder, folder_b, as_json);
    if (*plot) return cmd_plot(folder, folder_b);
    if (*exp) {
      const bool fleet = export_runs.size() > 1 || !export_out.empty();
      if (fleet && export_out.empty()) throw InputError("export: several runs make a fleet table: give -o <folder>");
      std::vector<std::filesystem::path> runs(export_runs.begin(), export_runs.end());
      const std::vector<std::filesystem::path> repeats(export_repeats.begin(), export_repeats.end());
      const std::vector<std::filesystem::path> train(export_train.begin(), export_train.end());
      if (fleet) export_fleet(runs, export_out, repeats, train);
      else export_run(runs.front(), repeats, train);
      const std::filesystem::path where = fleet ? std::filesystem::path(export_out) : runs.front();
      std::cout << (where / "dispatch.json").string() << "\n" << (where / "convtune_dispatch.h").string() << "\n";
      if (!fleet) std::cout << (where / "t4.json").string() << " (every record in the T4 format)\n";
      return 0;
    }
    if (*check) use_plugins({}, check_run);  // whether a plug-in the table chose can run there
    if (*replay) use_plugins({}, folder);
    if (*check && cv_leave_runs_out && cv_runs.empty())
      throw InputError("check-dispatch --leave-runs-out: no --cross-validate runs; allowed: with two or more of them");
    if (*check && !cv_runs.empty()) return cmd_cross_validate(cv_runs, cv_folds, cv_leave_runs_out, check_table, as_json);
    if (*check) return cmd_check_dispatch(check_table, check_run, as_json);
    if (*replay) return cmd_replay(folder, strategies, trials, budget, as_json);
    if (*profile) return cmd_profile(folder, worker_targets, psel, popt);
    if (*pack || *unpack) return cmd_pack(pack_folders, bool(*pack));
    if (*merge) {
      std::vector<std::filesystem::path> runs(merge_runs_in.begin(), merge_runs_in.end());
      const json summary = merge_runs(runs, merge_out, args, std::cerr);
      const json m = summary["merge"];
      return m["gaps"].get<size_t>() == 0 && m["missing_shards"].empty() ? 0 : 1;
    }
  } catch (const InputError& e) {
    std::cerr << "convtune: " << e.what() << "\n";
    return kExitInputError;
  } catch (const std::exception& e) {
    std::cerr << "convtune: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
