// The edge rules around the main paths, each test aimed at a bug that the main-path tests let through
// (issue 41): selection's caps and resumed records, the record key's brief marker, the safe default's
// disqualifications, lookup's tie rule, merge's refusals and gaps per strategy, and atomic writes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "harness/dispatch.h"
#include "harness/error.h"
#include "harness/json_file.h"
#include "harness/merge.h"
#include "harness/records.h"
#include "harness/select.h"
#include "harness/shard.h"
#include "test_support.h"

using namespace convtune;
using convtune::test::contains;
namespace fs = std::filesystem;

namespace {

using test::conv2d;

// A record as the sweep writes it; only an ok one carries a time.
json rec(const Problem& p, const std::string& variant, int block_x, const std::string& st, double ms,
         int complexity = 2, double rel_stderr = 0.001) {
  const json config = {{"block_x", block_x}};
  json r = {{"schema", 1},           {"problem", p.to_json()},   {"problem_key", p.key()},
            {"family", "conv2d"},    {"variant", variant},       {"library", false},
            {"config", config},      {"candidate", candidate_name(variant, config)},
            {"complexity", complexity}, {"status", st}};
  if (st == status::ok) r["time"] = {{"median_ms", ms}, {"rel_stderr", rel_stderr}};
  return r;
}


using test::read_text;

}  // namespace

// ---- select_best ----------------------------------------------------------------------------------

// Seven candidates 10% apart (well past the 1% noise floor): the choice, then exactly kAlternates (4, as
// docs/DISPATCH.md says) next fastest in time order; the sixth and seventh are not alternates.
TEST(SelectRules, AlternatesAreTheNextFastestCappedAtFour) {
  ASSERT_EQ(kAlternates, 4u);
  const Problem p = conv2d(256, 256, 1);
  std::vector<json> recs;
  for (int k = 6; k >= 0; --k) recs.push_back(rec(p, "conv2d.naive", 16 * (k + 1), status::ok, 1.0 + 0.1 * k));
  const Choice c = select_best(recs).at(0);
  EXPECT_EQ(c.best["config"]["block_x"], 16);
  ASSERT_EQ(c.alternates.size(), 4u);
  for (int a = 0; a < 4; ++a) EXPECT_EQ(c.alternates[a]["config"]["block_x"], 16 * (a + 2)) << a;
  // Fewer candidates than the cap: every other one, none repeated.
  const Choice two = select_best({recs[5], recs[6]}).at(0);
  ASSERT_EQ(two.alternates.size(), 1u);
  EXPECT_EQ(two.alternates[0]["config"]["block_x"], 32);
}

// Equal medians (the event timer's 0.5 us ticks) and equal complexity: the candidate first by name, whatever
// the records' order (seed 15's select.cpp:68 mutant took the last of equals). Candidates reach the sort
// already in name order (index_run keys them by name), so this pins the outcome, not which line gives it.
TEST(SelectRules, EqualMediansFallToTheCandidatesName) {
  const Problem p = conv2d(256, 256, 1);
  const json b16 = rec(p, "conv2d.naive", 16, status::ok, 0.004), b32 = rec(p, "conv2d.naive", 32, status::ok, 0.004),
             b64 = rec(p, "conv2d.naive", 64, status::ok, 0.004);
  for (const std::vector<json>& order : std::vector<std::vector<json>>{{b16, b32, b64}, {b64, b32, b16}, {b32, b64, b16}}) {
    const Choice c = select_best(order).at(0);
    EXPECT_EQ(c.best["config"]["block_x"], 16);
    ASSERT_EQ(c.alternates.size(), 2u);
    EXPECT_EQ(c.alternates[0]["config"]["block_x"], 32);
    EXPECT_EQ(c.alternates[1]["config"]["block_x"], 64);
  }
}

// A resumed run appends: a later ok record of a candidate replaces the earlier one, a later failure does
// not hide an earlier ok, and a later ok replaces an earlier failure.
TEST(SelectRules, ALaterOkRecordOfACandidateReplacesTheEarlierOne) {
  const Problem p = conv2d(512, 512, 1);
  const json a_fast = rec(p, "conv2d.naive", 32, status::ok, 1.0), b = rec(p, "conv2d.constant", 32, status::ok, 1.5),
             a_slow = rec(p, "conv2d.naive", 32, status::ok, 2.0);
  const Choice remeasured = select_best({a_fast, b, a_slow}).at(0);
  EXPECT_EQ(remeasured.best["variant"], "conv2d.constant");
  EXPECT_DOUBLE_EQ(remeasured.runner_up["time"]["median_ms"].get<double>(), 2.0);
  EXPECT_NEAR(remeasured.margin, 2.0 / 1.5 - 1.0, 1e-12);

  const Choice failed_later = select_best({a_fast, b, rec(p, "conv2d.naive", 32, status::timeout, 0)}).at(0);
  EXPECT_EQ(failed_later.best["variant"], "conv2d.naive");

  const Choice ok_later = select_best({rec(p, "conv2d.naive", 32, status::runtime_error, 0), b, a_fast}).at(0);
  EXPECT_EQ(ok_later.best["variant"], "conv2d.naive");
}

// Brief records (a search strategy's cheap first look) are never chosen, however fast.
TEST(SelectRules, BriefRecordsAreNotRead) {
  const Problem p = conv2d(512, 512, 3);
  json brief = rec(p, "conv2d.naive", 64, status::ok, 0.1);
  brief["fidelity"] = "brief";
  const Choice c = select_best({brief, rec(p, "conv2d.constant", 32, status::ok, 1.0)}).at(0);
  EXPECT_EQ(c.best["variant"], "conv2d.constant");
  EXPECT_TRUE(c.alternates.empty());
  EXPECT_TRUE(c.runner_up.is_null());
  EXPECT_TRUE(select_best({brief}).empty());
}

// The noise band: max(1%, 3 * hypot(rel_stderr a, rel_stderr b)), worked by hand.
TEST(SelectRules, NoiseThresholdIsOnePercentOrThreeSigma) {
  const Problem p = conv2d(64, 64, 1);
  const json quiet = rec(p, "conv2d.naive", 16, status::ok, 1, 2, 0.001);
  const json noisy = rec(p, "conv2d.naive", 32, status::ok, 1, 2, 0.03), noisier = rec(p, "conv2d.naive", 64, status::ok, 1, 2, 0.04);
  EXPECT_DOUBLE_EQ(noise_threshold(quiet, quiet), 0.01);  // 3 * 0.0014 < 1%
  EXPECT_NEAR(noise_threshold(noisy, noisier), 3 * 0.05, 1e-12);  // hypot(0.03, 0.04) = 0.05
  // A candidate 2% slower but simpler is a tie under 3 sigma = 15%, not under the 1% floor.
  const json fast = rec(p, "conv2d.register_tiled", 16, status::ok, 1.00, 4, 0.03);
  const json simple = rec(p, "conv2d.naive", 16, status::ok, 1.02, 0, 0.04);
  EXPECT_EQ(select_best({fast, simple}).at(0).best["variant"], "conv2d.naive");
  const json fast_quiet = rec(p, "conv2d.register_tiled", 16, status::ok, 1.00, 4, 0.001);
  const json simple_quiet = rec(p, "conv2d.naive", 16, status::ok, 1.02, 0, 0.001);
  EXPECT_EQ(select_best({fast_quiet, simple_quiet}).at(0).best["variant"], "conv2d.register_tiled");
  // Exactly at the band's edge (1.01 of the fastest) is still a tie.
  const json edge = rec(p, "conv2d.naive", 16, status::ok, 1.01, 0, 0.0);
  const json base = rec(p, "conv2d.register_tiled", 16, status::ok, 1.00, 4, 0.0);
  EXPECT_EQ(select_best({base, edge}).at(0).best["variant"], "conv2d.naive");
}

// A record without a complexity counts as 5, the middle of the scale, in the tie-break among candidates
// within noise of the fastest (here 0.5% apart): below a 6, above a 4, and level with a 5 (then the faster).
TEST(SelectRules, AMissingComplexityCountsAsFive) {
  const Problem p = conv2d(512, 512, 2);
  json unknown = rec(p, "conv2d.naive", 16, status::ok, 1.005);
  unknown.erase("complexity");
  auto chosen = [&](int fastest_complexity) {
    return select_best({rec(p, "conv2d.fft", 16, status::ok, 1.000, fastest_complexity), unknown}).at(0).best["variant"];
  };
  EXPECT_EQ(chosen(6), "conv2d.naive");
  EXPECT_EQ(chosen(4), "conv2d.fft");
  EXPECT_EQ(chosen(5), "conv2d.fft");
}

// Per variant its fastest ok record, and per library variant the record of the config the library picks
// by itself (details.library_pick), which need not be its fastest; the export's baselines are the fastest
// config of each library variant.
TEST(SelectRules, BestPerVariantAndTheLibrarysOwnPick) {
  const Problem p = conv2d(256, 256, 3);
  json lib_fast = rec(p, "conv2d.cudnn", 1, status::ok, 1.0), lib_pick = rec(p, "conv2d.cudnn", 2, status::ok, 1.2);
  lib_fast["library"] = lib_pick["library"] = true;
  lib_pick["details"] = {{"library_pick", true}};
  const std::vector<json> recs = {lib_pick, rec(p, "conv2d.naive", 16, status::ok, 2.0), lib_fast,
                                  rec(p, "conv2d.naive", 32, status::ok, 1.5)};
  const Choice c = select_best(recs).at(0);
  ASSERT_EQ(c.best_per_variant.size(), 2u);
  EXPECT_EQ(c.best_per_variant.at("conv2d.cudnn")["config"]["block_x"], 1);
  EXPECT_EQ(c.best_per_variant.at("conv2d.naive")["config"]["block_x"], 32);
  ASSERT_EQ(c.library_pick.size(), 1u);
  EXPECT_EQ(c.library_pick.at("conv2d.cudnn")["config"]["block_x"], 2);
  const json entry = make_dispatch({}, recs)["entries"][0];
  EXPECT_EQ(entry["baselines"], json::array({{{"variant", "conv2d.cudnn"}, {"config", {{"block_x", 1}}}, {"median_ms", 1.0}}}));
}

// ---- record_key -----------------------------------------------------------------------------------

TEST(RecordKeyRules, ABriefRecordHasAKeyOfItsOwn) {
  const Problem p = conv2d(128, 128, 2);
  json full = rec(p, "conv2d.naive", 32, status::ok, 1.0);
  EXPECT_EQ(record_key(full), "conv2d/h=128,r=2,w=128 conv2d.naive[block_x=32]");
  full["fidelity"] = "full";
  EXPECT_EQ(record_key(full), "conv2d/h=128,r=2,w=128 conv2d.naive[block_x=32]");
  json brief = full;
  brief["fidelity"] = "brief";
  EXPECT_EQ(record_key(brief), "conv2d/h=128,r=2,w=128 conv2d.naive[block_x=32] @brief");
  // A run that screened a candidate briefly has not measured it in full: resume must still measure it.
  EXPECT_FALSE(recorded_keys({brief}).count(record_key(full)));
  EXPECT_EQ(recorded_keys({brief, full}).size(), 2u);
}

// A records file is plain data that other users read and no one runs: rw-r--r-- under the usual umask.
TEST(RecordKeyRules, ARecordsFileIsCreatedReadableAndNotExecutable) {
  const fs::path dir = test::fresh_temp_dir("rules-mode");
  const mode_t old_umask = umask(022);
  RecordWriter(dir / "records.jsonl").append(rec(conv2d(8, 8, 1), "conv2d.naive", 16, status::ok, 1.0));
  umask(old_umask);
  struct stat st {};
  ASSERT_EQ(stat((dir / "records.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  fs::remove_all(dir);
}

// ---- the safe default -----------------------------------------------------------------------------

// X is faster than Y everywhere both ran, but crashed on a third problem: a runtime error (like a wrong
// result) rules a candidate out as the default that must run anywhere; a timeout or a skip does not.
TEST(DispatchRules, ARuntimeErrorDisqualifiesTheSafeDefault) {
  const Problem p1 = conv2d(512, 512, 1), p2 = conv2d(1024, 1024, 1), p3 = conv2d(2048, 2048, 1);
  auto records_with = [&](const std::string& x_on_p3) {
    return std::vector<json>{rec(p1, "conv2d.naive", 16, status::ok, 1.0), rec(p2, "conv2d.naive", 16, status::ok, 2.0),
                             rec(p3, "conv2d.naive", 16, x_on_p3, 0),
                             rec(p1, "conv2d.naive", 64, status::ok, 1.5), rec(p2, "conv2d.naive", 64, status::ok, 3.0),
                             rec(p3, "conv2d.constant", 32, status::ok, 4.0)};
  };
  const std::string x = "conv2d.naive[block_x=16]", y = "conv2d.naive[block_x=64]";
  for (const char* disqualifying : {status::runtime_error, status::wrong_result}) {
    const json def = make_dispatch({}, records_with(disqualifying))["fallback"]["defaults"]["conv2d"];
    EXPECT_EQ(def["candidate"], y) << disqualifying;
    EXPECT_EQ(def["ok_problems"], 2) << disqualifying;
    EXPECT_EQ(def["geomean_ratio"], 1.5) << disqualifying;  // 1.5 / 1.0 and 3.0 / 2.0
  }
  for (const char* harmless : {status::timeout, status::skipped, status::compile_error}) {
    const json def = make_dispatch({}, records_with(harmless))["fallback"]["defaults"]["conv2d"];
    EXPECT_EQ(def["candidate"], x) << harmless;
    EXPECT_EQ(def["geomean_ratio"], 1.0) << harmless;
  }
}

// A candidate ok on more problems is the default even when another is faster where it ran.
TEST(DispatchRules, TheDefaultPrefersMoreOkProblemsOverSpeed) {
  const Problem p1 = conv2d(512, 512, 1), p2 = conv2d(1024, 1024, 1);
  const json def = make_dispatch({}, {rec(p1, "conv2d.naive", 16, status::ok, 1.0),
                                      rec(p1, "conv2d.naive", 64, status::ok, 3.0),
                                      rec(p2, "conv2d.naive", 64, status::ok, 3.0)})["fallback"]["defaults"]["conv2d"];
  EXPECT_EQ(def["candidate"], "conv2d.naive[block_x=64]");
  EXPECT_EQ(def["ok_problems"], 2);
  EXPECT_EQ(def["problems"], 2);
  EXPECT_EQ(def["geomean_ratio"], 1.73205);  // sqrt(3 / 1 * 3 / 3) to 6 digits
}

// Two entries exactly as far from the problem (h and w swapped): the first in the table (sorted by
// problem key) wins, in lookup() and in the exported header's select().
TEST(DispatchRules, OnADistanceTieTheFirstEntryWinsInLookupAndHeader) {
  const Problem wide = conv2d(512, 2048, 1), tall = conv2d(2048, 512, 1);
  const json d = make_dispatch({}, {rec(wide, "conv2d.naive", 16, status::ok, 1.0), rec(tall, "conv2d.constant", 32, status::ok, 1.0)});
  ASSERT_EQ(d["entries"][0]["problem_key"], tall.key());  // "h=2048..." sorts before "h=512..."
  const Lookup l = lookup(d, conv2d(1024, 1024, 1));
  EXPECT_EQ(l.rule, "nearest");
  EXPECT_EQ(l.entry["problem_key"], tall.key());
  EXPECT_EQ(lookup(d, conv2d(1024, 1024, 2)).entry["problem_key"], tall.key());  // the tie holds at any radius

  if (std::system("command -v c++ > /dev/null 2>&1") != 0) GTEST_SKIP() << "no c++ on PATH";
  const fs::path dir = test::fresh_temp_dir("rules-tie-header");
  std::ofstream(dir / "convtune_dispatch.h") << make_header(d);
  std::ofstream(dir / "main.cpp") << "#include <cstdio>\n#include \"convtune_dispatch.h\"\nint main() {\n"
                                     "  const int64_t dims[] = {1024, 1024, 1, 1};  // h, w, r, b\n"
                                     "  const auto c = convtune_dispatch::select(\"conv2d\", dims, 3);  // b left out\n"
                                     "  const auto d = convtune_dispatch::select(\"conv2d\", dims, 4);\n"
                                     "  const auto e = convtune_dispatch::select(\"conv2d\", dims, 2);  // r is no default\n"
                                     "  std::printf(\"%s %s %d %s\\n\", c.entry->candidate, c.rule, c.entry == d.entry, e.rule);\n}\n";
  const std::string s = dir.string();
  ASSERT_EQ(std::system(("c++ -std=c++17 -O0 -o " + s + "/prog " + s + "/main.cpp && " + s + "/prog > " + s + "/out.txt").c_str()), 0);
  EXPECT_EQ(read_text(dir / "out.txt"), "conv2d.constant[block_x=32] nearest 1 none\n");
  fs::remove_all(dir);
}

// ---- merge ----------------------------------------------------------------------------------------

namespace {

using test::kShipped;

// The shipped exhaustive run as `strategy` shards: shard i of n gets the problems it owns (search
// strategies shard by problem), and of each only the records `keep` lets through.
std::vector<fs::path> strategy_shards(const fs::path& root, const std::string& strategy, int n,
                                      const std::function<bool(const json&, int)>& keep) {
  json summary = read_json(kShipped / "summary.json");
  summary["spec"]["strategy"] = strategy;
  std::map<std::string, int> seen_per_problem;
  std::vector<fs::path> out;
  const auto records = read_records(kShipped / "records.jsonl").records;
  for (int i = 0; i < n; ++i) {
    const fs::path f = root / ("shard" + std::to_string(i));
    fs::create_directories(f);
    summary["shard"] = Shard{i, n}.to_json();
    write_json_atomically(f / "summary.json", summary);
    RecordWriter w(f / "records.jsonl");
    for (const auto& r : records)
      if (owns({i, n}, shard_key(r["problem_key"], r["candidate"], true)) &&
          keep(r, seen_per_problem[r["problem_key"].get<std::string>()]++))
        w.append(r);
    out.push_back(f);
  }
  return out;
}

}  // namespace

// A search strategy measures a chosen subset of each problem: a problem with any record is covered, and
// only a problem with none is a gap (the shipped run has 12 problems of 72 candidates each).
TEST(MergeRules, SearchStrategyShardsCountGapsPerProblem) {
  const fs::path root = test::fresh_temp_dir("rules-merge-strategy");
  const std::string lost = "conv2d/h=2048,r=7,w=2048";
  const auto shards = strategy_shards(root, "anneal", 2, [&](const json& r, int nth) {
    return nth < 5 && r["problem_key"] != lost;  // five candidates of each problem, none of one
  });
  std::ostringstream log;
  const json s = merge_runs(shards, root / "merged", {}, log);
  EXPECT_EQ(s["merge"]["gaps"], 1) << log.str();
  EXPECT_EQ(s["merge"]["gap_examples"], json::array({lost}));
  EXPECT_EQ(read_records(root / "merged/records.jsonl").records.size(), 11u * 5);
  EXPECT_TRUE(contains(log.str(), "gap: " + lost)) << log.str();
  fs::remove_all(root);
}

// Exhaustive shards are counted per candidate: the same records leave 12 * 72 - 11 * 5 gaps.
TEST(MergeRules, ExhaustiveShardsCountGapsPerCandidate) {
  const fs::path root = test::fresh_temp_dir("rules-merge-exhaustive");
  const std::string lost = "conv2d/h=2048,r=7,w=2048";
  const auto shards = strategy_shards(root, "exhaustive", 2, [&](const json& r, int nth) {
    return nth < 5 && r["problem_key"] != lost;
  });
  std::ostringstream log;
  const json s = merge_runs(shards, root / "merged", {}, log);
  EXPECT_EQ(s["merge"]["gaps"], 12 * 72 - 11 * 5) << log.str();
  EXPECT_EQ(s["merge"]["gap_examples"].size(), 10u);  // at most ten named
  fs::remove_all(root);
}

// Every field that makes records comparable is compared, each named in the refusal; a refused merge
// writes nothing.
TEST(MergeRules, RefusesShardsOfAnotherDriverSchemaOrShardCount) {
  const fs::path root = test::fresh_temp_dir("rules-merge-refuse");
  const auto shards = strategy_shards(root, "exhaustive", 2, [](const json&, int) { return true; });
  const json original = read_json(shards[1] / "summary.json");
  auto refused_for = [&](const std::function<void(json&)>& change, const std::string& field) {
    json other = original;
    change(other);
    write_json_atomically(shards[1] / "summary.json", other);
    std::ostringstream log;
    const fs::path out = root / ("out-" + field);
    const std::string message = test::input_error([&] { merge_runs(shards, out, {}, log); });
    EXPECT_TRUE(contains(message, " in " + field)) << message;
    EXPECT_FALSE(fs::exists(out)) << field;
  };
  refused_for([](json& s) { s["device"]["driver_version"] = s["device"].value("driver_version", 0) + 10; },
              "device.driver_version");
  {  // a schema this convtune does not read is refused as such, before the shards are compared
    json other = original;
    other["schema"] = 2;
    write_json_atomically(shards[1] / "summary.json", other);
    std::ostringstream log;
    const std::string message = test::input_error([&] { merge_runs(shards, root / "out-schema", {}, log); });
    EXPECT_TRUE(contains(message, "schema is 2; allowed: 1")) << message;
    EXPECT_FALSE(fs::exists(root / "out-schema"));
  }
  refused_for([](json& s) { s["shard"] = Shard{1, 3}.to_json(); }, "shard.count");
  write_json_atomically(shards[1] / "summary.json", original);
  std::ostringstream log;
  EXPECT_EQ(merge_runs(shards, root / "fine", {}, log)["merge"]["gaps"], 0);
  // The output folder may not already hold a run.
  EXPECT_TRUE(contains(test::input_error([&] { merge_runs(shards, root / "fine", {}, log); }), "already holds a run"));
  fs::remove_all(root);
}

// ---- atomic writes --------------------------------------------------------------------------------

// The new text goes to a temporary and is renamed over the old file: the old inode is never written, so a
// hard link to it (or a reader holding it open) keeps the old bytes whole.
TEST(AtomicWrite, ReplacesTheFileInsteadOfWritingIntoIt) {
  const fs::path dir = test::fresh_temp_dir("rules-atomic");
  const fs::path path = dir / "summary.json", link = dir / "old-summary.json";
  write_text_atomically(path, "old text, longer than the new one\n");
  fs::create_hard_link(path, link);
  std::ifstream reader(path, std::ios::binary);  // opened before the write
  struct stat before {};
  ASSERT_EQ(stat(path.c_str(), &before), 0);

  write_text_atomically(path, "new\n");
  EXPECT_EQ(read_text(path), "new\n");
  EXPECT_EQ(read_text(link), "old text, longer than the new one\n");
  std::stringstream seen;
  seen << reader.rdbuf();
  EXPECT_EQ(seen.str(), "old text, longer than the new one\n");
  struct stat after {};
  ASSERT_EQ(stat(path.c_str(), &after), 0);
  EXPECT_NE(after.st_ino, before.st_ino);
  EXPECT_FALSE(fs::exists(dir / "summary.json.tmp"));
  fs::remove_all(dir);
}

// A write that cannot finish throws and leaves the old file as it was.
TEST(AtomicWrite, AFailedWriteLeavesTheOldFileWhole) {
  const fs::path dir = test::fresh_temp_dir("rules-atomic-fail");
  const fs::path path = dir / "dispatch.json";
  write_text_atomically(path, "{\"old\": true}\n");
  fs::create_directory(dir / "dispatch.json.tmp");  // the temporary cannot be opened as a file
  EXPECT_THROW(write_text_atomically(path, "{\"new\": true}\n"), std::exception);
  EXPECT_EQ(read_text(path), "{\"old\": true}\n");
  fs::remove_all(dir);
}
