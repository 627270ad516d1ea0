// Tests written against mutants that survived the CPU suite in a mutation run (scripts/mutate.py,
// docs/MUTATION.md). Each one was seen failing with its one-line mutant planted by hand and passing
// without it; the comment above each test names the mutant. Expected values are worked out by hand from
// the rule, not copied from the program's output.
#include <gtest/gtest.h>

#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/dispatch_rules.h"
#include "harness/error.h"
#include "harness/fleet.h"
#include "harness/family.h"
#include "harness/gpu_kernels.h"
#include "harness/measure.h"
#include "harness/json_file.h"
#include "harness/merge.h"
#include "harness/records.h"
#include "harness/replay.h"
#include "harness/run_folder.h"
#include "harness/runner.h"
#include "harness/perf_model.h"
#include "harness/spec.h"
#include "harness/sweep_options.h"
#include "harness/strategies/common.h"
#include "harness/variant.h"
#include "harness/shard.h"
#include "test_support.h"
#include "variants/conv1d_parts/parts_common.h"
#include "variants/layer_common/implicit_gemm.h"

namespace convtune {
namespace {

namespace fs = std::filesystem;

// Runs `body` in a forked child and returns its exit status, or -1 when it ran past `seconds` (the child is
// then killed): a mutant that loops forever fails the test instead of hanging the suite.
template <class F>
int mk_exit_status_within(F body, int seconds) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  if (pid < 0) return -2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -3;
}

// The message of the InputError that reading `lines` as a records file throws ("" if none), with the file's
// path written as "FILE"; `count` gets the number of records read when none is thrown.
std::string mk_read_error(const std::string& tag, const std::vector<std::string>& lines, size_t* count = nullptr) {
  const fs::path dir = test::fresh_temp_dir("mk-" + tag);
  const fs::path path = dir / "records.jsonl";
  {
    std::ofstream out(path);
    for (const auto& l : lines) out << l << "\n";
  }
  std::string error;
  try {
    const size_t n = read_records(path).records.size();
    if (count) *count = n;
  } catch (const InputError& e) {
    error = e.what();
    if (error.rfind(path.string(), 0) == 0) error = "FILE" + error.substr(path.string().size());
  }
  fs::remove_all(dir);
  return error;
}

const std::string kMkGood =
    R"({"problem_key": "conv2d:h=8,r=1,w=8", "candidate": "conv2d.naive", "status": "ok", "time": {"median_ms": 1.5}})";


json mk_profile(const std::string& candidate, double dram_bytes) {
  return {{"problem_key", "conv2d:h=8192,r=1,w=8192"}, {"candidate", candidate}, {"status", "ok"},
          {"dram_bytes", dram_bytes}};
}

// ---- Survivors of the 2026-11-28 sample (seed 9) ----------------------------------------------------------

// measure.cpp:48, a timing's JSON without min_ms and mean_ms (every record's timing block): each field pinned.
TEST(MutantKills, TimingJsonHoldsEveryField) {
  Timing t;
  t.median_ms = 1.5, t.min_ms = 1.25, t.mean_ms = 1.75, t.stdev_ms = 0.5, t.rel_stderr = 0.125;
  t.samples = 7;
  t.converged = true;
  const json want = {{"median_ms", 1.5}, {"min_ms", 1.25}, {"mean_ms", 1.75}, {"stdev_ms", 0.5},
                     {"samples", 7},     {"rel_stderr", 0.125}, {"converged", true}};
  EXPECT_EQ(t.to_json(), want);
}

// runner.cpp:169, the verification record without max_abs; and the pass rule itself (the runner's pass/fail
// decision): rel_l2 = sqrt(sq_err / sq_ref), max_rel = max_abs_err / max_abs_ref, both within the
// tolerance inclusive, no non-finite output. Worked by hand: sq_err 4e-12, sq_ref 4 -> rel_l2 1e-6.
TEST(MutantKills, VerificationVerdictPinsEveryFieldAndThePassRule) {
  ErrorSums e;
  e.sq_err = 4e-12, e.sq_ref = 4, e.max_abs_err = 2e-5, e.max_abs_ref = 0.5;
  const Tolerance tol{1e-5, 1e-4};
  const json v = verification_verdict(e, tol);
  EXPECT_DOUBLE_EQ(v.at("rel_l2").get<double>(), 1e-6);
  EXPECT_DOUBLE_EQ(v.at("max_abs").get<double>(), 2e-5);
  EXPECT_DOUBLE_EQ(v.at("max_rel").get<double>(), 4e-5);
  EXPECT_EQ(v.at("nonfinite"), 0);
  EXPECT_EQ(v.at("tolerance"), (json{{"rel_l2", 1e-5}, {"max_rel", 1e-4}}));
  EXPECT_EQ(v.at("pass"), true);
  EXPECT_EQ(v.size(), 6u);

  ErrorSums at_max = e;
  at_max.max_abs_err = 5e-5;  // max_rel 1e-4: at the tolerance passes
  EXPECT_EQ(verification_verdict(at_max, tol).at("pass"), true);
  at_max.max_abs_err = 5.0001e-5;
  EXPECT_EQ(verification_verdict(at_max, tol).at("pass"), false);
  ErrorSums rel = e;
  rel.sq_err = 4.0004e-10;  // rel_l2 just over 1e-5
  EXPECT_EQ(verification_verdict(rel, tol).at("pass"), false);
  // Both bounds inclusive, in exact binary fractions: rel_l2 = sqrt(1 / 16) = 0.25, max_rel = 0.125 / 1.
  ErrorSums edge;
  edge.sq_err = 1, edge.sq_ref = 16, edge.max_abs_err = 0.125, edge.max_abs_ref = 1;
  EXPECT_EQ(verification_verdict(edge, Tolerance{0.25, 0.125}).at("pass"), true);
  EXPECT_EQ(verification_verdict(edge, Tolerance{0.25, 0.0625}).at("pass"), false);
  EXPECT_EQ(verification_verdict(edge, Tolerance{0.125, 0.125}).at("pass"), false);
  ErrorSums nan_out = e;
  nan_out.nonfinite = 1;  // errors otherwise tiny: a NaN never passes
  EXPECT_EQ(verification_verdict(nan_out, tol).at("pass"), false);
  ErrorSums inf_sum = e;
  inf_sum.sq_err = INFINITY;
  EXPECT_EQ(verification_verdict(inf_sum, tol).at("pass"), false);
  inf_sum.sq_ref = INFINITY;  // inf / inf: rel_l2 NaN, which no comparison passes either
  EXPECT_EQ(verification_verdict(inf_sum, Tolerance{1e30, 1e30}).at("pass"), false);
  // A zero reference: the errors are absolute.
  ErrorSums zero_ref;
  zero_ref.sq_err = 1e-12, zero_ref.max_abs_err = 1e-6;
  const json z = verification_verdict(zero_ref, tol);
  EXPECT_DOUBLE_EQ(z.at("rel_l2").get<double>(), 1e-6);
  EXPECT_DOUBLE_EQ(z.at("max_rel").get<double>(), 1e-6);
}

// parts_common.cpp:27, count_parts without its block-length check: a zero length divides by zero.
TEST(MutantKills, CountPartsRefusesBlockLengthsBelowOne) {
  EXPECT_THROW(parts::count_parts(100, 100, 8, 0, 0, 199), std::invalid_argument);
  EXPECT_THROW(parts::count_parts(100, 100, 0, 8, 0, 199), std::invalid_argument);
  EXPECT_THROW(parts::count_parts(100, 100, -8, 8, 0, 199), std::invalid_argument);
  EXPECT_THROW(parts::count_parts(100, 100, 8, 12, 0, 199), std::invalid_argument);  // neither divides
  EXPECT_NO_THROW(parts::count_parts(100, 100, 8, 4, 0, 199));
}

// spatial.cpp:101, conv1d.direct's byte model with the halo miscounted. By hand: full, n = 1000, m = 33:
// 1032 outputs; tiles of 128 x 4 = 512 outputs: 3 blocks, each reading 512 + 32 inputs; plus the filter and
// the outputs: 4 * (3 * 544 + 33 + 1032) = 10788 bytes; flops 2 * 1032 * 33.
TEST(MutantKills, Conv1dDirectCountsEachBlocksHaloOnce) {
  const Variant& v = Registry::instance().get("conv1d.direct");
  const Problem p{"conv1d", {{"n", 1000}, {"m", 33}, {"mode", 1}}};
  const Cost c = v.cost(p, Config{{"threads", 128}, {"outputs_per_thread", 4}, {"filter", "constant"}});
  EXPECT_DOUBLE_EQ(c.bytes_model, 10788.0);
  EXPECT_DOUBLE_EQ(c.flops_variant, 2.0 * 1032 * 33);
}

// layer_variant.cpp:99, the refusal of another family's problem without its reason.
TEST(MutantKills, ALayerVariantRefusesAnotherFamilysProblemSayingSo) {
  const Variant& v = Registry::instance().get("layer_fwd.implicit_gemm");
  const Problem other = find_family("layer_bwd_data").example();
  EXPECT_EQ(v.can_implement(other, v.space(other, DeviceInfo::offline_sm90()).enumerate().front(),
                            DeviceInfo::offline_sm90()).reason,
            "not a layer_fwd problem");
}

// ---- Survivors of the 2026-11-28 sample (seed 10) ---------------------------------------------------------

// measure.cpp:58, the median of an odd count read at ms[n % 2] instead of ms[n / 2]: five samples, the middle
// one after sorting.
TEST(MutantKills, TheMedianOfAnOddCountIsTheMiddleSample) {
  EXPECT_DOUBLE_EQ(Timing::from_samples({9, 1, 5, 3, 7}).median_ms, 5.0);
  EXPECT_DOUBLE_EQ(Timing::from_samples({9, 1, 5, 3, 7, 11, 13}).median_ms, 7.0);
  EXPECT_DOUBLE_EQ(Timing::from_samples({4, 1, 3, 2}).median_ms, 2.5);
}

// runner.cpp:117, a record's skeleton without its config (select, export and resume read it).
TEST(MutantKills, ARecordsSkeletonHoldsItsConfigAndNames) {
  const Variant& v = Registry::instance().get("conv1d.direct");
  const Problem p{"conv1d", {{"n", 1000}, {"m", 33}, {"mode", 1}}};
  const Config c{{"threads", 128}, {"outputs_per_thread", 4}, {"filter", "constant"}};
  const json r = Runner::skeleton(v, p, c, Ceilings{});
  EXPECT_EQ(r.at("config"), c);
  EXPECT_EQ(r.at("variant"), "conv1d.direct");
  EXPECT_EQ(r.at("candidate"), "conv1d.direct[filter=constant,outputs_per_thread=4,threads=128]");
  EXPECT_EQ(r.at("problem_key"), p.key());
}

SweepSpec one_problem_spec() {
  return SweepSpec::parse({{"name", "summary-test"},
                           {"problems", {{{"family", "conv1d"}, {"n", 1000}, {"m", 33}, {"mode", 1}}}},
                           {"variants", {"conv1d.direct"}}});
}

// run_folder.cpp:60 and :77: a shard job's summary names its shard (merge checks it), and every summary
// names the tool, its version and schema.
TEST(MutantKills, ANewRunsSummaryNamesTheToolAndItsShard) {
  const fs::path root = test::fresh_temp_dir("summary-fields");
  SweepOptions o;
  o.ceilings = false;
  o.quiet = true;
  o.shard = Shard{1, 3};
  std::ostringstream log;
  open_run_folder(one_problem_spec(), root / "run", DeviceInfo::offline_sm90(), o, {"convtune", "sweep"}, log);
  const json s = read_json(root / "run" / "summary.json");
  EXPECT_EQ(s.at("shard"), Shard({1, 3}).to_json());
  EXPECT_EQ(s.at("tool"), "convtune");
  EXPECT_TRUE(s.at("version").is_string() && !s["version"].get<std::string>().empty());
  EXPECT_EQ(s.at("schema"), kSchemaVersion);
  EXPECT_EQ(s.at("argv"), json({"convtune", "sweep"}));
  o.shard = Shard{};
  open_run_folder(one_problem_spec(), root / "unsharded", DeviceInfo::offline_sm90(), o, {}, log);
  EXPECT_FALSE(read_json(root / "unsharded" / "summary.json").contains("shard"));
  fs::remove_all(root);
}

// run_folder.cpp:88, the error of a summary update on a folder that is not there without its words.
TEST(MutantKills, UpdatingTheSummaryOfAMissingFolderSaysItCannotOpenIt) {
  const fs::path root = test::fresh_temp_dir("summary-missing"), missing = root / "no-such-run";
  try {
    update_summary(missing, [](json&) {});
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot open " + missing.string());
  }
  fs::remove_all(root);
}

// CONVTUNE_MODEL_OPTIONS set for one scope.
struct ModelOptionsEnv : test::ScopedEnv {
  explicit ModelOptionsEnv(const char* value) : ScopedEnv("CONVTUNE_MODEL_OPTIONS", value) {}
};

// perf_model.cpp:51, CONVTUNE_MODEL_OPTIONS read only up to its first option.
TEST(MutantKills, ModelOptionsReadEveryItemOfTheList) {
  const ModelOptions o = [] {
    const ModelOptionsEnv env("rounds=7,depth=3,eta=0.125,relative=0,cover=3,gamma=0.5,others=0,colsample=0.5,"
                              "subsample=0.75,min_child=4,lambda=2,parallel=3,seed=5");
    return ModelOptions::from_env();
  }();
  EXPECT_FALSE(o.others);
  EXPECT_DOUBLE_EQ(o.colsample, 0.5);
  EXPECT_DOUBLE_EQ(o.subsample, 0.75);
  EXPECT_DOUBLE_EQ(o.min_child, 4);
  EXPECT_DOUBLE_EQ(o.lambda, 2);
  EXPECT_EQ(o.parallel, 3);
  EXPECT_EQ(o.seed, 5);
  EXPECT_EQ(o.cover, 3u);
  EXPECT_DOUBLE_EQ(o.gamma, 0.5);
  EXPECT_EQ(o.rounds, 7);
  EXPECT_EQ(o.depth, 3);
  EXPECT_DOUBLE_EQ(o.eta, 0.125);
  EXPECT_FALSE(o.relative);
  // An unknown item is an error naming it and the keys, never skipped (perf_model.cpp:51: a break in the catch).
  {
    const ModelOptionsEnv env("rounds=7,bogus=1");
    const std::string msg = test::input_error([] { ModelOptions::from_env(); });
    EXPECT_EQ(msg.rfind("CONVTUNE_MODEL_OPTIONS: 'bogus=1'; allowed: key=value pairs of rounds, depth, eta,", 0), 0u)
        << msg;
  }
  // A value out of its key's range, not wholly a number, or not finite: an error naming the key's range
  // (XGBoost would stop with its own trace, or fit NaNs into the table).
  for (const auto& [bad, allowed] : std::vector<std::pair<std::string, std::string>>{
           {"depth=x", "depth an integer 1 to 20"}, {"depth=-5", "depth an integer 1 to 20"},
           {"rounds=-1", "rounds an integer 1 to 10000"}, {"rounds=5x", "rounds an integer 1 to 10000"},
           {"rounds=2.5", "rounds an integer 1 to 10000"}, {"eta=-1", "eta a number in (0, 1]"},
           {"eta=nan", "eta a number in (0, 1]"}, {"clip=nan", "clip a number in (0, 100]"},
           {"max_candidates=0", "max_candidates an integer 1 to 256"}, {"tune_candidates=300", "tune_candidates an integer 0 to 256"}, {"near_weight=-1", "near_weight a number in (0, 1000]"},
           {"mix=nan", "mix a number in [0, 100]"}, {"within=1", "within a number in (1, 10]"},
           {"cover=-1", "cover an integer 0 to 1000"}, {"gamma=-1", "gamma a number in [0, 1e6]"},
           {"gamma=inf", "gamma a number in [0, 1e6]"}, {"colsample=0", "colsample a number in (0, 1]"},
           {"subsample=1.5", "subsample a number in (0, 1]"}, {"min_child=-1", "min_child a number in [0, 1e6]"},
           {"lambda=nan", "lambda a number in [0, 1e6]"}, {"relative=2", "relative 0 or 1"}, {"others=", "others 0 or 1"},
           {"parallel=0", "parallel an integer 1 to 64"}, {"seed=-1", "seed an integer 0 to 1000000"}}) {
    const ModelOptionsEnv env(bad.c_str());
    const std::string msg = test::input_error([] { ModelOptions::from_env(); });
    EXPECT_EQ(msg, "CONVTUNE_MODEL_OPTIONS: '" + bad + "'; allowed: " + allowed) << bad;
  }
}

// strategies/common.cpp:74, numeric values not sorted: a neighbour is the next value up or down, whatever
// order the candidates came in (here block_x 64, 16, 32).
TEST(MutantKills, NeighboursFollowNumericOrderNotTheCandidatesOrder) {
  const Variant* v = Registry::instance().find("conv2d.register_tiled");
  std::vector<SearchCandidate> cands;
  for (int bx : {64, 16, 32}) cands.push_back({v, Config{{"block_x", bx}}});
  const strategies::NeighbourGraph g(cands);
  auto neighbours = [&](size_t i) { return std::set<size_t>(g.neighbours[i].begin(), g.neighbours[i].end()); };
  EXPECT_EQ(neighbours(0), (std::set<size_t>{2}));     // 64: 32
  EXPECT_EQ(neighbours(1), (std::set<size_t>{2}));     // 16: 32
  EXPECT_EQ(neighbours(2), (std::set<size_t>{0, 1}));  // 32: 16 and 64
}

// Every registered variant's space fits the dispatch rules' tunables (perf_model.cpp refuses a record with
// more rather than dropping the rest; a fitted model over such a candidate would not load).
TEST(MutantKills, EveryVariantsSpaceFitsTheDispatchRulesTunables) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  for (const Variant* v : Registry::instance().all()) {
    const Problem p = find_family(v->family()).example();
    EXPECT_LE(v->space(p, dev).params().size(), size_t(convtune_dispatch::kMaxParams)) << v->name();
  }
}

// conv1d.window's staging joined its space after its first records: a config without it means registers.
TEST(MutantKills, AWindowConfigWithoutStagingMeansRegisters) {
  const Variant& v = Registry::instance().get("conv1d.window");
  const Problem p{"conv1d", {{"n", 1 << 20}, {"m", 17}, {"mode", 0}}};
  const Config c = v.space(p, DeviceInfo::offline_sm90())
                       .complete_config({{"threads", 128}, {"outputs_per_thread", 15}}, "config");
  EXPECT_EQ(c.at("staging"), "registers");
}

// direct.cpp:103 (seed 11, local), tiled_in's complexity dropped to the default 5: complexity breaks ties
// within noise (the simpler candidate wins), so the seed's 2D ladder must rise one idea per step: global
// memory, then the constant filter, then coarsening, then shared tiles (input-sized or halo through L2), then
// register tiles.
TEST(MutantKills, TheSeedsConv2dLadderRisesInComplexity) {
  auto complexity = [](const char* name) { return Registry::instance().get(name).complexity(); };
  EXPECT_EQ(complexity("conv2d.naive"), 0);
  EXPECT_EQ(complexity("conv2d.constant"), 1);
  EXPECT_EQ(complexity("conv2d.coarsened"), 2);
  EXPECT_EQ(complexity("conv2d.tiled_in"), 3);
  EXPECT_EQ(complexity("conv2d.tiled_halo_l2"), 3);
  EXPECT_EQ(complexity("conv2d.register_tiled"), 4);
}

}  // namespace

// --- records.cpp: RecordWriter::append ---------------------------------------------------------------

// records.cpp:85, `if (n < 0 && errno == EINTR) continue;` -> `if (n < 0 && (1==1)) continue;`: every failed
// write() was retried forever. /dev/full fails every write with ENOSPC: append must throw, naming the file and
// the reason, and promptly.
TEST(MutantKills, AFailedWriteThrowsInsteadOfRetryingForever) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full here";
  const int rc = mk_exit_status_within(
      [] {
        try {
          RecordWriter w("/dev/full");
          w.append({{"problem_key", "p"}, {"candidate", "c"}, {"status", "ok"}});
        } catch (const std::runtime_error& e) {
          return std::string(e.what()) == "cannot write to /dev/full: No space left on device" ? 0 : 2;
        }
        return 1;
      },
      20);
  EXPECT_NE(rc, -1) << "append kept retrying a write that fails with ENOSPC";
  EXPECT_NE(rc, 1) << "append to /dev/full threw nothing";
  EXPECT_NE(rc, 2) << "append to /dev/full threw another message";
  EXPECT_EQ(rc, 0);
}

// --- records.cpp: check_record_fields -----------------------------------------------------------------

// records.cpp:102, the check that problem_key, candidate and status are strings commented out: a record whose
// key fields are numbers, null or arrays was accepted. Each is refused, naming file:line, field and value.
TEST(MutantKills, ARecordsKeyFieldsMustBeStrings) {
  EXPECT_EQ(mk_read_error("pk", {kMkGood, R"({"problem_key": 3, "candidate": "c", "status": "ok", "time": {"median_ms": 1}})"}),
            "FILE:2: problem_key is 3; allowed: a string");
  EXPECT_EQ(mk_read_error("cand", {R"({"problem_key": "p", "candidate": null, "status": "ok", "time": {"median_ms": 1}})"}),
            "FILE:1: candidate is null; allowed: a string");
  EXPECT_EQ(mk_read_error("status", {kMkGood, kMkGood,
                                     R"({"problem_key": "p", "candidate": "c", "status": ["ok"], "time": {"median_ms": 1}})"}),
            "FILE:3: status is [\"ok\"]; allowed: a string");
}

// records.cpp:111 (the same sample), `status == ok && (...)` -> `||`: the median is required only of an ok
// record. A failed record without a median (or with a negative one) is read; an ok one is refused.
TEST(MutantKills, OnlyAnOkRecordNeedsANonNegativeMedian) {
  size_t n = 0;
  EXPECT_EQ(mk_read_error("failed", {kMkGood, R"({"problem_key": "p", "candidate": "c", "status": "wrong_result", "time": {}})",
                                     R"({"problem_key": "p", "candidate": "d", "status": "timeout", "time": {"median_ms": -1}})"},
                          &n),
            "");
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(mk_read_error("okneg", {R"({"problem_key": "p", "candidate": "c", "status": "ok", "time": {"median_ms": -0.5}})"}),
            "FILE:1: time.median_ms is -0.5; allowed: a non-negative number of milliseconds");
  EXPECT_EQ(mk_read_error("okmissing", {kMkGood, R"({"problem_key": "p", "candidate": "c", "status": "ok", "time": {}})"}),
            "FILE:2: time.median_ms is null; allowed: a non-negative number of milliseconds");
  // 0 ms is allowed (a `<= 0` would refuse it).
  n = 0;
  EXPECT_EQ(mk_read_error("okzero", {R"({"problem_key": "p", "candidate": "c", "status": "ok", "time": {"median_ms": 0}})"}, &n),
            "");
  EXPECT_EQ(n, 1u);
}

// --- merge.cpp: merge_profiles ------------------------------------------------------------------------

// merge.cpp:91, `records_file_exists(s.folder / "profiles.jsonl")` -> `records_file_exists(s.folder / "")` (the
// folder itself, which always exists): a merge of shards without profiles wrote an empty profiles.jsonl. No
// shard profiled: no profiles.jsonl and no profiles/ in the merged run. Then the other side of the rule: the
// profile lines of every shard that has them, in shard order (readers take a candidate's last line), and each
// shard's Nsight Compute reports under the same relative paths.
TEST(MutantKills, MergeCarriesProfilesOnlyWhereAShardHasThem) {
  const fs::path root = test::fresh_temp_dir("mk-merge-prof");
  const auto shards = test::two_shard_folders(root);
  std::ostringstream log;
  const json none = merge_runs(shards, root / "none", {"convtune", "merge"}, log);
  EXPECT_EQ(none["merge"]["gaps"], 0) << log.str();
  EXPECT_EQ(read_records(root / "none/records.jsonl").records.size(), 72u);
  EXPECT_FALSE(fs::exists(root / "none/profiles.jsonl"));
  EXPECT_FALSE(fs::exists(root / "none/profiles"));

  {
    RecordWriter p1(shards[1] / "profiles.jsonl");
    p1.append(mk_profile("conv2d.naive[a]", 1.0));
    p1.append(mk_profile("conv2d.naive[b]", 2.0));
  }
  fs::create_directories(shards[1] / "profiles/p1");
  std::ofstream(shards[1] / "profiles/p1/a.ncu-rep") << "report a";
  merge_runs(shards, root / "one", {"convtune", "merge"}, log);  // only shard 1 profiled
  auto got = read_records(root / "one/profiles.jsonl").records;
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], mk_profile("conv2d.naive[a]", 1.0));
  EXPECT_EQ(got[1], mk_profile("conv2d.naive[b]", 2.0));
  EXPECT_EQ(test::read_text(root / "one/profiles/p1/a.ncu-rep"), "report a");

  {
    RecordWriter p0(shards[0] / "profiles.jsonl");
    p0.append(mk_profile("conv2d.naive[a]", 3.0));
  }
  merge_runs(shards, root / "both", {"convtune", "merge"}, log);
  got = read_records(root / "both/profiles.jsonl").records;
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0]["dram_bytes"], 3.0);  // shard 0 first
  EXPECT_EQ(got[1]["dram_bytes"], 1.0);
  EXPECT_EQ(got[2]["dram_bytes"], 2.0);
  EXPECT_EQ(test::read_text(root / "both/profiles/p1/a.ncu-rep"), "report a");
  fs::remove_all(root);
}

// --- replay.cpp -----------------------------------------------------------------------------------------

// replay.cpp:21, `{"family", family},` commented out of ReplayResult::to_json: `convtune replay --json` lost the
// family of each row (one row per strategy and family). Every field pinned; a non-finite mean is null.
TEST(MutantKills, ReplayResultJsonHoldsEveryField) {
  ReplayResult r;
  r.strategy = "halving";
  r.family = "conv1d";
  r.mean_evals_to_5pct = 12.5;
  r.median_evals_to_5pct = INFINITY;  // no trial came within 5%
  r.mean_fraction_of_space = 0.25;
  r.success_rate = 0.75;
  r.mean_best_ratio = NAN;
  r.problems = 3;
  r.trials = 60;
  const json want = {{"strategy", "halving"},         {"family", "conv1d"},      {"mean_evals_to_5pct", 12.5},
                     {"median_evals_to_5pct", nullptr}, {"mean_fraction_of_space", 0.25}, {"success_rate", 0.75},
                     {"mean_best_ratio", nullptr},      {"problems", 3},           {"trials", 60}};
  EXPECT_EQ(r.to_json(), want);
}

// Seed 12's survivors (the H100 machine, 2026-11-28), each planted by hand and seen failing:
// fleet.cpp:12 (`&&` -> `||`): anything that is not an object is no fleet table, and asking does not throw.
TEST(MutantKills, OnlyAnObjectCanBeAFleetTable) {
  for (const json& j : {json::array(), json(), json("fleet"), json(3)}) {
    EXPECT_NO_THROW(EXPECT_FALSE(is_fleet(j)) << j.dump()) << j.dump();
  }
  EXPECT_TRUE(is_fleet(json{{"fleet", true}}));
  EXPECT_FALSE(is_fleet(json{{"fleet", false}}));
}

// spec.cpp:42 (`||` -> `&&`): pow2 takes exactly [first, last].
TEST(MutantKills, Pow2TakesExactlyTwoBounds) {
  for (const json& bounds : {json{4}, json{4, 8, 16}, json::array()}) {
    const json entry = {{"family", "conv1d"}, {"n", {{"pow2", bounds}}}, {"m", 3}, {"mode", 0}};
    try {
      expand_problems(entry, "spec.problems[0]");
      ADD_FAILURE() << bounds.dump() << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("spec.problems[0].n.pow2: must be [first, last]"), std::string::npos)
          << e.what();
    }
  }
}

// records.cpp:106 (the allowed kind dropped from the message): a problem or config that is no object says so.
TEST(MutantKills, ARecordsProblemAndConfigMustBeObjects) {
  EXPECT_EQ(mk_read_error("problem", {R"({"problem_key": "p", "candidate": "c", "status": "ok", "problem": [1], "time": {"median_ms": 1}})"}),
            "FILE:1: problem is [1]; allowed: an object");
  EXPECT_EQ(mk_read_error("config", {kMkGood, R"({"problem_key": "p", "candidate": "c", "status": "ok", "config": "x", "time": {"median_ms": 1}})"}),
            "FILE:2: config is \"x\"; allowed: an object");
}

// ---- Survivors of the 2026-11-28 sample (seed 14) ---------------------------------------------------------

// merge.cpp:53, the refusal of shards of different runs without its last clause: the message says what
// merges, beside the field that differs.
TEST(MutantKills, MergeOfShardsOfTwoDriversSaysWhatMerges) {
  const fs::path root = test::fresh_temp_dir("mk-merge-driver");
  const auto shards = test::two_shard_folders(root);
  json summary = read_json(shards[1] / "summary.json");
  summary["device"]["driver_version"] = 1;
  write_json_atomically(shards[1] / "summary.json", summary);
  try {
    std::ostringstream log;
    merge_runs(shards, root / "merged", {"convtune", "merge"}, log);
    FAIL() << "shards of two drivers must not merge";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("device.driver_version"), std::string::npos) << what;
    EXPECT_NE(what.find("only shards of one spec, GPU model, driver and shard count merge"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(root / "merged" / "records.jsonl"));
  fs::remove_all(root);
}

// random.cpp:11, random_subset without `k = min(k, n)`: a budget past the space's size takes each point once.
TEST(MutantKills, RandomSubsetOfMoreThanThereAreTakesEachOnce) {
  strategies::Rng rng(3);
  std::vector<size_t> got = strategies::random_subset(3, 10, rng);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<size_t>{0, 1, 2}));
}

// conv1d_parts/family.cpp:36, start's upper bound halved: every output of the longest sequences (2^28 each,
// 2^29 - 1 outputs) can begin a slice.
TEST(MutantKills, Conv1dPartsSliceMayStartAtTheLastOutputOfTheLongestSequences) {
  const int64_t n = int64_t(1) << 28, last = 2 * n - 2;
  const json spec = {{"name", "t"},
                     {"problems", {{{"family", "conv1d_parts"}, {"n", n}, {"m", n}, {"start", last}, {"end", last + 1}}}}};
  EXPECT_NO_THROW(SweepSpec::parse(spec));
}

// conv2d/direct.cpp:169 and conv1d/window.cpp:55 (a space value replaced by -1, which every shape then
// refuses, so no other test sees it): each integer tunable of every variant is a count or a size, at least
// 1, and no tunable offers a value twice, on every shape of its family (the test shapes and the example, an
// offline sm_90).
TEST(MutantKills, EveryTunableHoldsEachValueOnceAndIntegersAreCountsOfAtLeastOne) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  int seen = 0;
  for (const Variant* v : Registry::instance().all()) {
    const Family& fam = find_family(v->family());
    std::vector<Problem> shapes = fam.test_problems();
    shapes.push_back(fam.example());
    for (const Problem& p : shapes) {
      const ParamSpace space = v->space(p, dev);  // kept: params() refers into it
      for (const Param& param : space.params()) {
        // seed 15's implicit_gemm.cpp:94 (splits 64 -> 1, a value twice): each value once
        EXPECT_EQ(std::set<json>(param.values.begin(), param.values.end()).size(), param.values.size())
            << v->name() << ": " << param.name << " repeats a value on " << p.key();
        for (const json& value : param.values)
          if (value.is_number_integer()) {
            ++seen;
            EXPECT_GE(value.get<int64_t>(), 1) << v->name() << ": " << param.name << " on " << p.key();
          }
      }
    }
  }
  EXPECT_GT(seen, 1000);
}

// ---- Survivors of the 2026-11-28 sample (seed 15) ---------------------------------------------------------

// A variant of a given cost, for the skeleton's derived figures.
class GivenCostVariant : public Variant {
 public:
  explicit GivenCostVariant(Cost cost) : cost_(cost) {}
  std::string name() const override { return "conv2d.given_cost_test"; }
  std::string family() const override { return "conv2d"; }
  std::string summary() const override { return "test only"; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override { return {}; }
  Status can_implement(const Problem&, const Config&, const DeviceInfo&) const override { return Status::yes(); }
  Cost cost(const Problem&, const Config&) const override { return cost_; }
  std::unique_ptr<Plan> prepare(const Problem&, const Config&, const DeviceInfo&, JitCache&) const override {
    return nullptr;
  }

 private:
  Cost cost_;
};

// runner.cpp:124, a record's intensity where its cost moves no bytes (0, not 1): flops / bytes otherwise.
TEST(MutantKills, ArithmeticIntensityIsFlopsPerByteAndZeroWithoutBytes) {
  const Problem p{"conv2d", {{"h", 64}, {"w", 64}, {"r", 3}}};
  const json moved = Runner::skeleton(GivenCostVariant({6e9, 6e9, 2e9, 3e9}), p, Config::object(), Ceilings{});
  EXPECT_DOUBLE_EQ(moved.at("intensity_min").get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(moved.at("intensity_model").get<double>(), 2.0);
  const json none = Runner::skeleton(GivenCostVariant({6e9, 6e9, 0, 0}), p, Config::object(), Ceilings{});
  EXPECT_EQ(none.at("intensity_min").get<double>(), 0.0);
  EXPECT_EQ(none.at("intensity_model").get<double>(), 0.0);
}

// records.cpp:60, a failing flock no longer throws: the writer would append without the lock that keeps
// the GPUs' lines apart. Made to fail by closing the writer's descriptor behind its back (found through
// /proc/self/fd): the append must name the lock, not write (which then fails on its own, saying so).
TEST(MutantKills, AnAppendWhoseLockFailsSaysSoAndWritesNothing) {
  const fs::path dir = test::fresh_temp_dir("mk-lock");
  const fs::path file = dir / "records.jsonl";
  RecordWriter w(file);
  int fd = -1;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(entry.path(), ec) == fs::canonical(file)) fd = std::stoi(entry.path().filename().string());
  }
  ASSERT_GE(fd, 0) << "the writer's descriptor";
  ASSERT_EQ(close(fd), 0);
  try {
    w.append(json::parse(kMkGood));
    FAIL() << "an append without its lock must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot lock a records file"), std::string::npos) << e.what();
  }
  // The number is the writer's again (it closes it): /dev/null holds it, so no later file can take it.
  const int placeholder = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(placeholder, 0);
  if (placeholder != fd) {
    ASSERT_EQ(dup2(placeholder, fd), fd);
    close(placeholder);
  }
  EXPECT_EQ(fs::file_size(file), 0u);
  fs::remove_all(dir);
}

// ---- Survivors of the 2026-11-28 sample (seed 17) ---------------------------------------------------------

// The implicit GEMM's launches and workspace, which the runner binds and launches (protected: a probe shows them).
class GemmProbe : public ImplicitGemmVariant {
 public:
  explicit GemmProbe(GemmPass pass) : ImplicitGemmVariant(pass) {}
  std::string name() const override { return "layer_fwd.gemm_probe_test"; }
  std::string family() const override { return "layer_fwd"; }
  using ImplicitGemmVariant::launches;
  using ImplicitGemmVariant::workspace_bytes;
};

std::string mk_launch(const LayerLaunch& l) {
  return l.kernel + " grid " + std::to_string(l.grid.x) + "x" + std::to_string(l.grid.y) + "x" + std::to_string(l.grid.z) +
         " block " + std::to_string(l.block.x) + " smem " + std::to_string(l.dynamic_smem);
}

// layer_common/implicit_gemm.cpp:225 (the split reduction's shared memory 0 -> -1) and :231 (the workspace's
// splits * m * n floats made splits * m - n * 4 bytes). The shape n 2, c 3, 8 x 9, k 5, 3 x 2 filter, pad 1/0,
// stride 2/1 has P 4, Q 8: forward's GEMM is m = n*P*Q = 64 by k = 5, backward-data's n*h*w = 144 by c = 3.
// A tile's CTAs cover m x n, one grid.z per split; its ring holds stages * BK * ((BM + 8) + (BN + 8)) floats.
// With splits > 1 a second kernel of 256 threads adds the partials, one thread an output, from a workspace of
// splits * m * n floats; unsplit there is neither.
TEST(MutantKills, ImplicitGemmLaunchesTheSplitReductionOverItsWorkspace) {
  Problem p{"layer_fwd", {{"n", 2}, {"c", 3}, {"h", 8}, {"w", 9}, {"k", 5}, {"r", 3}, {"s", 2}, {"pad_h", 1}, {"pad_w", 0},
                          {"u", 2}, {"v", 1}}};
  validate(p, "p");
  const LayerShape l(p);
  const GemmProbe fwd(GemmPass::forward), bwd_data(GemmPass::bwd_data);
  auto launches = [&](const GemmProbe& v, const Config& c) {
    std::vector<std::string> out;
    for (const LayerLaunch& launch : v.launches(l, c)) out.push_back(mk_launch(launch));
    return out;
  };
  const Config simt = {{"math", "fp32"}, {"tile", "64x64x8"}, {"stages", 2}, {"splits", 2}};
  EXPECT_EQ(launches(fwd, simt), (std::vector<std::string>{"implicit_gemm_kernel grid 1x1x2 block 256 smem 9216",
                                                           "split_reduce_kernel grid 2x1x1 block 256 smem 0"}));
  EXPECT_EQ(fwd.workspace_bytes(l, simt), 2u * 64 * 5 * 4);
  const Config tensor = {{"math", "3xtf32"}, {"tile", "128x64x16"}, {"stages", 3}, {"splits", 4}};
  EXPECT_EQ(launches(bwd_data, tensor), (std::vector<std::string>{"implicit_gemm_kernel grid 2x1x4 block 128 smem 39936",
                                                                  "split_reduce_kernel grid 2x1x1 block 256 smem 0"}));
  EXPECT_EQ(bwd_data.workspace_bytes(l, tensor), 4u * 144 * 3 * 4);
  Config unsplit = tensor;
  unsplit["splits"] = 1;
  EXPECT_EQ(launches(bwd_data, unsplit), std::vector<std::string>{"implicit_gemm_kernel grid 2x1x1 block 128 smem 39936"});
  EXPECT_EQ(bwd_data.workspace_bytes(l, unsplit), 0u);
}

// Seed 18's survivors (docs/MUTATION.md).
// strategies/warm.cpp:15: the default budget fraction 0.25 made -1 (the budget then the whole space), or
// (budget + 1) / 2 made budget / 2. Worked by hand: n = 156: budget ceil(39) = 39, half 20, top min(20,
// max(8, 16)) = 16; n = 36: budget 9, half 5, top min(5, 8) = 5; n = 40: budget 10, half 5, top 5; n = 4:
// budget 1, half 1, top 1; max_evaluations 30 of 1000: half 15, top min(15, 100) = 15.
TEST(MutantKills, WarmMeasuresTheTopOfThePriorWithinHalfItsBudget) {
  using strategies::warm_prior_count;
  StrategyOptions o;
  EXPECT_EQ(warm_prior_count(156, o), 16u);
  EXPECT_EQ(warm_prior_count(36, o), 5u);
  EXPECT_EQ(warm_prior_count(40, o), 5u);
  EXPECT_EQ(warm_prior_count(4, o), 1u);
  o.max_evaluations = 30;
  EXPECT_EQ(warm_prior_count(1000, o), 15u);
}

// dispatch.cpp:279: simplest_candidate's `!v->library()` made always true: the family's simplest kernel,
// the runtime's last resort, became a library call where one has the lowest complexity or ties first by
// name (conv1d.cudnn and layer_pool.cudnn at 1, conv1d_parts.fft at 1 below spatial's 3).
TEST(MutantKills, TheSimplestCandidateIsNeverALibraryCall) {
  EXPECT_EQ(simplest_candidate("conv2d")["variant"], "conv2d.naive");
  EXPECT_EQ(simplest_candidate("conv1d")["variant"], "conv1d.direct");
  EXPECT_EQ(simplest_candidate("layer_pool")["variant"], "layer_pool.direct");
  EXPECT_EQ(simplest_candidate("conv1d_parts")["variant"], "conv1d_parts.spatial");
  for (const std::string family : {"conv2d", "conv2d_separable", "conv1d", "conv1d_parts", "layer_fwd", "layer_bwd_data",
                                   "layer_bwd_filter", "layer_pool"}) {
    const json c = simplest_candidate(family);
    ASSERT_TRUE(c.is_object()) << family;
    EXPECT_FALSE(Registry::instance().get(c["variant"].get<std::string>()).library()) << family;
    EXPECT_EQ(c["rule"], "simplest");
  }
}

// dispatch.cpp:631: dump_dispatch's dump(2) made dump(-1): dispatch.json on one line. It is read by people
// (the docs quote it) and diffed in git: indented by two spaces, and the same table when parsed.
TEST(MutantKills, ADispatchTableIsWrittenIndented) {
  const json table = {{"schema", 1}, {"entries", json::array({{{"candidate", "a"}}})}};
  const std::string text = dump_dispatch(table);
  EXPECT_NE(text.find("{\n  \"entries\": [\n    {\n      \"candidate\": \"a\""), std::string::npos) << text;
  EXPECT_EQ(json::parse(text), table);
}

// merge.cpp:129: a shard's argv in the merged summary's merged_from made null: the command each shard ran
// with is the merged run's provenance.
TEST(MutantKills, AMergedRunKeepsEachShardsCommand) {
  const fs::path root = test::fresh_temp_dir("merge-argv");
  const std::vector<fs::path> shards = test::two_shard_folders(root);
  for (size_t i = 0; i < shards.size(); ++i) {
    json s = read_json(shards[i] / "summary.json");
    s["argv"] = {"convtune", "sweep", "--shard", std::to_string(i) + "/2"};
    write_json_atomically(shards[i] / "summary.json", s);
  }
  std::ostringstream log;
  const json merged = merge_runs(shards, root / "merged", {"convtune", "merge"}, log);
  ASSERT_EQ(merged.at("merged_from").size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(merged["merged_from"][i].at("argv"), json({"convtune", "sweep", "--shard", std::to_string(i) + "/2"}));
  EXPECT_EQ(merged.at("argv"), json({"convtune", "merge"}));
  fs::remove_all(root);
}


// shard.cpp:58 (`!shard.active() ||` made false) survived as equivalent only for valid shards: a summary.json
// whose shard has count 0 would have reached `hash % 0`. Shard::from_json now refuses it, naming the file.
TEST(MutantKills, AShardOfCountZeroIsRefusedNamingTheFile) {
  const fs::path root = test::fresh_temp_dir("merge-count-zero");
  const std::vector<fs::path> shards = test::two_shard_folders(root);
  json s = read_json(shards[0] / "summary.json");
  s["shard"] = {{"index", 0}, {"count", 0}};
  write_json_atomically(shards[0] / "summary.json", s);
  std::ostringstream log;
  const std::string message = test::input_error([&] { merge_runs(shards, root / "merged", {"convtune", "merge"}, log); });
  EXPECT_NE(message.find((shards[0] / "summary.json").string() + ": shard: {\"count\":0,\"index\":0}; allowed: index i "
                         "and count n with 0 <= i < n <= 100000"), std::string::npos) << message;
  EXPECT_EQ(test::input_error([] { Shard::from_json({{"index", "1"}}, "x"); }), "x.index: \"1\" is not an integer");
  EXPECT_EQ(Shard::from_json(nullptr, "shard").text(), "0/1");
  // Past INT_MAX a count must not wrap into range (4294967298 is 2 mod 2^32).
  EXPECT_THROW(Shard::from_json({{"index", 0}, {"count", 4294967298LL}}, "shard"), InputError);
  fs::remove_all(root);
}

}  // namespace convtune
