// Hardware counters from Nsight Compute, the part that needs no GPU: the metrics `convtune profile` asks
// ncu for, a parser for `ncu --csv --page raw --print-units base` output, the aggregate over the kernels of
// one candidate run, figures derived from it, and the resource that limits the candidate.
//
// A counter may be missing on another GPU or ncu version: every field below is left out when its inputs
// are absent, never reported as 0.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

// One profiled kernel launch (one row of ncu's raw page).
struct NcuKernel {
  int id = 0;         // ncu's launch ID
  std::string name;   // demangled kernel name
  std::string grid;   // "(1024, 1, 1)"
  std::string block;  // "(256, 1, 1)"
  // The NVTX push/pop stack at the launch as (domain, message), outermost first.
  std::vector<std::pair<std::string, std::string>> nvtx;
  // Every numeric column in ncu's base units ("no data" and empty cells are absent).
  std::map<std::string, double> metrics;
};

// The metric names (and one regex, the stall reasons) to pass to `ncu --metrics`, comma-joined: exactly
// what aggregate_kernels reads, so the command and the parser agree.
const std::vector<std::string>& ncu_metrics();

// Parses the CSV of `ncu -i <report> --csv --page raw --print-units base`: a header row, an optional units
// row, one row per kernel. Leading "==PROF==" style log lines are skipped. Thousands separators are
// removed; cells that are not numbers ("no data", names) stay out of `metrics`. A header with no kernel
// rows gives an empty vector. Throws InputError("ncu output: ...") for empty text, a missing "ID" or
// "Kernel Name" column, a row with a different number of fields than the header, an unterminated quote,
// a non-integer ID, or a byte/time/frequency metric that ncu printed in scaled units (e.g. "usecond").
std::vector<NcuKernel> parse_ncu_raw_csv(const std::string& text);

// The "metrics" object of a candidate run over its kernels:
//   kernels: count;
//   sums, reported only when every kernel has the counter (a partial sum would understate):
//     duration_ms, dram_read_bytes, dram_write_bytes, dram_bytes, local_spill_bytes (local loads + stores,
//     i.e. register spills), spill_instructions;
//   registers_per_thread: max over kernels;
//   means weighted by kernel duration (equal weights when a duration is missing), over the kernels that
//   have the counter: l2_hit_pct, l1_hit_pct, achieved_occupancy_pct, theoretical_occupancy_pct,
//     sm_throughput_pct, memory_throughput_pct, dram_throughput_pct, l2_throughput_pct, l1_throughput_pct,
//     issue_active_pct, fma_pipe_pct, tensor_pipe_pct, sm_clock_mhz;
//   stalls: up to 3 stall reasons with the most (weighted mean) cycles per issued instruction, "selected"
//     excluded (it is the issue itself, not a stall), each {reason, cycles_per_issue, share}, share being
//     of the sum over all stall reasons but "selected"; left out when no reason has cycles.
json aggregate_kernels(const std::vector<NcuKernel>& kernels);

// aggregate_kernels of one kernel (without "kernels") plus its id, name, grid and block.
json kernel_json(const NcuKernel& kernel);

// Figures from the aggregate and the candidate's flops and modelled bytes: bytes_measured (dram_bytes),
// intensity_measured (flops / bytes_measured), bytes_model_over_measured, limiter and limiter_kind (see
// find_limiter). A ratio is left out when a divisor or dividend is not positive (unknown or zero).
json derive(const json& metrics, double flops, double bytes_model);

// What limits a kernel. kind: "memory", "compute" or "latency"; empty when the metrics hold no
// utilisation at all.
struct Limiter {
  std::string kind, text;
};

// The rule. Utilisations, as % of peak: DRAM (dram_throughput_pct), L2 (l2_throughput_pct), L1/shared
// (l1_throughput_pct), FMA (fma_pipe_pct), tensor (tensor_pipe_pct), issue (issue_active_pct). The largest
// present one (the first listed on a tie) names the limiter when it is at least 60%, Nsight Compute's
// own speed-of-light threshold for a unit being the bottleneck:
//   DRAM      -> memory,  "memory-bound at 84% of DRAM peak"
//   L2        -> memory,  "L2-bound at 71% of L2 peak"
//   L1/shared -> memory,  "L1/shared-bound at 66% of peak"
//   FMA       -> compute, "FMA-bound at 78% of the FMA pipe"
//   tensor    -> compute, "tensor-bound at 70% of the tensor pipe"
//   issue     -> compute, "issue-bound at 81% of issue slots"
// Below 60% no unit is busy: the kernel waits, and the text names its achieved occupancy and top stall
// reason, kind latency: "latency: 12% occupancy, long scoreboard" (each part only when present).
// Percentages are rounded to integers.
Limiter find_limiter(const json& metrics);

}  // namespace convtune
