#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/dispatch.h"
#include "harness/dispatch_check.h"
#include "harness/family.h"
#include "harness/error.h"
#include "harness/records.h"
#include "harness/select.h"
#include "harness/json_file.h"
#include "test_support.h"

using namespace convtune;
namespace fs = std::filesystem;

namespace {

using test::conv2d;

json record(const Problem& p, const std::string& variant, const json& config, const std::string& status, double ms,
            int complexity, bool library = false) {
  json r = {{"schema", 1},          {"problem", p.to_json()},  {"problem_key", p.key()},
            {"family", "conv2d"},   {"variant", variant},      {"library", library},
            {"config", config},     {"candidate", candidate_name(variant, config)},
            {"complexity", complexity}, {"status", status}};
  // Even a wrong result carries a time here: it must still never be chosen.
  r["time"] = {{"median_ms", ms}, {"rel_stderr", 0.002}};
  if (status == "ok") {
    r["gbps_effective"] = 1234.56789012;
    r["roofline_fraction"] = 0.412345678;
  }
  if (status == "skipped") r.erase("time");
  return r;
}

const json kTiledA = {{"block_x", 32}, {"block_y", 8}, {"order", "input_rows"}, {"px", 4}, {"py", 4}};
const json kTiledB = {{"block_x", 64}, {"block_y", 4}, {"order", "input_rows"}, {"px", 4}, {"py", 2}};
const json kBlock = {{"block_x", 32}, {"block_y", 8}};
const json kAlgo = {{"algo", "implicit_precomp_gemm"}};

const json kSummary = {{"schema", 1},
                       {"git_sha", "abc123"},
                       {"device", {{"name", "NVIDIA H100 80GB HBM3"}, {"arch", "sm_90"}, {"sms", 132}, {"l2_bytes", 52428800}}},
                       {"ceilings", {{"copy_gbps", 2900.0}, {"fp32_gflops", 60000.0}}}};

// Three problems: a tie (1024 r=1), a library winner (1024 r=3), and a wrong-but-fastest candidate (4096 r=7).
std::vector<json> synthetic_records() {
  const Problem p1 = conv2d(1024, 1024, 1), p2 = conv2d(1024, 1024, 3), p3 = conv2d(4096, 4096, 7);
  return {
      record(p1, "conv2d.register_tiled", kTiledA, "ok", 0.0100, 4),
      record(p1, "conv2d.constant", kBlock, "ok", 0.01005, 1),  // within 1%: simpler, chosen
      record(p1, "conv2d.naive", kBlock, "wrong_result", 0.001, 0),
      record(p1, "conv2d.cudnn", kAlgo, "ok", 0.02, 1, true),
      record(p2, "conv2d.register_tiled", kTiledA, "ok", 0.02, 4),
      record(p2, "conv2d.constant", kBlock, "ok", 0.05, 1),
      record(p2, "conv2d.cudnn", kAlgo, "ok", 0.018, 1, true),
      record(p2, "conv2d.tiled_halo_l2", {{"tile_x", 64}, {"tile_y", 32}}, "skipped", 0, 3),
      record(p3, "conv2d.register_tiled", kTiledA, "ok", 0.3, 4),
      record(p3, "conv2d.register_tiled", kTiledB, "ok", 0.25, 4),
      record(p3, "conv2d.constant", kBlock, "wrong_result", 0.1, 1),
      record(p3, "conv2d.cudnn", kAlgo, "ok", 0.4, 1, true),
      record(p3, "conv2d.fft", {{"size_policy", "pow2"}}, "runtime_error", 0, 2, true),
  };
}

const json& entry_for(const json& dispatch, const std::string& key) {
  for (const auto& e : dispatch["entries"])
    if (e["problem_key"] == key) return e;
  throw std::runtime_error("no entry " + key);
}

bool have_compiler() { return std::system("command -v c++ > /dev/null 2>&1") == 0; }

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag = "") {
    path = test::fresh_temp_dir(std::string("dispatch-test-") +
                                ::testing::UnitTest::GetInstance()->current_test_info()->name() + tag);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(Dispatch, ChoosesTheBestOkCandidatePerProblem) {
  const json d = make_dispatch(kSummary, synthetic_records());
  EXPECT_EQ(d["schema"], 1);
  EXPECT_EQ(d["device"]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d["git_sha"], "abc123");
  EXPECT_EQ(d["ceilings"]["copy_gbps"], 2900.0);
  ASSERT_EQ(d["entries"].size(), 3u);
  EXPECT_EQ(d["entries"][0]["problem_key"], "conv2d/h=1024,r=1,w=1024");  // sorted by key
  EXPECT_EQ(d["entries"][2]["problem_key"], "conv2d/h=4096,r=7,w=4096");

  const json& tie = entry_for(d, "conv2d/h=1024,r=1,w=1024");
  EXPECT_EQ(tie["candidate"], "conv2d.constant[block_x=32,block_y=8]");  // naive is faster but wrong
  EXPECT_EQ(tie["ties"], 1);
  EXPECT_EQ(tie["runner_up"]["candidate"], "conv2d.register_tiled[block_x=32,block_y=8,order=input_rows,px=4,py=4]");
  EXPECT_EQ(tie["gbps_effective"], 1234.57);  // 6 significant digits
  EXPECT_EQ(tie["roofline_fraction"], 0.412346);
  EXPECT_EQ(tie["problem"], conv2d(1024, 1024, 1).to_json());

  const json& lib = entry_for(d, "conv2d/h=1024,r=3,w=1024");
  EXPECT_EQ(lib["variant"], "conv2d.cudnn");
  EXPECT_EQ(lib["config"], kAlgo);
  EXPECT_EQ(lib["median_ms"], 0.018);
  EXPECT_EQ(lib["margin"], 0.111111);
  EXPECT_EQ(lib["ties"], 0);

  const json& big = entry_for(d, "conv2d/h=4096,r=7,w=4096");
  EXPECT_EQ(big["candidate"], "conv2d.register_tiled[block_x=64,block_y=4,order=input_rows,px=4,py=2]");  // constant: wrong

  // The default: non-library, never wrong, ok on all three problems.
  const json& def = d["fallback"]["defaults"]["conv2d"];
  EXPECT_EQ(def["candidate"], "conv2d.register_tiled[block_x=32,block_y=8,order=input_rows,px=4,py=4]");
  EXPECT_EQ(def["ok_problems"], 3);
  EXPECT_EQ(def["problems"], 3);
  EXPECT_EQ(d["fallback"]["rules"].size(), 3u);
  EXPECT_EQ(d["fallback"]["constraints"]["conv2d"], json::array({"r"}));
}

TEST(Dispatch, DefaultPrefersNonLibraryThenGeometricMean) {
  const Problem p1 = conv2d(512, 512, 1), p2 = conv2d(512, 512, 2);
  const json x = {{"block_x", 16}, {"block_y", 1}}, y = {{"block_x", 64}, {"block_y", 1}};
  const std::vector<json> recs = {
      record(p1, "conv2d.cudnn", kAlgo, "ok", 0.5, 1, true),  // fastest everywhere, but a library
      record(p2, "conv2d.cudnn", kAlgo, "ok", 0.5, 1, true),
      record(p1, "conv2d.naive", x, "ok", 1.0, 0),  // ratios 2.0, 3.0
      record(p2, "conv2d.naive", x, "ok", 1.5, 0),
      record(p1, "conv2d.naive", y, "ok", 1.2, 0),  // ratios 2.4, 2.4: lower geometric mean
      record(p2, "conv2d.naive", y, "ok", 1.2, 0),
  };
  const json def = make_dispatch(kSummary, recs)["fallback"]["defaults"]["conv2d"];
  EXPECT_EQ(def["candidate"], candidate_name("conv2d.naive", y));
  EXPECT_EQ(def["geomean_ratio"], 2.4);

  // Only library candidates: one of them is the default.
  const json only_lib = make_dispatch(kSummary, {recs[0], recs[1]})["fallback"]["defaults"]["conv2d"];
  EXPECT_EQ(only_lib["variant"], "conv2d.cudnn");
}

TEST(Dispatch, NoOkRecordsIsAnInputError) {
  const Problem p = conv2d(64, 64, 1);
  try {
    make_dispatch(kSummary, {record(p, "conv2d.naive", kBlock, "wrong_result", 1, 0),
                             record(p, "conv2d.constant", kBlock, "skipped", 0, 1)});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no ok records"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("wrong_result 1"), std::string::npos) << e.what();
  }
}

TEST(Dispatch, IsDeterministic) {
  const auto recs = synthetic_records();
  const json a = make_dispatch(kSummary, recs), b = make_dispatch(kSummary, recs);
  EXPECT_EQ(a.dump(2), b.dump(2));
  EXPECT_EQ(make_header(a), make_header(b));
  // And survives a round trip through the file.
  EXPECT_EQ(make_header(json::parse(a.dump(2))), make_header(a));
}

TEST(Dispatch, LookupRules) {
  const json d = make_dispatch(kSummary, synthetic_records(), false);  // the nearest rule: a table without a model
  auto check = [&](const Problem& p, const std::string& rule, const std::string& key) {
    const Lookup l = lookup(d, p);
    EXPECT_EQ(l.rule, rule) << p.key();
    EXPECT_EQ(l.entry.value("problem_key", ""), key) << p.key();
  };
  check(conv2d(1024, 1024, 3), "exact", "conv2d/h=1024,r=3,w=1024");
  check(conv2d(4000, 4000, 1), "nearest", "conv2d/h=1024,r=1,w=1024");   // the only r=1 entry
  check(conv2d(2048, 2048, 7), "nearest", "conv2d/h=4096,r=7,w=4096");
  check(conv2d(1024, 1024, 2), "nearest", "conv2d/h=1024,r=3,w=1024");   // no r=2: nearest radius
  check(conv2d(1024, 1024, 5), "nearest", "conv2d/h=4096,r=7,w=4096");   // radius first, then shape
  check(conv2d(1024, 1024, 20), "nearest", "conv2d/h=4096,r=7,w=4096");

  // A family the table does not cover: an error naming it.
  try {
    lookup(d, example_problem("conv1d"));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("conv1d"), std::string::npos) << e.what();
  }
  // A family with a default but no entries: the default.
  json only_default = d;
  only_default["entries"] = json::array();
  const Lookup l = lookup(only_default, conv2d(100, 100, 1));
  EXPECT_EQ(l.rule, "default");
  EXPECT_EQ(l.entry["candidate"], d["fallback"]["defaults"]["conv2d"]["candidate"]);
  EXPECT_EQ(l.entry["config"], kTiledA);
}

// A layer measured only where TF32 was allowed must never serve a strict-fp32 problem, however near:
// precision is a required dim, in lookup() and in the exported header.
TEST(Dispatch, RequiredDimsAreNeverRelaxed) {
  Problem tf32 = example_problem("layer_fwd"), strict = tf32, other = tf32;
  tf32.dims["precision"] = 1;
  other.dims["h"] = 7;  // a far shape, strict
  auto layer_record = [](const Problem& p, const json& config) {
    json r = record(p, "layer_fwd.implicit_gemm", config, "ok", 0.1, 4);
    r["family"] = "layer_fwd";
    return r;
  };
  const json d = make_dispatch(kSummary, {layer_record(tf32, {{"math", "tf32"}}), layer_record(other, {{"math", "fp32"}})});
  EXPECT_EQ(d["fallback"]["required"]["layer_fwd"], json::array({"precision"}));
  const Lookup near = lookup(d, strict);
  EXPECT_EQ(near.rule, "nearest");
  EXPECT_EQ(near.entry["config"]["math"], "fp32");
  EXPECT_EQ(lookup(d, tf32).rule, "exact");
  if (!have_compiler()) GTEST_SKIP() << "no c++ on PATH";
  TempDir tmp;
  write_file(tmp.path / "convtune_dispatch.h", make_header(d));
  std::string dims;
  for (const DimSpec& dim : find_family("layer_fwd").dims()) dims += std::to_string(strict.at(dim.name)) + ",";
  write_file(tmp.path / "main.cpp", "#include <cstdio>\n#include \"convtune_dispatch.h\"\nint main() {\n"
                                    "  const int64_t dims[] = {" + dims + "};\n"
                                    "  const auto c = convtune_dispatch::select(\"layer_fwd\", dims, sizeof dims / 8);\n"
                                    "  std::printf(\"%s %s\\n\", c.entry->params[0].str_value, c.rule);\n}\n");
  const std::string dir = tmp.path.string();
  ASSERT_EQ(std::system(("c++ -std=c++17 -O1 -o " + dir + "/prog " + dir + "/main.cpp && " + dir + "/prog > " + dir +
                         "/out.txt").c_str()),
            0);
  EXPECT_EQ(read_file(tmp.path / "out.txt"), "fp32 nearest\n");
}

TEST(Dispatch, HeaderCompilesAndAgreesWithLookup) {
  if (!have_compiler()) GTEST_SKIP() << "no c++ on PATH";
  TempDir tmp;
  const json d = make_dispatch(kSummary, synthetic_records());
  write_file(tmp.path / "convtune_dispatch.h", make_header(d));

  const std::vector<std::array<int64_t, 3>> shapes = {{1024, 1024, 3}, {4000, 4000, 1}, {2048, 2048, 7}, {1024, 1024, 2},
                                                      {1024, 1024, 5}, {67, 45, 2},     {1, 1, 0},       {65536, 1, 32}};
  std::string prog = "#include <cstdio>\n#include \"convtune_dispatch.h\"\nint main() {\n  using namespace convtune_dispatch;\n";
  prog += "  const int64_t shapes[][3] = {";
  for (const auto& s : shapes) prog += "{" + std::to_string(s[0]) + "," + std::to_string(s[1]) + "," + std::to_string(s[2]) + "},";
  prog += "};\n  for (const auto& s : shapes) { const Choice c = select(\"conv2d\", s, 3);\n"
          "    std::printf(\"%s %s\\n\", c.entry ? c.entry->candidate : \"-\", c.rule); }\n"
          "  const int64_t n[3] = {1, 1, 1};\n"
          "  std::printf(\"%s\\n\", select(\"conv1d\", n, 3).rule);\n"
          "  std::printf(\"%s\\n\", select(\"conv2d\", n, 2).rule);\n"
          "  std::printf(\"%s %d\\n\", kDevice, kEntries[0].param_count);\n}\n";
  write_file(tmp.path / "main.cpp", prog);

  const std::string dir = tmp.path.string();
  ASSERT_EQ(std::system(("c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only " + dir + "/main.cpp").c_str()), 0);
  ASSERT_EQ(std::system(("c++ -std=c++17 -O1 -o " + dir + "/prog " + dir + "/main.cpp && " + dir + "/prog > " + dir +
                         "/out.txt").c_str()),
            0);
  std::string expected;
  for (const auto& s : shapes) {
    const Lookup l = lookup(d, conv2d(s[0], s[1], s[2]));
    expected += l.entry["candidate"].get<std::string>() + " " + l.rule + "\n";
  }
  expected += "none\nnone\nNVIDIA H100 80GB HBM3 2\n";
  EXPECT_EQ(read_file(tmp.path / "out.txt"), expected);

  // A table with only defaults still gives a valid header.
  json only_default = d;
  only_default["entries"] = json::array();
  write_file(tmp.path / "convtune_dispatch.h", make_header(only_default));
  EXPECT_EQ(std::system(("c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only " + dir + "/main.cpp").c_str()), 0);
}

TEST(Dispatch, ExportRunWritesBothFiles) {
  TempDir tmp;
  const auto recs = synthetic_records();
  write_json_atomically(tmp.path / "summary.json", kSummary);
  std::string lines;
  for (const auto& r : recs) lines += r.dump() + "\n";
  write_file(tmp.path / "records.jsonl", lines + "{\"schema\":1,\"problem_key\":\"conv2d/h=1");  // a torn last line

  ::testing::internal::CaptureStderr();
  export_run(tmp.path);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("records.jsonl:" + std::to_string(recs.size() + 1)), std::string::npos) << err;

  const json expected = make_dispatch(kSummary, recs);
  EXPECT_EQ(read_json(tmp.path / "dispatch.json"), expected);
  EXPECT_EQ(read_file(tmp.path / "convtune_dispatch.h"), make_header(expected));
  EXPECT_FALSE(fs::exists(tmp.path / "dispatch.json.tmp"));

  // Exporting again gives the same bytes.
  const std::string first = read_file(tmp.path / "dispatch.json");
  ::testing::internal::CaptureStderr();
  export_run(tmp.path);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(read_file(tmp.path / "dispatch.json"), first);

  // No ok record: a clear error, nothing written.
  TempDir empty("_empty");
  write_json_atomically(empty.path / "summary.json", kSummary);
  write_file(empty.path / "records.jsonl", record(conv2d(8, 8, 1), "conv2d.naive", kBlock, "skipped", 0, 0).dump() + "\n");
  EXPECT_THROW(export_run(empty.path), InputError);
  EXPECT_FALSE(fs::exists(empty.path / "dispatch.json"));
  EXPECT_THROW(export_run(empty.path / "missing"), InputError);
}

// The export_app fixture is written by hand: it must stay in make_dispatch's format.
TEST(Dispatch, FixtureHasTheExportFormat) {
  const json fixture = read_json(fs::path(CONVTUNE_SOURCE_DIR) / "tests/export_app/fixture_dispatch.json");
  const json made = make_dispatch(kSummary, synthetic_records(), false);  // the fixture is a table without a model
  auto keys = [](const json& j) {
    std::vector<std::string> k;
    for (const auto& [name, v] : j.items()) k.push_back(name);
    return k;
  };
  EXPECT_EQ(keys(fixture), keys(made));
  EXPECT_EQ(keys(fixture["fallback"]), keys(made["fallback"]));
  EXPECT_EQ(keys(fixture["fallback"]["defaults"]["conv2d"]), keys(made["fallback"]["defaults"]["conv2d"]));
  for (const auto& e : fixture["entries"]) {
    EXPECT_EQ(keys(e), keys(made["entries"][0]));
    EXPECT_EQ(Problem::from_json(e["problem"]).key(), e["problem_key"]);
    EXPECT_EQ(candidate_name(e["variant"], e["config"]), e["candidate"]);
  }
  EXPECT_EQ(lookup(fixture, conv2d(1024, 1024, 3)).rule, "exact");
  EXPECT_EQ(lookup(fixture, conv2d(67, 45, 2)).rule, "nearest");
}

TEST(DispatchT4, RecordsMapToTheOpenResultsFormat) {
  const std::vector<json> recs = {
      {{"problem_key", "conv2d/h=8,r=1,w=8"}, {"problem", {{"family", "conv2d"}, {"h", 8}, {"w", 8}, {"r", 1}}},
       {"variant", "conv2d.constant"}, {"config", {{"block_x", 32}}}, {"candidate", "c1"}, {"status", "ok"},
       {"time", {{"median_ms", 0.5}}}, {"compile_ms", 12.0}},
      {{"problem_key", "conv2d/h=8,r=1,w=8"}, {"variant", "conv2d.naive"}, {"candidate", "c2"},
       {"status", "wrong_result"}},
      {{"problem_key", "conv2d/h=8,r=1,w=8"}, {"variant", "conv2d.naive"}, {"candidate", "c3"}, {"status", "timeout"}},
      {{"problem_key", "conv2d/h=8,r=1,w=8"}, {"variant", "conv2d.tiled_in"}, {"candidate", "c4"}, {"status", "skipped"}}};
  const json t4 = make_t4({{"device", {{"name", "GPU"}}}}, recs);
  EXPECT_EQ(t4["schema_version"], "1.0.0");
  ASSERT_EQ(t4["results"].size(), 4u);
  const json& ok = t4["results"][0];
  EXPECT_EQ(ok["invalidity"], "correct");
  EXPECT_EQ(ok["correctness"], 1);
  EXPECT_EQ(ok["configuration"]["variant"], "conv2d.constant");
  EXPECT_EQ(ok["configuration"]["problem.r"], 1);
  EXPECT_EQ(ok["configuration"]["block_x"], 32);
  EXPECT_EQ(ok["times"]["runtimes"], json::array({0.5}));
  EXPECT_EQ(ok["measurements"][0]["name"], "time");
  EXPECT_EQ(t4["results"][1]["invalidity"], "correctness");
  EXPECT_EQ(t4["results"][1]["correctness"], 0);
  EXPECT_EQ(t4["results"][2]["invalidity"], "timeout");
  EXPECT_EQ(t4["results"][3]["invalidity"], "constraints");
}

// check_dispatch: the table built from the synthetic grid, tried on a run of two shapes it never measured.
TEST(DispatchCheck, ComparesTheTablesChoiceWithTheBestOfTheRun) {
  const json table = make_dispatch(kSummary, synthetic_records(), false);  // the nearest rule's choices
  const Problem near_r3 = conv2d(2048, 2048, 3), near_r7 = conv2d(4096, 4096, 6), unmeasured = conv2d(1024, 1024, 1);
  const json chosen_r3 = lookup(table, near_r3).entry, chosen_r7 = lookup(table, near_r7).entry;
  ASSERT_EQ(chosen_r3["variant"], "conv2d.cudnn");  // 1024 r=3's winner, the nearest shape with r=3
  const std::vector<json> run = {
      record(near_r3, "conv2d.cudnn", kAlgo, "ok", 0.030, 1, true),
      record(near_r3, "conv2d.register_tiled", kTiledA, "ok", 0.020, 4),  // the true best: the table is 1.5x off
      record(near_r7, chosen_r7["variant"], chosen_r7["config"], "ok", 0.105, 4),
      record(near_r7, "conv2d.constant", kBlock, "ok", 0.100, 1),  // best by 5%: within 1.1x
      record(near_r7, "conv2d.naive", kBlock, "wrong_result", 0.001, 0),  // never the best
      record(unmeasured, "conv2d.naive", kBlock, "ok", 0.5, 0),  // the table's choice was not run here
  };
  const json check = check_dispatch(table, kSummary["device"], run);
  EXPECT_EQ(check["table"], "single table (NVIDIA H100 80GB HBM3)");
  ASSERT_EQ(check["rows"].size(), 3u);
  std::map<std::string, json> by_key;
  for (const json& r : check["rows"]) by_key[r["problem_key"].get<std::string>()] = r;
  EXPECT_NEAR(by_key[near_r3.key()]["ratio"].get<double>(), 1.5, 1e-9);
  EXPECT_EQ(by_key[near_r3.key()]["best"], "conv2d.register_tiled[block_x=32,block_y=8,order=input_rows,px=4,py=4]");
  EXPECT_EQ(by_key[near_r3.key()]["rule"], "nearest");
  EXPECT_NEAR(by_key[near_r7.key()]["ratio"].get<double>(), 1.05, 1e-9);
  EXPECT_TRUE(by_key[unmeasured.key()]["ratio"].is_null());
  EXPECT_EQ(by_key[unmeasured.key()]["rule"], "exact");
  EXPECT_EQ(check["measured"], 2);
  EXPECT_EQ(check["within_1_1"], 1);
  EXPECT_NEAR(check["worst_ratio"].get<double>(), 1.5, 1e-9);
  // First-use tuning would time the shortlists: register_tiled at 2048 r=3 (an alternate of the 1024
  // r=3 entry), constant at 4096 r=6 (one of the next nearest entry's). Exact matches are not tuned.
  EXPECT_NEAR(by_key[near_r3.key()]["tuned_ratio"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(by_key[near_r7.key()]["tuned_ratio"].get<double>(), 1.0, 1e-9);
  EXPECT_TRUE(by_key[unmeasured.key()]["tuned_ratio"].is_null());
  EXPECT_EQ(check["tuned_measured"], 2);
  EXPECT_EQ(check["tuned_within_1_1"], 2);
  const std::string text = format_dispatch_check(check);
  EXPECT_NE(text.find("1 of 2 problems"), std::string::npos) << text;
  EXPECT_NE(text.find("not run"), std::string::npos) << text;
  EXPECT_NE(text.find("with first-use tuning"), std::string::npos) << text;
  EXPECT_EQ(text.find("note: the run was measured on"), std::string::npos) << text;
  // The same table on a run of another GPU model says so.
  json h200 = kSummary["device"];
  h200["name"] = "NVIDIA H200";
  const std::string elsewhere = format_dispatch_check(check_dispatch(table, h200, run));
  EXPECT_NE(elsewhere.find("note: the run was measured on NVIDIA H200, not on the table's GPU model"),
            std::string::npos)
      << elsewhere;
}

// A record made before its variant gained a parameter with an `absent` value (row_bands' `stages`) names the
// same kernel as a table's choice that names it at that value: the checks must see one candidate, not two.
TEST(DispatchCheck, RecordsMadeBeforeAParameterMeetATableThatNamesIt) {
  const Problem p = Problem::from_json({{"family", "conv2d"}, {"b", 200}, {"h", 96}, {"w", 96}, {"r", 2}});
  const json before = {{"band", 32}, {"py", 4}, {"threads", 64}}, now = {{"band", 32}, {"py", 4}, {"stages", 1}, {"threads", 64}};
  const json old_record = record(p, "conv2d.row_bands", before, "ok", 0.0118, 3);
  const json table_choice = {{"candidate", candidate_name("conv2d.row_bands", now)}, {"variant", "conv2d.row_bands"}, {"config", now}};
  const auto times = times_by_problem({old_record, record(p, "conv2d.row_bands", {{"band", 8}, {"py", 4}, {"stages", 2}, {"threads", 64}}, "skipped", 0, 3)});
  const ProblemTimes& t = times.at(p.key());
  EXPECT_EQ(t.name_of(old_record), "conv2d.row_bands[band=32,py=4,stages=1,threads=64]");
  EXPECT_EQ(t.name_of(table_choice), table_choice["candidate"]);
  ASSERT_NE(t.time_of(table_choice), nullptr);
  EXPECT_DOUBLE_EQ(*t.time_of(table_choice), 0.0118);
  EXPECT_FALSE(t.refused_as(table_choice));
  EXPECT_TRUE(t.refused_as({{"candidate", "conv2d.row_bands[band=8,py=4,stages=2,threads=64]"}, {"variant", "conv2d.row_bands"},
                            {"config", {{"band", 8}, {"py", 4}, {"stages", 2}, {"threads", 64}}}}));
  // Another value of the parameter is another kernel; a variant this build lacks keeps its recorded name.
  json two_stages = table_choice;
  two_stages["config"]["stages"] = 2;
  two_stages["candidate"] = candidate_name("conv2d.row_bands", two_stages["config"]);
  EXPECT_EQ(t.time_of(two_stages), nullptr);
  const json plugin = {{"candidate", "mine.kernel[x=1]"}, {"variant", "mine.kernel"}, {"config", {{"x", 1}}}};
  EXPECT_EQ(t.name_of(plugin), "mine.kernel[x=1]");
  // A config its space cannot complete (a required parameter left out) keeps its recorded name.
  const json partial = {{"candidate", "conv2d.row_bands[band=32]"}, {"variant", "conv2d.row_bands"}, {"config", {{"band", 32}}}};
  EXPECT_EQ(t.name_of(partial), "conv2d.row_bands[band=32]");
}

TEST(Dispatch, EntriesCarryTheirNextFastestCandidates) {
  const json table = make_dispatch(kSummary, synthetic_records());
  // 4096 r=7: register_tiled B chosen (0.25); then A (0.3) and cuDNN (0.4); failed candidates never.
  const json& e = entry_for(table, conv2d(4096, 4096, 7).key());
  ASSERT_EQ(e["alternates"].size(), 2u);
  EXPECT_EQ(e["alternates"][0]["candidate"], candidate_name("conv2d.register_tiled", kTiledA));
  EXPECT_EQ(e["alternates"][0]["median_ms"], 0.3);
  EXPECT_EQ(e["alternates"][1]["variant"], "conv2d.cudnn");
  EXPECT_EQ(e["alternates"][1]["config"], kAlgo);
  // 1024 r=1: constant chosen over a faster register_tiled within noise, which stays an alternate.
  const json& tie = entry_for(table, conv2d(1024, 1024, 1).key());
  EXPECT_EQ(tie["alternates"][0]["candidate"], candidate_name("conv2d.register_tiled", kTiledA));
}

TEST(Dispatch, TuningShortlistTakesTheNearestEntriesAndTheirAlternates) {
  const json table = make_dispatch(kSummary, synthetic_records(), false);  // no model: the nearest entries alone
  const std::string tiled_a = candidate_name("conv2d.register_tiled", kTiledA),
                    tiled_b = candidate_name("conv2d.register_tiled", kTiledB),
                    constant = candidate_name("conv2d.constant", kBlock), cudnn = candidate_name("conv2d.cudnn", kAlgo);
  auto names = [&](const Problem& p) {
    std::vector<std::string> out;
    for (const json& c : tuning_shortlist(table, p)) out.push_back(c["candidate"].get<std::string>());
    return out;
  };
  // Exact: the entry's choice alone.
  EXPECT_EQ(names(conv2d(4096, 4096, 7)), std::vector<std::string>{tiled_b});
  // 2048 r=3: the 1024 r=3 entry's choice (cuDNN) and two alternates, then the r=1 and r=7 entries add
  // what is new (register_tiled B); no candidate twice.
  EXPECT_EQ(names(conv2d(2048, 2048, 3)), (std::vector<std::string>{cudnn, tiled_a, constant, tiled_b}));
  // Each element names its variant and config, for the runtime to prepare.
  const json first = tuning_shortlist(table, conv2d(2048, 2048, 3)).front();
  EXPECT_EQ(first["variant"], "conv2d.cudnn");
  EXPECT_EQ(first["config"], kAlgo);
  // A hand-written table: entries without "candidate" or "alternates" still give a shortlist.
  const json bare = {{"schema", 1},
                     {"entries", {{{"family", "conv2d"}, {"problem", conv2d(512, 512, 2).to_json()},
                                   {"variant", "conv2d.constant"}, {"config", kBlock}}}}};
  EXPECT_EQ(tuning_shortlist(bare, conv2d(640, 480, 2)), (std::vector<json>{{{"variant", "conv2d.constant"},
                                                                               {"config", kBlock},
                                                                               {"candidate", constant}}}));
}

TEST(Repeats, EachCandidateKeepsItsSlowestRunAndAFailureAnywhereRulesItOut) {
  const Problem p = conv2d(1024, 1024, 3), only_a = conv2d(512, 512, 1);
  const json kCoarse = {{"block_x", 32}, {"block_y", 4}, {"coarsen", 4}, {"direction", "x"}};
  json brief = record(p, "conv2d.register_tiled", kTiledA, "ok", 0.5, 4);
  brief["fidelity"] = "brief";
  const std::vector<json> a = {record(p, "conv2d.register_tiled", kTiledA, "ok", 0.020, 4),  // its slower run
                               record(p, "conv2d.cudnn", kAlgo, "ok", 0.016, 1, true),
                               record(p, "conv2d.constant", kBlock, "ok", 0.010, 1),
                               record(p, "conv2d.naive", kBlock, "ok", 0.090, 0),
                               record(p, "conv2d.coarsened", kCoarse, "ok", 0.050, 2),
                               record(only_a, "conv2d.naive", kBlock, "ok", 0.004, 0)};
  const std::vector<json> b = {record(p, "conv2d.register_tiled", kTiledA, "ok", 0.019, 4),
                               brief,                                                      // not read
                               record(p, "conv2d.cudnn", kAlgo, "ok", 0.026, 1, true),     // the library moved
                               record(p, "conv2d.constant", kBlock, "wrong_result", 0.010, 1),
                               record(p, "conv2d.coarsened", kCoarse, "ok", 0.060, 2),
                               record(p, "conv2d.coarsened", kCoarse, "runtime_error", 0, 2)};  // resumed: ok stands
  const std::vector<json> both = combine_repeats({&a, &b});
  std::map<std::string, json> by;
  for (const json& r : both) by[r["problem_key"].get<std::string>() + " " + r["candidate"].get<std::string>()] = r;
  const auto at = [&](const Problem& q, const std::string& v, const json& c) -> const json& {
    return by.at(q.key() + " " + candidate_name(v, c));
  };
  ASSERT_EQ(by.size(), 6u);
  EXPECT_DOUBLE_EQ(at(p, "conv2d.cudnn", kAlgo)["time"]["median_ms"].get<double>(), 0.026);
  EXPECT_EQ(at(p, "conv2d.cudnn", kAlgo)["repeats"]["median_ms"], json({0.016, 0.026}));
  EXPECT_DOUBLE_EQ(at(p, "conv2d.register_tiled", kTiledA)["time"]["median_ms"].get<double>(), 0.020);
  EXPECT_EQ(at(p, "conv2d.register_tiled", kTiledA)["repeats"]["median_ms"], json({0.020, 0.019}));
  EXPECT_EQ(at(p, "conv2d.constant", kBlock)["status"], "wrong_result");
  EXPECT_DOUBLE_EQ(at(p, "conv2d.coarsened", kCoarse)["time"]["median_ms"].get<double>(), 0.060);
  // Missing from run b: judged on run a, never dropped for it.
  EXPECT_DOUBLE_EQ(at(p, "conv2d.naive", kBlock)["time"]["median_ms"].get<double>(), 0.090);
  EXPECT_EQ(at(p, "conv2d.naive", kBlock)["repeats"]["runs"], 1);
  EXPECT_DOUBLE_EQ(at(only_a, "conv2d.naive", kBlock)["time"]["median_ms"].get<double>(), 0.004);

  // Run a alone picks the fast-in-a candidate (constant), a and b together the one fast in both.
  const json alone = make_dispatch(kSummary, a), together = make_dispatch(kSummary, both);
  EXPECT_EQ(entry_for(alone, p.key())["variant"], "conv2d.constant");
  EXPECT_FALSE(entry_for(alone, p.key()).contains("repeats"));
  const json& e = entry_for(together, p.key());
  EXPECT_EQ(e["variant"], "conv2d.register_tiled");
  EXPECT_EQ(e["repeats"]["median_ms"], json({0.020, 0.019}));
  EXPECT_EQ(e["runner_up"]["candidate"], candidate_name("conv2d.cudnn", kAlgo));
  // One run read as select_best reads it: combining a run with nothing changes no choice.
  EXPECT_EQ(make_dispatch(kSummary, combine_repeats({&b}))["entries"][0]["candidate"],
            make_dispatch(kSummary, b)["entries"][0]["candidate"]);
}

TEST(Repeats, ExportTakesRepeatsOfTheSameGpuModelOnly) {
  const Problem p = conv2d(1024, 1024, 3);
  auto write_run = [](const fs::path& dir, const json& summary, const std::vector<json>& recs) {
    write_json_atomically(dir / "summary.json", summary);
    std::string lines;
    for (const auto& r : recs) lines += r.dump() + "\n";
    write_file(dir / "records.jsonl", lines);
  };
  TempDir run("_a"), repeat("_b"), other("_c");
  write_run(run.path, kSummary, {record(p, "conv2d.register_tiled", kTiledA, "ok", 0.020, 4),
                                 record(p, "conv2d.cudnn", kAlgo, "ok", 0.016, 1, true)});
  write_run(repeat.path, kSummary, {record(p, "conv2d.register_tiled", kTiledA, "ok", 0.020, 4),
                                    record(p, "conv2d.cudnn", kAlgo, "ok", 0.030, 1, true)});
  json a100 = kSummary;
  a100["device"]["name"] = "NVIDIA A100-SXM4-80GB";
  write_run(other.path, a100, {record(p, "conv2d.cudnn", kAlgo, "ok", 0.016, 1, true)});

  export_run(run.path);
  EXPECT_EQ(entry_for(read_json(run.path / "dispatch.json"), p.key())["variant"], "conv2d.cudnn");
  EXPECT_FALSE(read_json(run.path / "dispatch.json").contains("repeats"));
  export_run(run.path, {repeat.path});
  const json d = read_json(run.path / "dispatch.json");
  EXPECT_EQ(entry_for(d, p.key())["variant"], "conv2d.register_tiled");
  ASSERT_EQ(d["repeats"].size(), 1u);
  EXPECT_EQ(d["repeats"][0]["run"], repeat.path.string());
  EXPECT_EQ(read_file(run.path / "convtune_dispatch.h"), make_header(d));

  // Another GPU model: an error naming the field and the allowed value; the table already written stays.
  try {
    export_run(run.path, {other.path});
    FAIL() << "a repeat on another GPU model must be refused";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("device.name"), std::string::npos) << what;
    EXPECT_NE(what.find("NVIDIA H100 80GB HBM3"), std::string::npos) << what;
  }
  EXPECT_EQ(read_json(run.path / "dispatch.json"), d);
  EXPECT_THROW(export_run(run.path, {run.path}), InputError);  // a run is not its own repeat
  try {
    export_run(run.path, {repeat.path, repeat.path});
    FAIL() << "a repeat given twice would count twice";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("given twice"), std::string::npos) << e.what();
  }
}

TEST(Repeats, AWrongResultInOneRunOutweighsATimeoutInAnother) {
  // The family's safe default avoids a candidate that was ever wrong; over repeats it must still know.
  const Problem p = conv2d(1024, 1024, 3), q = conv2d(512, 512, 3);
  const std::vector<json> a = {record(p, "conv2d.constant", kBlock, "timeout", 0, 1),
                               record(p, "conv2d.naive", kBlock, "ok", 0.030, 0),
                               record(q, "conv2d.constant", kBlock, "ok", 0.004, 1),
                               record(q, "conv2d.naive", kBlock, "ok", 0.008, 0)};
  const std::vector<json> b = {record(p, "conv2d.constant", kBlock, "wrong_result", 0.010, 1),
                               record(p, "conv2d.naive", kBlock, "ok", 0.031, 0)};
  const std::vector<json> both = combine_repeats({&a, &b});
  const auto it = std::find_if(both.begin(), both.end(), [&](const json& r) {
    return r["problem_key"] == p.key() && r["variant"] == "conv2d.constant";
  });
  ASSERT_NE(it, both.end());
  EXPECT_EQ((*it)["status"], "wrong_result");
  EXPECT_EQ(make_dispatch(kSummary, both)["fallback"]["defaults"]["conv2d"]["variant"], "conv2d.naive");
}
