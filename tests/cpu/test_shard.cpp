// Sharded sweeps without a GPU: the partition (disjoint, complete, the same on every machine), plans cut by
// shard, and merge on real shipped records split into shards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "harness/error.h"
#include "harness/json_file.h"
#include "harness/merge.h"
#include "harness/pack.h"
#include "harness/records.h"
#include "harness/select.h"
#include "harness/shard.h"
#include "harness/spec.h"
#include "harness/sweep_plan.h"
#include "test_support.h"

using namespace convtune;
namespace fs = std::filesystem;

TEST(Shard, ParsesIOfNAndRefusesAnythingElse) {
  const Shard s = Shard::parse("3/4", "--shard");
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 4);
  EXPECT_TRUE(s.active());
  EXPECT_FALSE(Shard::parse("0/1", "--shard").active());
  for (const char* bad : {"4/4", "-1/2", "a/b", "1", "1/0", "1/2x", "/2", "1/", ""}) {
    try {
      Shard::parse(bad, "--shard");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--shard"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("i/n"), std::string::npos);
    }
  }
}

// FNV-1a's published values: the partition must not depend on the compiler or the machine.
TEST(Shard, HashIsFnv1a) {
  EXPECT_EQ(stable_hash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(stable_hash("a"), 0xaf63dc4c8601ec8cull);
}

TEST(Shard, EveryKeyBelongsToExactlyOneShardAndShardsAreBalanced) {
  for (int n : {1, 2, 3, 7}) {
    std::vector<int> load(n, 0);
    for (int k = 0; k < 3000; ++k) {
      const std::string key = "conv2d/h=" + std::to_string(k) + " conv2d.tiled[x=" + std::to_string(k % 13) + "]";
      int owners = 0;
      for (int i = 0; i < n; ++i)
        if (owns({i, n}, key)) {
          ++owners;
          ++load[i];
        }
      ASSERT_EQ(owners, 1) << key << " in " << n << " shards";
    }
    for (int i = 0; i < n; ++i) EXPECT_GT(load[i], 3000 / n * 8 / 10) << "shard " << i << "/" << n;
  }
}

namespace {

SweepSpec small_spec(const std::string& strategy) {
  return SweepSpec::parse({{"name", "shard-test"},
                           {"strategy", strategy},
                           {"problems", {{{"family", "conv2d"}, {"h", 512}, {"w", 512}, {"r", {1, 2, 3, 5}}}}},
                           {"variants", {"conv2d.register_tiled", "conv2d.tiled_in"}}});
}

std::string key_of(const PlannedCandidate& c) {
  return c.problem.key() + " " + candidate_name(c.variant->name(), c.config);
}

}  // namespace

TEST(Shard, ShardPlansCoverThePlanOnce) {
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const SweepPlan full = make_plan(small_spec("exhaustive"), dev);
  std::multiset<std::string> covered;
  for (int i = 0; i < 3; ++i)
    for (const auto& c : shard_plan(full, {i, 3}, false).candidates) covered.insert(key_of(c));
  std::multiset<std::string> expected;
  for (const auto& c : full.candidates) expected.insert(key_of(c));
  EXPECT_EQ(covered, expected);
}

TEST(Shard, SearchStrategiesKeepEachProblemWhole) {
  const SweepPlan full = make_plan(small_spec("anneal"), DeviceInfo::offline_sm90());
  std::map<std::string, std::set<int>> shards_of_problem;
  for (int i = 0; i < 2; ++i)
    for (const auto& c : shard_plan(full, {i, 2}, shard_by_problem("anneal")).candidates)
      shards_of_problem[c.problem.key()].insert(i);
  EXPECT_EQ(shards_of_problem.size(), 4u);
  for (const auto& [problem, shards] : shards_of_problem) EXPECT_EQ(shards.size(), 1u) << problem;
}

namespace {

using test::kShipped;


// Splits the shipped run into n shard folders as n `--shard i/n` jobs would have written them.
std::vector<fs::path> split(const fs::path& root, int n) {
  json summary = read_json(kShipped / "summary.json");
  std::vector<fs::path> out;
  for (int i = 0; i < n; ++i) {
    const fs::path f = root / ("shard" + std::to_string(i));
    fs::create_directories(f);
    summary["shard"] = Shard{i, n}.to_json();
    write_json_atomically(f / "summary.json", summary);
    RecordWriter w(f / "records.jsonl");
    for (const auto& r : read_records(kShipped / "records.jsonl").records)
      if (owns({i, n}, shard_key(r["problem_key"], r["candidate"], false))) w.append(r);
    out.push_back(f);
  }
  return out;
}

std::map<std::string, std::string> choices(const fs::path& run) {
  std::map<std::string, std::string> out;
  for (const auto& c : select_best(read_records(run / "records.jsonl").records))
    out[c.problem_key] = c.best["candidate"].get<std::string>();
  return out;
}

}  // namespace

TEST(Merge, ShardsOfARealRunMergeIntoTheSameChoices) {
  const fs::path root = test::fresh_temp_dir("shard-test-real");
  const auto shards = split(root, 3);
  std::ostringstream log;
  const json summary = merge_runs(shards, root / "merged", {"convtune", "merge"}, log);
  EXPECT_EQ(summary["merge"]["duplicates"], 0);
  EXPECT_EQ(summary["merge"]["gaps"], 0) << log.str();
  EXPECT_TRUE(summary["merge"]["missing_shards"].empty());
  EXPECT_EQ(summary["merged_from"].size(), 3u);
  EXPECT_FALSE(summary.contains("shard"));
  EXPECT_EQ(read_records(root / "merged/records.jsonl").records.size(),
            read_records(kShipped / "records.jsonl").records.size());
  EXPECT_EQ(choices(root / "merged"), choices(kShipped));
  fs::remove_all(root);
}

// A shard folder packed (records.jsonl.gz, convtune pack) is a run folder like the others.
TEST(Merge, APackedShardMergesLikeAPlainOne) {
#ifndef CONVTUNE_HAVE_ZLIB
  GTEST_SKIP() << "built without zlib";
#endif
  const fs::path root = test::fresh_temp_dir("shard-test-packed");
  const auto shards = split(root, 2);
  ASSERT_EQ(pack_run(shards[1]).size(), 1u);
  ASSERT_FALSE(fs::exists(shards[1] / "records.jsonl"));
  std::ostringstream log;
  const json summary = merge_runs(shards, root / "merged", {"convtune", "merge"}, log);
  EXPECT_EQ(summary["merge"]["gaps"], 0) << log.str();
  EXPECT_EQ(read_records(root / "merged/records.jsonl").records.size(),
            read_records(kShipped / "records.jsonl").records.size());
  EXPECT_EQ(choices(root / "merged"), choices(kShipped));
  fs::remove_all(root);
}

// The merge log lists the first five duplicates, one line each (merge.cpp:155's cap).
TEST(Merge, TheLogListsTheFirstFiveDuplicates) {
  const fs::path root = test::fresh_temp_dir("shard-test-dup-log");
  auto shards = split(root, 2);
  const auto s1 = read_records(shards[1] / "records.jsonl").records;
  ASSERT_GE(s1.size(), 7u);
  {
    RecordWriter w(shards[0] / "records.jsonl");
    for (size_t i = 0; i < 7; ++i) w.append(s1[i]);
  }
  std::ostringstream log;
  const json merged = merge_runs(shards, root / "merged", {}, log);
  EXPECT_EQ(merged["merge"]["duplicates"], 7);
  std::istringstream lines(log.str());
  std::vector<std::string> listed;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("  duplicate: ", 0) == 0) listed.push_back(line.substr(13));
  ASSERT_EQ(listed.size(), 5u) << log.str();
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(listed[i], record_key(s1[i]));  // the first five, in shard order
  fs::remove_all(root);
}

TEST(Merge, ReportsDuplicatesGapsAndMissingShards) {
  const fs::path root = test::fresh_temp_dir("shard-test-gaps");
  auto shards = split(root, 2);
  // One record of shard 1 also in shard 0, and one planned record of shard 0 lost.
  const auto s1 = read_records(shards[1] / "records.jsonl").records;
  auto s0 = read_records(shards[0] / "records.jsonl").records;
  s0.pop_back();
  s0.push_back(s1.front());
  fs::remove(shards[0] / "records.jsonl");
  {
    RecordWriter w(shards[0] / "records.jsonl");
    for (const auto& r : s0) w.append(r);
  }
  std::ostringstream log;
  const json both = merge_runs(shards, root / "both", {}, log);
  EXPECT_EQ(both["merge"]["duplicates"], 1);
  EXPECT_EQ(both["merge"]["gaps"], 1);
  const json one = merge_runs({shards[0]}, root / "one", {}, log);
  EXPECT_EQ(one["merge"]["missing_shards"], json::array({1}));
  EXPECT_GT(one["merge"]["gaps"].get<int>(), 1);
  fs::remove_all(root);
}

TEST(Merge, RefusesIncompatibleShardsNamingTheField) {
  const fs::path root = test::fresh_temp_dir("shard-test-refuse");
  const auto shards = split(root, 2);
  auto refused = [&](const std::vector<fs::path>& runs, const std::string& field) {
    std::ostringstream log;
    try {
      merge_runs(runs, root / ("out-" + field), {}, log);
      ADD_FAILURE() << "merged shards that differ in " << field;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  refused({shards[0], shards[0]}, "shard 0/2");
  json other = read_json(shards[1] / "summary.json");
  other["device"]["name"] = "NVIDIA H200";
  write_json_atomically(shards[1] / "summary.json", other);
  refused(shards, "device.name");
  other = read_json(shards[0] / "summary.json");
  other["device"]["name"] = "NVIDIA H200";
  other["spec"]["name"] = "another";
  write_json_atomically(shards[1] / "summary.json", other);
  refused(shards, "spec");
  refused({shards[0], root / "nothing"}, "not a run folder");
  fs::remove_all(root);
}
