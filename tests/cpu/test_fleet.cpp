// Fleet dispatch tables without a GPU: one table per GPU model, the table rule (exact model, same
// architecture, default), the header's select() against lookup_on_device(), and export from shipped runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/error.h"
#include "harness/fleet.h"
#include "harness/json_file.h"
#include "harness/records.h"
#include "test_support.h"

using namespace convtune;
namespace fs = std::filesystem;

namespace {

const fs::path kH100Run = fs::path(CONVTUNE_SOURCE_DIR) / "results/nvidia-h100-80gb-hbm3/conv2d-register-tiled-20261123-161324";

// The table of a shipped run, relabelled as if measured on `name` (compute capability `cc`), with every
// entry's candidate and time marked so that which table answered is visible.
json table_as(const std::string& name, const std::string& cc, const std::string& mark) {
  json t = make_dispatch(read_json(kH100Run / "summary.json"), read_records(kH100Run / "records.jsonl").records, false);
  t["device"]["name"] = name;
  t["device"]["compute_capability"] = cc;
  for (auto& e : t["entries"]) e["candidate"] = e["candidate"].get<std::string>() + mark;
  t["source"] = {{"run", "runs/" + name}};
  return t;
}

json fleet() { return make_fleet({table_as("NVIDIA H100 80GB HBM3", "9.0", " #h100"), table_as("NVIDIA A100-SXM4-80GB", "8.0", " #a100")}); }

Problem conv2d(int64_t h, int64_t r) { return Problem::from_json({{"family", "conv2d"}, {"h", h}, {"w", h}, {"r", r}}); }


}  // namespace

TEST(Fleet, PicksTheExactModelThenTheArchitectureThenTheDefaults) {
  const json f = fleet();
  const Problem p = conv2d(8192, 3);
  const DeviceLookup h100 = lookup_on_device(f, "NVIDIA H100 80GB HBM3", "9.0", p);
  EXPECT_EQ(h100.table_rule, "exact model");
  EXPECT_EQ(h100.lookup.rule, "exact");
  EXPECT_NE(h100.lookup.entry["candidate"].get<std::string>().find("#h100"), std::string::npos);
  const DeviceLookup a100 = lookup_on_device(f, "NVIDIA A100-SXM4-80GB", "8.0", p);
  EXPECT_NE(a100.lookup.entry["candidate"].get<std::string>().find("#a100"), std::string::npos);
  const DeviceLookup h200 = lookup_on_device(f, "NVIDIA H200", "9.0", p);
  EXPECT_EQ(h200.table_rule, "same architecture");
  EXPECT_EQ(h200.table_device, "NVIDIA H100 80GB HBM3");
  const DeviceLookup l4 = lookup_on_device(f, "NVIDIA L4", "8.9", p);
  EXPECT_EQ(l4.table_rule, "default");
  EXPECT_EQ(l4.lookup.rule, "default");
  // A single-device table answers every GPU as it always did.
  const json single = table_as("NVIDIA H100 80GB HBM3", "9.0", "");
  EXPECT_EQ(lookup_on_device(single, "NVIDIA L4", "8.9", p).table_rule, "single table");
  EXPECT_EQ(lookup_on_device(single, "NVIDIA L4", "8.9", p).lookup.rule, "exact");
}

// A family one model's run did not sweep (the H100's default runs before conv2d_separable joined the spec)
// comes from a table of the same architecture that has it, not the family's simplest kernel; the others
// stay with the model's own table, and the header agrees (HeaderCompilesAloneAndAgreesWithLookupOnDevice).
TEST(Fleet, AFamilyTheModelsTableLacksComesFromTheSameArchitecture) {
  json h100 = table_as("NVIDIA H100 80GB HBM3", "9.0", " #h100"), h200 = table_as("NVIDIA H200", "9.0", " #h200");
  h200["entries"].push_back({{"family", "conv2d_separable"},
                             {"problem", {{"family", "conv2d_separable"}, {"h", 2048}, {"w", 2048}, {"r", 3}}},
                             {"variant", "conv2d_separable.fused"},
                             {"config", {{"block_x", 64}, {"block_y", 8}, {"px", 4}, {"py", 4}}},
                             {"candidate", "conv2d_separable.fused[block_x=64,block_y=8,px=4,py=4] #h200"},
                             {"median_ms", 0.018}});
  const json f = make_fleet({h100, h200});
  const Problem sep = Problem::from_json({{"family", "conv2d_separable"}, {"h", 2048}, {"w", 2048}, {"r", 3}});
  const DeviceLookup on_h100 = lookup_on_device(f, "NVIDIA H100 80GB HBM3", "9.0", sep);
  EXPECT_EQ(on_h100.table_rule, "same architecture");
  EXPECT_EQ(on_h100.table_device, "NVIDIA H200");
  EXPECT_EQ(on_h100.lookup.rule, "exact");
  EXPECT_EQ(on_h100.lookup.entry["candidate"], "conv2d_separable.fused[block_x=64,block_y=8,px=4,py=4] #h200");
  const DeviceLookup conv = lookup_on_device(f, "NVIDIA H100 80GB HBM3", "9.0", conv2d(8192, 3));
  EXPECT_EQ(conv.table_rule, "exact model");
  EXPECT_NE(conv.lookup.entry["candidate"].get<std::string>().find("#h100"), std::string::npos);
  // On another architecture no table applies, and the first table's defaults have no conv2d_separable: an
  // InputError, as before (the runtime then takes the family's simplest kernel).
  EXPECT_THROW(lookup_on_device(f, "NVIDIA L4", "8.9", sep), InputError);
  // The header an application compiles picks alike.
  if (std::system("command -v c++ > /dev/null 2>&1") != 0) GTEST_SKIP() << "no c++ on PATH";
  const fs::path dir = test::fresh_temp_dir("fleet-family");
  std::ofstream(dir / "convtune_dispatch.h") << make_fleet_header(f);
  std::ofstream(dir / "main.cpp")
      << "#include <cstdio>\n#include \"convtune_dispatch.h\"\nint main() {\n"
         "  const int64_t d[3] = {2048, 2048, 3};\n"
         "  const auto c = convtune_dispatch::select(\"NVIDIA H100 80GB HBM3\", \"9.0\", \"conv2d_separable\", d, 3);\n"
         "  std::printf(\"%s|%s\", c.table_rule, c.choice.entry ? c.choice.entry->candidate : \"-\");\n}\n";
  const std::string d = dir.string();
  ASSERT_EQ(std::system(("c++ -std=c++17 -O1 -o " + d + "/prog " + d + "/main.cpp && " + d + "/prog > " + d + "/out.txt").c_str()), 0);
  std::stringstream out;
  out << std::ifstream(dir / "out.txt").rdbuf();
  EXPECT_EQ(out.str(), "same architecture|conv2d_separable.fused[block_x=64,block_y=8,px=4,py=4] #h200");
  fs::remove_all(dir);
}

TEST(Fleet, RefusesTwoRunsOfOneModelNamingTheField) {
  try {
    make_fleet({table_as("NVIDIA H100 80GB HBM3", "9.0", ""), table_as("NVIDIA H100 80GB HBM3", "9.0", "")});
    FAIL() << "two tables of one model were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("device.name"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("one run per GPU model"), std::string::npos) << e.what();
  }
}

TEST(Fleet, HeaderCompilesAloneAndAgreesWithLookupOnDevice) {
  if (std::system("command -v c++ > /dev/null 2>&1") != 0) GTEST_SKIP() << "no c++ on PATH";
  const fs::path dir = test::fresh_temp_dir("fleet-header");
  const json f = fleet();
  std::ofstream(dir / "convtune_dispatch.h") << make_fleet_header(f);
  const std::vector<std::pair<std::string, std::string>> gpus = {
      {"NVIDIA H100 80GB HBM3", "9.0"}, {"NVIDIA A100-SXM4-80GB", "8.0"}, {"NVIDIA H200", "9.0"}, {"NVIDIA L4", "8.9"}};
  const std::vector<std::pair<int, int>> shapes = {{8192, 3}, {8192, 15}, {3000, 6}, {2048, 1}};
  std::string prog = "#include <cstdio>\n#include \"convtune_dispatch.h\"\nint main() {\n  using namespace convtune_dispatch;\n";
  std::string expected;
  for (const auto& [name, cc] : gpus)
    for (const auto& [h, r] : shapes) {
      prog += "  { const int64_t d[3] = {" + std::to_string(h) + ", " + std::to_string(h) + ", " + std::to_string(r) +
              "}; const FleetChoice c = select(\"" + name + "\", \"" + cc + "\", \"conv2d\", d, 3);\n"
              "    std::printf(\"%s|%s|%s\\n\", c.table_rule, c.choice.rule, c.choice.entry ? c.choice.entry->candidate : \"-\"); }\n";
      const DeviceLookup l = lookup_on_device(f, name, cc, conv2d(h, r));
      expected += l.table_rule + "|" + l.lookup.rule + "|" + l.lookup.entry["candidate"].get<std::string>() + "\n";
    }
  prog += "}\n";
  std::ofstream(dir / "main.cpp") << prog;
  const std::string d = dir.string();
  ASSERT_EQ(std::system(("c++ -std=c++17 -Wall -Wextra -Werror -O1 -o " + d + "/prog " + d + "/main.cpp && " + d +
                         "/prog > " + d + "/out.txt").c_str()),
            0);
  std::stringstream out;
  out << std::ifstream(dir / "out.txt").rdbuf();
  EXPECT_EQ(out.str(), expected);
  fs::remove_all(dir);
}

TEST(Fleet, ExportsShippedRunsOfTwoModelsAndRefusesTheSameModelTwice) {
  const fs::path dir = test::fresh_temp_dir("fleet-export");
  // The shipped H100 run, and the same records as an H200 run would have written them.
  fs::create_directories(dir / "h200");
  json summary = read_json(kH100Run / "summary.json");
  summary["device"]["name"] = "NVIDIA H200";
  write_json_atomically(dir / "h200/summary.json", summary);
  const fs::path records = stored_records_file(kH100Run / "records.jsonl");  // plain, or .gz once packed
  fs::copy_file(records, dir / "h200" / records.filename());
  export_fleet({kH100Run, dir / "h200"}, dir / "fleet");
  const json f = read_json(dir / "fleet/dispatch.json");
  ASSERT_TRUE(is_fleet(f));
  ASSERT_EQ(f["tables"].size(), 2u);
  EXPECT_EQ(f["tables"][1]["device"]["name"], "NVIDIA H200");
  EXPECT_EQ(f["tables"][0]["source"]["run"], kH100Run.string());
  EXPECT_TRUE(fs::exists(dir / "fleet/convtune_dispatch.h"));
  EXPECT_THROW(export_fleet({kH100Run, kH100Run}, dir / "twice"), InputError);
  // -o a run's folder (its own dispatch.json would become the fleet's) or a file: refused, nothing written.
  const std::string into_run = test::input_error([&] { export_fleet({kH100Run, dir / "h200"}, dir / "h200"); });
  EXPECT_TRUE(test::contains(into_run, "export: -o " + (dir / "h200").string() + " holds a run")) << into_run;
  EXPECT_FALSE(fs::exists(dir / "h200/dispatch.json"));
  std::ofstream(dir / "table.json") << "{}";
  const std::string into_file = test::input_error([&] { export_fleet({kH100Run, dir / "h200"}, dir / "table.json"); });
  EXPECT_TRUE(test::contains(into_file, "is a file; allowed: a folder")) << into_file;
  EXPECT_EQ(test::read_text(dir / "table.json"), "{}");
  fs::remove_all(dir);
}

TEST(Fleet, RepeatsJoinTheRunOfTheirModel) {
  const fs::path dir = test::fresh_temp_dir("fleet-repeats");
  const json summary = read_json(kH100Run / "summary.json");
  const std::vector<json> records = read_records(kH100Run / "records.jsonl").records;
  const json h100 = make_dispatch(summary, records);
  const json& first = h100["entries"][0];
  // An H100 repeat where the first shape's chosen candidate ran at 10x its time, and an H200 run.
  std::vector<json> slower = records;
  for (json& r : slower)
    if (r["problem_key"] == first["problem_key"] && r["candidate"] == first["candidate"] && r.contains("time"))
      r["time"]["median_ms"] = 10 * r["time"]["median_ms"].get<double>();
  auto write_run = [&](const fs::path& d, const std::string& name, const std::vector<json>& recs) {
    fs::create_directories(d);
    json s = summary;
    s["device"]["name"] = name;
    write_json_atomically(d / "summary.json", s);
    std::string lines;
    for (const json& r : recs) lines += r.dump() + "\n";
    std::ofstream(d / "records.jsonl") << lines;
  };
  write_run(dir / "h100b", summary["device"]["name"], slower);
  write_run(dir / "h200", "NVIDIA H200", records);
  write_run(dir / "a100", "NVIDIA A100-SXM4-80GB", records);

  export_fleet({kH100Run, dir / "h200"}, dir / "fleet", {dir / "h100b"});
  const json f = read_json(dir / "fleet/dispatch.json");
  ASSERT_EQ(f["tables"].size(), 2u);
  const json& t = f["tables"][0];
  ASSERT_EQ(t["repeats"].size(), 1u);
  EXPECT_EQ(t["repeats"][0]["run"], (dir / "h100b").string());
  EXPECT_FALSE(f["tables"][1].contains("repeats"));
  int found = 0;
  for (const json& e : t["entries"])
    if (e["problem_key"] == first["problem_key"]) {
      ++found;
      EXPECT_NE(e["candidate"], first["candidate"]) << "slow in the repeat: no longer the choice";
    }
  EXPECT_EQ(found, 1);
  // A repeat of a model no run has: refused, naming the field and the models there are.
  try {
    export_fleet({kH100Run, dir / "h200"}, dir / "fleet2", {dir / "a100"});
    FAIL() << "a repeat of a model no run has must be refused";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("device.name"), std::string::npos) << what;
    EXPECT_NE(what.find("NVIDIA H200"), std::string::npos) << what;
    // fleet.cpp:58 (seed 14): the message says what is allowed, not only the list
    EXPECT_NE(what.find("allowed: the GPU models of the runs"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(dir / "fleet2/dispatch.json"));
  fs::remove_all(dir);
}
