// Helpers the CPU tests share: error messages, exact values, and compiling many kernels at once.
#pragma once
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <set>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/error.h"
#include "harness/jit.h"
#include "harness/json_file.h"
#include "harness/params.h"
#include "harness/plugin.h"
#include "harness/problem.h"
#include "harness/records.h"
#include "harness/shard.h"
#include "harness/variant.h"
#include "variants/layer_common/layer_shape.h"

namespace convtune::test {

// The variants this build registers for a family (every family with ""), without the plugins that a test of the
// same process may have loaded into the registry (the plugin tests do; ctest runs the suite in shards).
inline std::vector<const Variant*> built_in_variants(const std::string& family = "") {
  std::vector<const Variant*> out;
  for (const Variant* v : family.empty() ? Registry::instance().all() : Registry::instance().of_family(family))
    if (!dynamic_cast<const PluginVariant*>(v)) out.push_back(v);
  return out;
}

// The shipped H100 conv2d run the offline tests read.
inline const std::filesystem::path kShipped =
    std::filesystem::path(CONVTUNE_SOURCE_DIR) / "results/nvidia-h100-80gb-hbm3/conv2d-register-tiled-20261123-161324";

// The shipped run cut to one problem (its 72 records; a merge of the whole run takes seconds), split into two
// shard folders under `root` as two `--shard i/2` jobs would have written them.
inline std::vector<std::filesystem::path> two_shard_folders(const std::filesystem::path& root) {
  json summary = read_json(kShipped / "summary.json");
  summary["spec"]["problems"] = {{{"family", "conv2d"}, {"h", 2048}, {"w", 2048}, {"r", 1}}};
  const auto records = read_records(kShipped / "records.jsonl").records;
  std::vector<std::filesystem::path> out;
  for (int i = 0; i < 2; ++i) {
    const std::filesystem::path f = root / ("shard" + std::to_string(i));
    std::filesystem::create_directories(f);
    summary["shard"] = Shard{i, 2}.to_json();
    write_json_atomically(f / "summary.json", summary);
    RecordWriter w(f / "records.jsonl");
    for (const auto& r : records)
      if (r["problem_key"] == "conv2d/h=2048,r=1,w=2048" && owns({i, 2}, shard_key(r["problem_key"], r["candidate"], false)))
        w.append(r);
    out.push_back(f);
  }
  return out;
}

// Uniform values in [-amplitude, amplitude] (the operand's, 1 unless its family says otherwise) for every
// input operand of p (all but the output), from `seed`.
inline std::vector<std::vector<float>> random_inputs(const Problem& p, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Operand> ops = p.operands();
  ops.pop_back();  // the output
  std::vector<std::vector<float>> in;
  for (const Operand& op : ops) {
    std::uniform_real_distribution<float> dist(float(-op.amplitude), float(op.amplitude));
    in.emplace_back(size_t(op.elements));
    for (float& v : in.back()) v = dist(rng);
  }
  return in;
}

// The CLI the tests run: this build's, or CONVTUNE_TEST_CLI's (mutation runs test a mutant's CLI).
inline std::string cli_binary() {
  const char* other = std::getenv("CONVTUNE_TEST_CLI");
  return other && *other ? other : CONVTUNE_BINARY;
}

// A family's registered variants without plug-ins: plug-in tests load theirs into the one registry, and
// the suite also runs in one process (mutation runs), not only one test per process under ctest.
inline std::vector<const Variant*> builtin_variants(const std::string& family) {
  std::vector<const Variant*> out;
  for (const Variant* v : Registry::instance().of_family(family))
    if (!dynamic_cast<const PluginVariant*>(v)) out.push_back(v);
  return out;
}

// A conv2d problem, unvalidated (rule tests build shapes the spec would refuse).
inline Problem conv2d(int64_t h, int64_t w, int64_t r) { return Problem{"conv2d", {{"h", h}, {"w", w}, {"r", r}}}; }

// ||got - want|| / ||want|| and max |got - want| / max |want|; NaN (an element never written) fails both.
inline std::pair<double, double> reference_errors(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0, norm = 0, max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::fabs(got[i] - want[i]);
    if (std::isnan(e)) return {INFINITY, INFINITY};
    diff += e * e, norm += want[i] * want[i];
    max_diff = std::max(max_diff, e), max_ref = std::max(max_ref, std::fabs(want[i]));
  }
  if (norm == 0) return {std::sqrt(diff), max_diff};  // an all-zero reference (ReLU): absolute errors
  return {std::sqrt(diff / norm), max_diff / max_ref};
}

// The three convolution-layer families, one a pass, and the pass of each.
inline const char* const kLayerPassFamilies[] = {"layer_fwd", "layer_bwd_data", "layer_bwd_filter"};
inline LayerPass layer_pass_of(const std::string& family) {
  return family == "layer_fwd" ? LayerPass::forward : family == "layer_bwd_data" ? LayerPass::bwd_data : LayerPass::bwd_filter;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// An environment variable set (value) or unset (nullptr) for one scope, and put back as it was at its end.
struct ScopedEnv {
  std::string name, saved;
  bool was_set;
  ScopedEnv(const char* variable, const char* value) : name(variable) {
    const char* old = std::getenv(variable);
    was_set = old != nullptr;
    if (was_set) saved = old;
    value ? setenv(variable, value, 1) : unsetenv(variable);
  }
  ~ScopedEnv() { was_set ? setenv(name.c_str(), saved.c_str(), 1) : unsetenv(name.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

// The InputError's message of `f`, or "" (and a failure) when it throws nothing or something else.
template <class F>
std::string input_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InputError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

inline void expect_values(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << what << " [" << i << "]";
}

// CONVTUNE_NVRTC_ALL=1 (the GPU machine, many cores): the NVRTC compile tests compile every point they
// consider. Otherwise each variant's points are thinned with covering_sample, so that a CPU-only
// `make test` on 2 cores takes minutes, not twenty.
inline bool compile_every_point() {
  const char* all = std::getenv("CONVTUNE_NVRTC_ALL");
  return all && std::string(all) == "1";
}

// Indices of a deterministic sample of `points` (configs, each with what else changes its code: the
// problem's dims such as "r", the variant's name): every stride-th point (stride coprime to 2..7, so that
// no short cycle of values is skipped; none when stride_target is 0), then greedily the point holding the
// most name=value pairs not in the sample yet (per unit of `costs`, when given: a cheap point that covers
// one value beats a costly one that covers two), until every value of every key is compiled at least once.
// Every point under compile_every_point().
inline std::vector<size_t> covering_sample(const std::vector<json>& points, size_t stride_target,
                                           const std::vector<double>& costs = {}) {
  std::vector<size_t> chosen;
  if (compile_every_point() || points.size() <= stride_target) {
    for (size_t i = 0; i < points.size(); ++i) chosen.push_back(i);
    return chosen;
  }
  std::vector<std::vector<std::string>> keys(points.size());
  std::set<std::string> uncovered;
  for (size_t i = 0; i < points.size(); ++i)
    for (const auto& [name, value] : points[i].items()) uncovered.insert(keys[i].emplace_back(name + "=" + value.dump()));
  auto take = [&](size_t i) {
    for (const auto& k : keys[i]) uncovered.erase(k);
    chosen.push_back(i);
  };
  if (stride_target > 0) {
    size_t stride = std::max<size_t>(1, points.size() / stride_target);
    while (std::gcd(stride, size_t(210)) != 1) ++stride;
    for (size_t i = 0; i < points.size(); i += stride) take(i);
  }
  while (!uncovered.empty()) {
    size_t best = 0;
    double best_gain = 0;
    for (size_t i = 0; i < points.size(); ++i) {
      double gain = 0;
      for (const auto& k : keys[i]) gain += uncovered.count(k);
      if (!costs.empty()) gain /= costs[i];
      if (gain > best_gain) best = i, best_gain = gain;
    }
    take(best);
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  return chosen;
}

// The CPU's sample of NVRTC programs (distinct ones, in their order): covering_sample over what changes the
// code, i.e. each program's kernel source and each of its options ("-DTILE=64") as compiled with that source,
// so that every kernel file and every value of every define it takes compiles at least once; combinations
// are left to CONVTUNE_NVRTC_ALL=1 (then every program). Options starting with one of `shared` (a problem's
// dims every source takes, e.g. "-DRADIUS=") need each value once in any source, not once per source.
// Defines computed from the others (kDerivedDefines) are no keys of their own. A value is covered by the
// cheapest program that has it, as compile_cost estimates (CI time: conv1d's tiled kernel at 16 outputs a
// thread and a 1025-tap filter takes 30 s, at 4 outputs a thread 1 s). stride_target as in covering_sample.
const std::vector<std::string> kDerivedDefines = {"-DSMEM_BYTES="};

inline bool starts_with_any(const std::string& option, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& prefix) { return option.rfind(prefix, 0) == 0; });
}

// A program's compile time grows with the sizes it unrolls: the product of its numeric defines' values.
inline double compile_cost(const JitProgram& program) {
  double cost = 1;
  for (const std::string& option : program.options) {
    const size_t eq = option.find('=');
    if (eq == std::string::npos || starts_with_any(option, kDerivedDefines)) continue;
    char* end = nullptr;
    const double value = std::strtod(option.c_str() + eq + 1, &end);
    if (end != option.c_str() + eq + 1 && *end == '\0') cost *= 1 + std::abs(value);
  }
  return cost;
}

inline std::vector<JitProgram> covering_programs(const std::vector<JitProgram>& programs, size_t stride_target = 2,
                                                 const std::vector<std::string>& shared = {}) {
  std::vector<JitProgram> distinct;
  std::vector<json> points;
  std::vector<double> costs;
  std::set<std::string> seen;
  for (const JitProgram& program : programs) {
    if (!seen.insert(program.describe()).second) continue;
    distinct.push_back(program);
    json point = {{"source", program.source}};
    for (const std::string& option : program.options)
      if (!starts_with_any(option, kDerivedDefines))
        point[starts_with_any(option, shared) ? option : program.source + " " + option] = true;
    points.push_back(std::move(point));
    costs.push_back(compile_cost(program));
  }
  std::vector<JitProgram> chosen;
  for (size_t i : covering_sample(points, stride_target, costs)) chosen.push_back(distinct[i]);
  return chosen;
}

// Compiles every program for sm_90 on all cores; a failure (with NVRTC's log) per program that does not
// compile, yields a suspiciously small cubin, or whose log names one of `forbidden` (compiler notes).
inline void expect_all_compile(const std::vector<JitProgram>& programs,
                               const std::vector<std::string>& forbidden = {}) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < programs.size();) {
        try {
          std::string log;
          if (nvrtc_compile(programs[i], "sm_90", &log).size() < 256) throw std::runtime_error("suspiciously small cubin");
          for (const std::string& f : forbidden)
            if (log.find(f) != std::string::npos) throw std::runtime_error("compiler note " + f + ":\n" + log);
        } catch (const CompileError& e) {
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back(std::string(e.what()) + "\n" + e.log);
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back(programs[i].describe() + ": " + e.what());
        }
      }
    });
  for (auto& th : pool) th.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// An empty folder of the test's own, <tmp>/convtune-<tag>-<pid>: emptied first, as an earlier run that
// crashed may have left it full.
inline std::filesystem::path fresh_temp_dir(const std::string& tag) {
  const std::filesystem::path d =
      std::filesystem::temp_directory_path() / ("convtune-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// A file's whole text ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

// `argv` (argv[0] looked up on PATH) with no shell between: each argument reaches it as written; its
// output and errors pass through files in `scratch`.
inline CliResult run_captured(std::vector<std::string> argv, const std::filesystem::path& scratch) {
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const std::filesystem::path out = scratch / "cli.out", err = scratch / "cli.err";
  posix_spawn_file_actions_t io;
  posix_spawn_file_actions_init(&io);
  posix_spawn_file_actions_addopen(&io, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&io, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  CliResult r;
  if (posix_spawnp(&pid, cargv[0], &io, nullptr, cargv.data(), environ) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  posix_spawn_file_actions_destroy(&io);
  r.out = read_text(out);
  r.err = read_text(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

// The CLI (cli_binary()) with these arguments, no shell between: each argument reaches it as written.
inline CliResult convtune_cli(std::vector<std::string> args, const std::filesystem::path& scratch) {
  args.insert(args.begin(), cli_binary());
  return run_captured(std::move(args), scratch);
}

}  // namespace convtune::test
