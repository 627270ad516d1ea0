#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "harness/ncu_profile.h"
#include "test_support.h"

using namespace convtune;
using convtune::test::contains;
using convtune::test::input_error;

namespace {

// A real capture: `ncu -i rep.ncu-rep --csv --page raw --print-units base` on an H100, three kernels,
// each inside the NVTX ranges "<candidate> @ <problem>" / "timed" of domain "convtune".
std::string fixture_text() {
  const auto path = std::filesystem::path(CONVTUNE_SOURCE_DIR) / "tests/fixtures/ncu/probe_raw.csv";
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::vector<NcuKernel>& fixture() {
  static const std::vector<NcuKernel> kernels = parse_ncu_raw_csv(fixture_text());
  return kernels;
}

// The fixture's durations (ns): the weights of its means.
constexpr double kD0 = 183680, kD1 = 183264, kD2 = 185024, kTotal = kD0 + kD1 + kD2;
double weighted(double v0, double v1, double v2) { return (v0 * kD0 + v1 * kD1 + v2 * kD2) / kTotal; }

// One CSV line with every field quoted, as ncu writes it.
std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (const auto& f : fields) {
    std::string quoted;
    for (char c : f) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    line += (line.empty() ? "\"" : ",\"") + quoted + "\"";
  }
  return line + "\n";
}

const std::string kHeader =
    csv_line({"ID", "Kernel Name", "Grid Size", "Block Size", "dram__bytes_read.sum", "gpu__time_duration.sum"});
const std::string kUnits = csv_line({"", "", "", "", "byte", "ns"});

NcuKernel kernel_with(std::map<std::string, double> metrics) {
  NcuKernel k;
  k.metrics = std::move(metrics);
  return k;
}

const std::string kLongScoreboard = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio";
const std::string kWait = "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio";
const std::string kSelected = "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio";

}  // namespace

// ---- Parsing ----

TEST(NcuProfile, ParsesTheRealCaptureKernelsAndLaunches) {
  const auto& k = fixture();
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0].id, 0);
  EXPECT_EQ(k[2].id, 2);
  EXPECT_EQ(k[0].name, "copyk(const float4 *, float4 *, unsigned long)");
  EXPECT_EQ(k[2].name, "scalek(float4 *, unsigned long)");
  EXPECT_EQ(k[0].grid, "(1024, 1, 1)");
  EXPECT_EQ(k[0].block, "(256, 1, 1)");
}

TEST(NcuProfile, ParsesTheNvtxStackOutermostFirst) {
  const auto& k = fixture();
  ASSERT_EQ(k.size(), 3u);
  ASSERT_EQ(k[0].nvtx.size(), 2u);
  EXPECT_EQ(k[0].nvtx[0].first, "convtune");
  EXPECT_EQ(k[0].nvtx[0].second, "conv2d.tiled[tile_x=32,tile_y=8] @ conv2d:h=8192,w=8192,r=3");
  EXPECT_EQ(k[0].nvtx[1].first, "convtune");
  EXPECT_EQ(k[0].nvtx[1].second, "timed");
  ASSERT_EQ(k[1].nvtx.size(), 2u);
  EXPECT_EQ(k[1].nvtx[0].second, "cudnn.fwd[algo=fft] @ conv2d:h=8192,w=8192,r=3");
}

TEST(NcuProfile, ReadsNumbersWithThousandsSeparatorsAndLeavesNoDataOut) {
  const auto& k = fixture();
  ASSERT_EQ(k.size(), 3u);
  EXPECT_DOUBLE_EQ(k[0].metrics.at("dram__bytes_read.sum"), 268454400);
  EXPECT_DOUBLE_EQ(k[0].metrics.at("sm__cycles_elapsed.avg.per_second"), 1973698906.53);
  EXPECT_DOUBLE_EQ(k[2].metrics.at("l1tex__t_sector_hit_rate.pct"), 43.0);
  EXPECT_DOUBLE_EQ(k[0].metrics.at("launch__grid_size"), 1024);
  // "no data" and empty cells are absent, never 0.
  EXPECT_EQ(k[0].metrics.count("sass__inst_executed_register_spilling_mem_local"), 0u);
  EXPECT_EQ(k[0].metrics.count("derived__local_spilling_requests_pct"), 0u);
  EXPECT_EQ(k[0].metrics.count("launch__kernel_name"), 0u);
  // Names are not metrics, and neither are the columns that describe the launch.
  EXPECT_EQ(k[0].metrics.count("device__attribute_display_name"), 0u);
  EXPECT_EQ(k[0].metrics.count("ID"), 0u);
  EXPECT_EQ(k[0].metrics.count("CC"), 0u);
}

TEST(NcuProfile, TheRealCaptureHasEveryMetricWeAskFor) {
  const auto& k = fixture();
  ASSERT_FALSE(k.empty());
  for (const auto& name : ncu_metrics())
    if (name.rfind("regex:", 0) != 0) EXPECT_EQ(k[0].metrics.count(name), 1u) << name;
}

TEST(NcuProfile, SkipsLogLinesAndReadsCrlfAndEscapedQuotes) {
  std::string text = "==PROF== Connected to process 775\n" + kHeader + kUnits +
                     csv_line({"7", "k<\"x\">(int)", "(2, 1, 1)", "(64, 1, 1)", "1,024", "2,000"});
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const auto k = parse_ncu_raw_csv(crlf);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].id, 7);
  EXPECT_EQ(k[0].name, "k<\"x\">(int)");
  EXPECT_EQ(k[0].block, "(64, 1, 1)");
  EXPECT_DOUBLE_EQ(k[0].metrics.at("dram__bytes_read.sum"), 1024);
  EXPECT_TRUE(k[0].nvtx.empty());
}

TEST(NcuProfile, AHeaderWithoutKernelsIsNoKernelsNotAnError) {
  EXPECT_TRUE(parse_ncu_raw_csv(kHeader).empty());
  EXPECT_TRUE(parse_ncu_raw_csv(kHeader + kUnits).empty());
}

TEST(NcuProfile, RowsWithoutAUnitsRowAreKernels) {
  const auto k = parse_ncu_raw_csv(kHeader + csv_line({"3", "k", "", "", "5", "6"}));
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].id, 3);
  EXPECT_DOUBLE_EQ(k[0].metrics.at("gpu__time_duration.sum"), 6);
}

TEST(NcuProfile, MalformedOutputIsAnInputErrorSayingWhat) {
  std::string e = input_error([] { parse_ncu_raw_csv(""); });
  EXPECT_TRUE(contains(e, "ncu output")) << e;
  EXPECT_TRUE(contains(e, "empty")) << e;

  e = input_error([] { parse_ncu_raw_csv(kHeader + kUnits + csv_line({"0", "k", "", "", "1"})); });
  EXPECT_TRUE(contains(e, "row 3 has 5 fields, the header has 6")) << e;

  e = input_error([] { parse_ncu_raw_csv(kHeader + kUnits + "\"0\",\"copyk(int)\n"); });
  EXPECT_TRUE(contains(e, "unterminated quote in row 3")) << e;

  e = input_error([] { parse_ncu_raw_csv(kHeader + kUnits + "\"0\"x,\"k\",\"\",\"\",\"1\",\"2\"\n"); });
  EXPECT_TRUE(contains(e, "text after a closing quote in row 3")) << e;

  e = input_error([] { parse_ncu_raw_csv(csv_line({"ID", "Name"}) + csv_line({"0", "k"})); });
  EXPECT_TRUE(contains(e, "\"Kernel Name\" column")) << e;

  e = input_error([] { parse_ncu_raw_csv(kHeader + kUnits + csv_line({"first", "k", "", "", "1", "2"})); });
  EXPECT_TRUE(contains(e, "row 3: ID 'first'")) << e;
}

TEST(NcuProfile, ScaledUnitsAreRefusedNotMisread) {
  const std::string e = input_error(
      [] { parse_ncu_raw_csv(kHeader + csv_line({"", "", "", "", "byte", "usecond"}) + csv_line({"0", "k", "", "", "1", "2"})); });
  EXPECT_TRUE(contains(e, "gpu__time_duration.sum is in 'usecond'")) << e;
  EXPECT_TRUE(contains(e, "--print-units base")) << e;
  const std::string bytes = input_error([] { parse_ncu_raw_csv(kHeader + csv_line({"", "", "", "", "Mbyte", "ns"})); });
  EXPECT_TRUE(contains(bytes, "dram__bytes_read.sum is in 'Mbyte'")) << bytes;
}

// ---- The metrics we ask for ----

TEST(NcuProfile, AsksNcuForEachCounterOnceWithTheStallRegex) {
  const auto& m = ncu_metrics();
  const std::set<std::string> unique(m.begin(), m.end());
  EXPECT_EQ(unique.size(), m.size());
  for (const char* name :
       {"dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct", "l1tex__t_sector_hit_rate.pct",
        "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "l1tex__throughput.avg.pct_of_peak_sustained_active", "sm__inst_issued.avg.pct_of_peak_sustained_active",
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
        "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
        "sass__inst_executed_register_spilling", "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second",
        "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio"})
    EXPECT_EQ(unique.count(name), 1u) << name;
  EXPECT_EQ(m.size(), 21u);
}

TEST(NcuProfile, EveryCounterWeAskForReachesTheAggregate) {
  std::map<std::string, double> all;
  for (const auto& name : ncu_metrics())
    if (name.rfind("regex:", 0) != 0) all[name] = 50;
  all[kLongScoreboard] = 3;
  const json m = aggregate_kernels({kernel_with(all)});
  for (const char* key :
       {"kernels", "duration_ms", "dram_read_bytes", "dram_write_bytes", "dram_bytes", "local_spill_bytes",
        "spill_instructions", "registers_per_thread", "l2_hit_pct", "l1_hit_pct", "achieved_occupancy_pct",
        "theoretical_occupancy_pct", "sm_throughput_pct", "memory_throughput_pct", "dram_throughput_pct",
        "l2_throughput_pct", "l1_throughput_pct", "issue_active_pct", "fma_pipe_pct", "tensor_pipe_pct",
        "sm_clock_mhz", "stalls"})
    EXPECT_TRUE(m.contains(key)) << key;
  EXPECT_EQ(m.size(), 22u) << m.dump();
}

// ---- Aggregation ----

TEST(NcuProfile, AggregateSumsTheRealCapture) {
  const json m = aggregate_kernels(fixture());
  EXPECT_EQ(m["kernels"], 3);
  EXPECT_DOUBLE_EQ(m["duration_ms"].get<double>(), 0.551968);
  EXPECT_DOUBLE_EQ(m["dram_read_bytes"].get<double>(), 268454400.0 + 268443648 + 268447488);
  EXPECT_DOUBLE_EQ(m["dram_write_bytes"].get<double>(), 250157056.0 + 250137600 + 246663936);
  EXPECT_DOUBLE_EQ(m["dram_bytes"].get<double>(), 805345536.0 + 746958592);
  EXPECT_DOUBLE_EQ(m["local_spill_bytes"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(m["spill_instructions"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(m["registers_per_thread"].get<double>(), 16);
}

TEST(NcuProfile, AggregateWeighsMeansByDuration) {
  const json m = aggregate_kernels(fixture());
  EXPECT_NEAR(m["l2_hit_pct"].get<double>(), weighted(51.68, 51.60, 50.60), 1e-9);
  EXPECT_NEAR(m["l1_hit_pct"].get<double>(), weighted(0, 0, 43.00), 1e-9);
  EXPECT_NEAR(m["achieved_occupancy_pct"].get<double>(), weighted(93.53, 93.41, 94.05), 1e-9);
  EXPECT_NEAR(m["theoretical_occupancy_pct"].get<double>(), 100, 1e-9);
  EXPECT_NEAR(m["dram_throughput_pct"].get<double>(), weighted(84.24, 84.43, 83.06), 1e-9);
  EXPECT_NEAR(m["l2_throughput_pct"].get<double>(), weighted(76.61, 76.83, 72.26), 1e-9);
  EXPECT_NEAR(m["fma_pipe_pct"].get<double>(), weighted(0.59, 0.59, 1.17), 1e-9);
  EXPECT_NEAR(m["tensor_pipe_pct"].get<double>(), 0, 1e-12);
  EXPECT_NEAR(m["sm_clock_mhz"].get<double>(), weighted(1973.69890653, 1978.01763708, 1980.95234820), 1e-6);
  // An unweighted mean would differ: l1_hit_pct's would be 14.333.
  EXPECT_GT(std::abs(m["l1_hit_pct"].get<double>() - 43.0 / 3), 0.01);
}

TEST(NcuProfile, AggregateNamesTheTopThreeStallsWithoutSelected) {
  const json m = aggregate_kernels(fixture());
  ASSERT_TRUE(m.contains("stalls"));
  const json& s = m["stalls"];
  ASSERT_EQ(s.size(), 3u) << s.dump();
  EXPECT_EQ(s[0]["reason"], "long_scoreboard");
  EXPECT_EQ(s[1]["reason"], "wait");  // "selected" (1.00) would come second
  EXPECT_EQ(s[2]["reason"], "no_instruction");
  const double long_scoreboard = weighted(381.34, 381.05, 419.57);
  EXPECT_NEAR(s[0]["cycles_per_issue"].get<double>(), long_scoreboard, 1e-9);
  EXPECT_NEAR(s[1]["cycles_per_issue"].get<double>(), weighted(2.75, 2.75, 2.33), 1e-9);
  // Share of the sum over every stall reason but selected, by hand from the fixture's stall columns.
  const double others = weighted(0.23, 0.23, 0.25) + weighted(0.03, 0.03, 0.05) + weighted(0.18, 0.20, 0.20) +
                        weighted(0.01, 0.01, 0.01) + weighted(0.09, 0.09, 0.06) + weighted(0.14, 0.14, 0.15) +
                        weighted(0.44, 0.45, 0.43) + weighted(0.17, 0.17, 0.15) + weighted(0.04, 0.04, 0.04) +
                        weighted(2.75, 2.75, 2.33);
  EXPECT_NEAR(s[0]["share"].get<double>(), long_scoreboard / (long_scoreboard + others), 1e-9);
  EXPECT_GT(s[0]["share"].get<double>(), 0.98);
}

TEST(NcuProfile, AggregateLeavesOutWhatAKernelLacks) {
  // The second kernel has no write counter and no duration: no partial sums, equal weights.
  const NcuKernel a = kernel_with({{"dram__bytes_read.sum", 100},
                                   {"dram__bytes_write.sum", 40},
                                   {"gpu__time_duration.sum", 3000},
                                   {"lts__t_sector_hit_rate.pct", 80}});
  const NcuKernel b = kernel_with({{"dram__bytes_read.sum", 200}, {"lts__t_sector_hit_rate.pct", 40}});
  const json m = aggregate_kernels({a, b});
  EXPECT_EQ(m["kernels"], 2);
  EXPECT_DOUBLE_EQ(m["dram_read_bytes"].get<double>(), 300);
  for (const char* key : {"dram_write_bytes", "dram_bytes", "duration_ms", "local_spill_bytes", "tensor_pipe_pct",
                          "registers_per_thread", "stalls", "sm_clock_mhz"})
    EXPECT_FALSE(m.contains(key)) << key;
  EXPECT_DOUBLE_EQ(m["l2_hit_pct"].get<double>(), 60);
}

TEST(NcuProfile, AggregateOfNoKernelsIsJustTheCount) {
  const json m = aggregate_kernels({});
  EXPECT_EQ(m, json({{"kernels", 0}}));
}

TEST(NcuProfile, StallsAreLeftOutWhenNoReasonHasCycles) {
  const json m = aggregate_kernels({kernel_with({{kLongScoreboard, 0}, {kWait, 0}, {kSelected, 1}})});
  EXPECT_FALSE(m.contains("stalls")) << m.dump();
  const json one = aggregate_kernels({kernel_with({{kWait, 2}, {kLongScoreboard, 0}, {kSelected, 1}})});
  ASSERT_EQ(one["stalls"].size(), 1u) << one.dump();
  EXPECT_EQ(one["stalls"][0]["reason"], "wait");
  EXPECT_DOUBLE_EQ(one["stalls"][0]["share"].get<double>(), 1.0);
}

TEST(NcuProfile, KernelJsonSummarisesOneLaunch) {
  const auto& k = fixture();
  ASSERT_EQ(k.size(), 3u);
  const json j = kernel_json(k[2]);
  EXPECT_EQ(j["id"], 2);
  EXPECT_EQ(j["name"], "scalek(float4 *, unsigned long)");
  EXPECT_EQ(j["grid"], "(1024, 1, 1)");
  EXPECT_EQ(j["block"], "(256, 1, 1)");
  EXPECT_FALSE(j.contains("kernels"));
  EXPECT_DOUBLE_EQ(j["duration_ms"].get<double>(), 0.185024);
  EXPECT_DOUBLE_EQ(j["l1_hit_pct"].get<double>(), 43.0);
  EXPECT_DOUBLE_EQ(j["dram_bytes"].get<double>(), 268447488.0 + 246663936);
  EXPECT_EQ(j["stalls"][0]["reason"], "long_scoreboard");
  EXPECT_DOUBLE_EQ(j["stalls"][0]["cycles_per_issue"].get<double>(), 419.57);
}

// ---- Limiter ----

TEST(NcuProfile, LimiterOfTheRealCaptureIsDram) {
  const Limiter l = find_limiter(aggregate_kernels(fixture()));
  EXPECT_EQ(l.kind, "memory");
  EXPECT_EQ(l.text, "memory-bound at 84% of DRAM peak");
}

TEST(NcuProfile, LimiterNamesTheBusiestUnit) {
  struct Case {
    json metrics;
    std::string kind, text;
  };
  const std::vector<Case> cases = {
      {{{"dram_throughput_pct", 84.4}, {"l2_throughput_pct", 71}, {"fma_pipe_pct", 20}},
       "memory",
       "memory-bound at 84% of DRAM peak"},
      {{{"dram_throughput_pct", 40}, {"l2_throughput_pct", 71.2}, {"issue_active_pct", 30}},
       "memory",
       "L2-bound at 71% of L2 peak"},
      {{{"dram_throughput_pct", 30}, {"l1_throughput_pct", 65.6}}, "memory", "L1/shared-bound at 66% of peak"},
      {{{"dram_throughput_pct", 10}, {"fma_pipe_pct", 78}, {"issue_active_pct", 70}},
       "compute",
       "FMA-bound at 78% of the FMA pipe"},
      {{{"fma_pipe_pct", 5}, {"tensor_pipe_pct", 70.4}}, "compute", "tensor-bound at 70% of the tensor pipe"},
      {{{"issue_active_pct", 81}, {"fma_pipe_pct", 60.5}, {"l2_throughput_pct", 12}},
       "compute",
       "issue-bound at 81% of issue slots"},
  };
  for (const auto& c : cases) {
    const Limiter l = find_limiter(c.metrics);
    EXPECT_EQ(l.kind, c.kind) << c.metrics.dump();
    EXPECT_EQ(l.text, c.text) << c.metrics.dump();
  }
}

TEST(NcuProfile, LimiterBelowSixtyPercentIsLatency) {
  const json stalls = json::array({{{"reason", "long_scoreboard"}, {"cycles_per_issue", 20.0}, {"share", 0.8}},
                                   {{"reason", "wait"}, {"cycles_per_issue", 5.0}, {"share", 0.2}}});
  json m = {{"dram_throughput_pct", 20}, {"issue_active_pct", 10}, {"achieved_occupancy_pct", 12.4}};
  Limiter l = find_limiter(m);
  EXPECT_EQ(l.kind, "latency");
  EXPECT_EQ(l.text, "latency: 12% occupancy");
  m["stalls"] = stalls;
  l = find_limiter(m);
  EXPECT_EQ(l.kind, "latency");
  EXPECT_EQ(l.text, "latency: 12% occupancy, long scoreboard");
  m.erase("achieved_occupancy_pct");
  EXPECT_EQ(find_limiter(m).text, "latency: long scoreboard");
}

TEST(NcuProfile, LimiterThresholdIsSixtyPercentInclusive) {
  const Limiter at = find_limiter({{"dram_throughput_pct", 60.0}, {"achieved_occupancy_pct", 50}});
  EXPECT_EQ(at.kind, "memory");
  EXPECT_EQ(at.text, "memory-bound at 60% of DRAM peak");
  const Limiter below = find_limiter({{"dram_throughput_pct", 59.9}, {"achieved_occupancy_pct", 50}});
  EXPECT_EQ(below.kind, "latency");
  EXPECT_EQ(below.text, "latency: 50% occupancy");
}

TEST(NcuProfile, LimiterWithoutUtilisationsIsUnknown) {
  const Limiter l = find_limiter({{"achieved_occupancy_pct", 50}, {"dram_bytes", 10}});
  EXPECT_EQ(l.kind, "");
  EXPECT_EQ(l.text, "");
}

// ---- Derived ----

TEST(NcuProfile, DeriveComparesMeasuredBytesWithTheModel) {
  const json d = derive({{"dram_bytes", 1e9}, {"dram_throughput_pct", 84.4}}, 2e9, 5e8);
  EXPECT_DOUBLE_EQ(d["bytes_measured"].get<double>(), 1e9);
  EXPECT_DOUBLE_EQ(d["intensity_measured"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(d["bytes_model_over_measured"].get<double>(), 0.5);
  EXPECT_EQ(d["limiter"], "memory-bound at 84% of DRAM peak");
  EXPECT_EQ(d["limiter_kind"], "memory");
}

TEST(NcuProfile, DeriveOfTheRealCapture) {
  const json m = aggregate_kernels(fixture());
  const double bytes = 805345536.0 + 746958592;
  const json d = derive(m, 3.0e9, 3.0 * 512 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(d["bytes_measured"].get<double>(), bytes);
  EXPECT_DOUBLE_EQ(d["intensity_measured"].get<double>(), 3.0e9 / bytes);
  EXPECT_DOUBLE_EQ(d["bytes_model_over_measured"].get<double>(), 3.0 * 512 * 1024 * 1024 / bytes);
  EXPECT_EQ(d["limiter_kind"], "memory");
}

TEST(NcuProfile, DeriveLeavesOutRatiosItCannotForm) {
  const json zero = derive({{"dram_bytes", 0.0}}, 2e9, 5e8);
  EXPECT_DOUBLE_EQ(zero["bytes_measured"].get<double>(), 0);
  EXPECT_FALSE(zero.contains("intensity_measured"));
  EXPECT_FALSE(zero.contains("bytes_model_over_measured"));
  EXPECT_FALSE(zero.contains("limiter"));
  EXPECT_FALSE(zero.contains("limiter_kind"));

  const json missing = derive({{"dram_throughput_pct", 10}}, 2e9, 5e8);
  EXPECT_FALSE(missing.contains("bytes_measured"));
  EXPECT_FALSE(missing.contains("intensity_measured"));
  EXPECT_FALSE(missing.contains("bytes_model_over_measured"));
  EXPECT_EQ(missing["limiter_kind"], "latency");

  const json unknown_model = derive({{"dram_bytes", 1e9}}, 0, 0);
  EXPECT_DOUBLE_EQ(unknown_model["bytes_measured"].get<double>(), 1e9);
  EXPECT_FALSE(unknown_model.contains("intensity_measured"));
  EXPECT_FALSE(unknown_model.contains("bytes_model_over_measured"));
}
