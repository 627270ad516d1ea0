#include "harness/ncu_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>

#include "harness/error.h"

namespace convtune {

namespace {

// ---- The counters aggregate_kernels reads, named once so ncu_metrics() asks for exactly these. ----

const std::string kDuration = "gpu__time_duration.sum";  // ns
const std::string kRegisters = "launch__registers_per_thread";
const std::string kStallPrefix = "smsp__average_warps_issue_stalled_";
const std::string kStallSuffix = "_per_issue_active.ratio";
const std::string kStallRegex = "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio";
const std::string kNotAStall = "selected";  // the cycle an instruction issues

// A summed output: the sum over kernels of the sum of `metrics`, times `scale`.
struct Summed {
  std::string key;
  std::vector<std::string> metrics;
  double scale;
};

// A duration-weighted mean: the mean of `metric` times `scale`.
struct Averaged {
  std::string key, metric;
  double scale;
};

const std::vector<Summed>& summed() {
  static const std::vector<Summed> list = {
      {"duration_ms", {kDuration}, 1e-6},
      {"dram_read_bytes", {"dram__bytes_read.sum"}, 1},
      {"dram_write_bytes", {"dram__bytes_write.sum"}, 1},
      {"dram_bytes", {"dram__bytes_read.sum", "dram__bytes_write.sum"}, 1},
      {"local_spill_bytes", {"l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"}, 1},
      {"spill_instructions", {"sass__inst_executed_register_spilling"}, 1},
  };
  return list;
}

const std::vector<Averaged>& averaged() {
  static const std::vector<Averaged> list = {
      {"l2_hit_pct", "lts__t_sector_hit_rate.pct", 1},
      {"l1_hit_pct", "l1tex__t_sector_hit_rate.pct", 1},
      {"achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active", 1},
      {"theoretical_occupancy_pct", "sm__maximum_warps_per_active_cycle_pct", 1},
      {"sm_throughput_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed", 1},
      {"memory_throughput_pct", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 1},
      {"dram_throughput_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed", 1},
      {"l2_throughput_pct", "lts__throughput.avg.pct_of_peak_sustained_elapsed", 1},
      {"l1_throughput_pct", "l1tex__throughput.avg.pct_of_peak_sustained_active", 1},
      {"issue_active_pct", "sm__inst_issued.avg.pct_of_peak_sustained_active", 1},
      {"fma_pipe_pct", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 1},
      {"tensor_pipe_pct", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 1},
      {"sm_clock_mhz", "sm__cycles_elapsed.avg.per_second", 1e-6},
  };
  return list;
}

// Units ncu scales for readability unless told --print-units base; our sums assume the base ones.
// A value in any other unit would be off by a power of 1000, so the parser refuses it.
const std::map<std::string, std::set<std::string>>& base_units() {
  static const std::map<std::string, std::set<std::string>> units = {
      {"dram__bytes_read.sum", {"byte"}},
      {"dram__bytes_write.sum", {"byte"}},
      {"l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", {"byte"}},
      {"l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum", {"byte"}},
      {"sass__inst_executed_register_spilling", {"inst"}},
      {kDuration, {"ns", "nsecond"}},
      {"sm__cycles_elapsed.avg.per_second", {"hz", "cycle/second"}},
  };
  return units;
}

// ---- CSV ----

std::string row_label(size_t index) { return "row " + std::to_string(index + 1); }

// ncu may print its own log lines ("==PROF== ...", "==WARNING== ...") before the table.
size_t skip_log_lines(const std::string& text) {
  size_t at = 0;
  while (text.compare(at, 2, "==") == 0) {
    const size_t eol = text.find('\n', at);
    if (eol == std::string::npos) return text.size();
    at = eol + 1;
  }
  return at;
}

bool ends_field(const std::string& text, size_t i) {
  return i >= text.size() || text[i] == ',' || text[i] == '\n' || text[i] == '\r';
}

// One field starting at `i`, which is left after it. Quoted fields may hold commas, newlines and "".
std::string read_field(const std::string& text, size_t& i, size_t row) {
  std::string field;
  if (i >= text.size() || text[i] != '"') {
    while (!ends_field(text, i)) field += text[i++];
    return field;
  }
  for (++i;; ++i) {
    if (i >= text.size()) throw InputError("ncu output: unterminated quote in " + row_label(row));
    if (text[i] != '"') {
      field += text[i];
    } else if (i + 1 < text.size() && text[i + 1] == '"') {
      field += '"';
      ++i;
    } else {
      break;
    }
  }
  ++i;  // the closing quote
  if (!ends_field(text, i))
    throw InputError("ncu output: text after a closing quote in " + row_label(row) + " (\"" + field + "\")");
  return field;
}

// RFC 4180 rows; blank lines are skipped.
std::vector<std::vector<std::string>> split_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  size_t i = skip_log_lines(text);
  while (i < text.size()) {
    std::vector<std::string> row;
    row.push_back(read_field(text, i, rows.size()));
    while (i < text.size() && text[i] == ',') row.push_back(read_field(text, ++i, rows.size()));
    if (i < text.size() && text[i] == '\r') ++i;
    if (i < text.size() && text[i] == '\n') ++i;
    if (row.size() > 1 || !row[0].empty()) rows.push_back(std::move(row));
  }
  return rows;
}

// ---- Cells ----

// "1,973,698,906.53" -> 1973698906.53; "no data", "", names -> nothing.
std::optional<double> parse_number(const std::string& cell) {
  std::string digits;
  for (char c : cell)
    if (c != ',') digits += c;
  if (digits.empty() || std::isspace(static_cast<unsigned char>(digits[0]))) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

int parse_id(const std::string& cell, size_t row) {
  const std::optional<double> v = parse_number(cell);
  if (!v || *v != std::floor(*v) || *v < 0 || *v > 2e9)
    throw InputError("ncu output: " + row_label(row) + ": ID '" + cell + "' is not a launch number");
  return static_cast<int>(*v);
}

// The closing quote of an NVTX entry: a quote followed by blanks and then the next entry or the end, so
// a quote inside a message does not cut it short.
size_t closing_quote(const std::string& cell, size_t from) {
  for (size_t q = cell.find('"', from); q != std::string::npos; q = cell.find('"', q + 1)) {
    const size_t next = cell.find_first_not_of(' ', q + 1);
    if (next == std::string::npos || cell[next] == '"') return q;
  }
  return std::string::npos;
}

// `domain:range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg`. Range names hold ':' themselves, so the
// message is what follows the last ":ASCII:" (the whole rest when the message type is another one).
std::pair<std::string, std::string> parse_nvtx_entry(const std::string& entry) {
  const size_t colon = entry.find(':');
  if (colon == std::string::npos) return {entry, ""};
  const std::string domain = entry.substr(0, colon);
  const std::string ascii = ":ASCII:";
  const size_t msg = entry.rfind(ascii);
  if (msg == std::string::npos || msg < colon) return {domain, entry.substr(colon + 1)};
  return {domain, entry.substr(msg + ascii.size())};
}

// `775  "entry"  "entry" `: the thread id, then the push/pop stack, outermost first.
std::vector<std::pair<std::string, std::string>> parse_nvtx_stack(const std::string& cell) {
  std::vector<std::pair<std::string, std::string>> stack;
  for (size_t open = cell.find('"'); open != std::string::npos;) {
    const size_t close = closing_quote(cell, open + 1);
    stack.push_back(parse_nvtx_entry(cell.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1)));
    if (close == std::string::npos) break;
    open = cell.find('"', close + 1);
  }
  return stack;
}

// ---- Columns ----

constexpr size_t kNone = std::string::npos;

struct Columns {
  size_t id = kNone, name = kNone, grid = kNone, block = kNone, nvtx = kNone;
  std::vector<bool> is_metric;  // every column that does not describe the launch
};

bool is_nvtx_column(const std::string& name) { return name.find("_Range:") != std::string::npos; }

Columns find_columns(const std::vector<std::string>& header) {
  static const std::set<std::string> descriptive = {"ID",     "Process ID", "Process Name", "Host Name",
                                                    "Kernel Name", "Context", "Stream",     "Block Size",
                                                    "Grid Size", "Device",  "CC"};
  Columns c;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string& h = header[i];
    if (h == "ID") c.id = i;
    if (h == "Kernel Name") c.name = i;
    if (h == "Grid Size") c.grid = i;
    if (h == "Block Size") c.block = i;
    if (h.find("Push/Pop_Range") != std::string::npos) c.nvtx = i;
    c.is_metric.push_back(!descriptive.count(h) && !is_nvtx_column(h));
  }
  for (const auto& [index, name] : {std::pair{c.id, "ID"}, std::pair{c.name, "Kernel Name"}})
    if (index == kNone)
      throw InputError(std::string("ncu output: no \"") + name +
                       "\" column in the header (expected `ncu --csv --page raw` output)");
  return c;
}

void check_units(const std::vector<std::string>& header, const std::vector<std::string>& units) {
  for (size_t i = 0; i < header.size(); ++i) {
    const auto it = base_units().find(header[i]);
    if (it == base_units().end() || it->second.count(units[i])) continue;
    std::string expected;
    for (const auto& u : it->second) expected += (expected.empty() ? "'" : " or '") + u + "'";
    throw InputError("ncu output: metric " + header[i] + " is in '" + units[i] + "', expected " + expected +
                     " (run ncu with --print-units base)");
  }
}

std::string cell_or_empty(const std::vector<std::string>& row, size_t index) {
  return index == kNone ? "" : row[index];
}

NcuKernel parse_kernel(const std::vector<std::string>& header, const std::vector<std::string>& row,
                       const Columns& c, size_t index) {
  NcuKernel k;
  k.id = parse_id(row[c.id], index);
  k.name = row[c.name];
  k.grid = cell_or_empty(row, c.grid);
  k.block = cell_or_empty(row, c.block);
  k.nvtx = parse_nvtx_stack(cell_or_empty(row, c.nvtx));
  for (size_t i = 0; i < row.size(); ++i)
    if (c.is_metric[i])
      if (const auto v = parse_number(row[i])) k.metrics[header[i]] = *v;
  return k;
}

// ---- Aggregation ----

std::optional<double> metric(const NcuKernel& k, const std::string& name) {
  const auto it = k.metrics.find(name);
  if (it == k.metrics.end()) return std::nullopt;
  return it->second;
}

// Kernel durations as weights, so a long kernel counts for what it costs; equal weights when a
// duration is missing or all are 0.
std::vector<double> weights(const std::vector<NcuKernel>& kernels) {
  std::vector<double> w;
  double total = 0;
  for (const auto& k : kernels) {
    const auto d = metric(k, kDuration);
    if (!d) return std::vector<double>(kernels.size(), 1.0);
    w.push_back(*d);
    total += *d;
  }
  if (total <= 0) return std::vector<double>(kernels.size(), 1.0);
  return w;
}

// Only when every kernel has every counter: a partial sum would understate.
std::optional<double> sum_of(const std::vector<NcuKernel>& kernels, const std::vector<std::string>& names) {
  if (kernels.empty()) return std::nullopt;
  double total = 0;
  for (const auto& k : kernels)
    for (const auto& name : names) {
      const auto v = metric(k, name);
      if (!v) return std::nullopt;
      total += *v;
    }
  return total;
}

// Over the kernels that have the counter.
std::optional<double> weighted_mean(const std::vector<NcuKernel>& kernels, const std::vector<double>& w,
                                    const std::string& name) {
  double sum = 0, weight = 0;
  for (size_t i = 0; i < kernels.size(); ++i)
    if (const auto v = metric(kernels[i], name)) {
      sum += w[i] * *v;
      weight += w[i];
    }
  if (weight <= 0) return std::nullopt;
  return sum / weight;
}

std::optional<double> max_of(const std::vector<NcuKernel>& kernels, const std::string& name) {
  std::optional<double> best;
  for (const auto& k : kernels)
    if (const auto v = metric(k, name)) best = best ? std::max(*best, *v) : *v;
  return best;
}

std::set<std::string> stall_reasons(const std::vector<NcuKernel>& kernels) {
  std::set<std::string> reasons;
  for (const auto& k : kernels)
    for (const auto& [name, value] : k.metrics) {
      if (name.size() <= kStallPrefix.size() + kStallSuffix.size()) continue;
      if (name.compare(0, kStallPrefix.size(), kStallPrefix) != 0) continue;
      if (name.compare(name.size() - kStallSuffix.size(), kStallSuffix.size(), kStallSuffix) != 0) continue;
      const std::string reason =
          name.substr(kStallPrefix.size(), name.size() - kStallPrefix.size() - kStallSuffix.size());
      if (reason != kNotAStall) reasons.insert(reason);
    }
  return reasons;
}

// The top 3 stall reasons by cycles per issued instruction; null when no reason has any.
json top_stalls(const std::vector<NcuKernel>& kernels, const std::vector<double>& w) {
  std::vector<std::pair<std::string, double>> cycles;
  double total = 0;
  for (const auto& reason : stall_reasons(kernels))
    if (const auto v = weighted_mean(kernels, w, kStallPrefix + reason + kStallSuffix)) {
      cycles.emplace_back(reason, *v);
      total += *v;
    }
  if (total <= 0) return nullptr;
  std::stable_sort(cycles.begin(), cycles.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  json top = json::array();
  for (const auto& [reason, c] : cycles) {
    if (top.size() == 3 || c <= 0) break;
    top.push_back({{"reason", reason}, {"cycles_per_issue", c}, {"share", c / total}});
  }
  return top;
}

std::optional<double> number(const json& metrics, const std::string& key) {
  if (!metrics.is_object() || !metrics.contains(key) || !metrics[key].is_number()) return std::nullopt;
  return metrics[key].get<double>();
}

std::string percent(double pct) { return std::to_string(std::lround(pct)) + "%"; }

bool positive(double x) { return std::isfinite(x) && x > 0; }

}  // namespace

const std::vector<std::string>& ncu_metrics() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    auto add = [&n](const std::string& m) {
      if (std::find(n.begin(), n.end(), m) == n.end()) n.push_back(m);
    };
    for (const auto& s : summed())
      for (const auto& m : s.metrics) add(m);
    for (const auto& a : averaged()) add(a.metric);
    add(kRegisters);
    add(kStallRegex);
    return n;
  }();
  return names;
}

std::vector<NcuKernel> parse_ncu_raw_csv(const std::string& text) {
  const auto rows = split_csv(text);
  if (rows.empty()) throw InputError("ncu output: empty, no header row (did ncu profile any kernel?)");
  const std::vector<std::string>& header = rows[0];
  const Columns columns = find_columns(header);
  for (size_t r = 1; r < rows.size(); ++r)
    if (rows[r].size() != header.size())
      throw InputError("ncu output: " + row_label(r) + " has " + std::to_string(rows[r].size()) +
                       " fields, the header has " + std::to_string(header.size()));
  size_t first = 1;
  if (rows.size() > 1 && rows[1][columns.id].empty()) {  // the units row
    check_units(header, rows[1]);
    first = 2;
  }
  std::vector<NcuKernel> kernels;
  for (size_t r = first; r < rows.size(); ++r) kernels.push_back(parse_kernel(header, rows[r], columns, r));
  return kernels;
}

json aggregate_kernels(const std::vector<NcuKernel>& kernels) {
  json out = {{"kernels", kernels.size()}};
  for (const auto& s : summed())
    if (const auto v = sum_of(kernels, s.metrics)) out[s.key] = *v * s.scale;
  if (const auto v = max_of(kernels, kRegisters)) out["registers_per_thread"] = *v;
  const std::vector<double> w = weights(kernels);
  for (const auto& a : averaged())
    if (const auto v = weighted_mean(kernels, w, a.metric)) out[a.key] = *v * a.scale;
  if (json stalls = top_stalls(kernels, w); !stalls.is_null()) out["stalls"] = std::move(stalls);
  return out;
}

json kernel_json(const NcuKernel& kernel) {
  json out = aggregate_kernels({kernel});
  out.erase("kernels");
  out["id"] = kernel.id;
  out["name"] = kernel.name;
  out["grid"] = kernel.grid;
  out["block"] = kernel.block;
  return out;
}

json derive(const json& metrics, double flops, double bytes_model) {
  json out = json::object();
  if (const auto bytes = number(metrics, "dram_bytes")) {
    out["bytes_measured"] = *bytes;
    if (positive(*bytes) && positive(flops)) out["intensity_measured"] = flops / *bytes;
    if (positive(*bytes) && positive(bytes_model)) out["bytes_model_over_measured"] = bytes_model / *bytes;
  }
  const Limiter limiter = find_limiter(metrics);
  if (!limiter.kind.empty()) {
    out["limiter"] = limiter.text;
    out["limiter_kind"] = limiter.kind;
  }
  return out;
}

Limiter find_limiter(const json& metrics) {
  struct Unit {
    const char* key;
    const char* kind;
    const char* before;  // text before the percentage
    const char* after;   // and after it
  };
  static const Unit units[] = {
      {"dram_throughput_pct", "memory", "memory-bound at ", " of DRAM peak"},
      {"l2_throughput_pct", "memory", "L2-bound at ", " of L2 peak"},
      {"l1_throughput_pct", "memory", "L1/shared-bound at ", " of peak"},
      {"fma_pipe_pct", "compute", "FMA-bound at ", " of the FMA pipe"},
      {"tensor_pipe_pct", "compute", "tensor-bound at ", " of the tensor pipe"},
      {"issue_active_pct", "compute", "issue-bound at ", " of issue slots"},
  };
  constexpr double kBusyPct = 60;  // Nsight Compute's speed-of-light guidance
  const Unit* busiest = nullptr;
  double busiest_pct = 0;
  for (const Unit& u : units)
    if (const auto v = number(metrics, u.key); v && (!busiest || *v > busiest_pct)) {
      busiest = &u;
      busiest_pct = *v;
    }
  if (!busiest) return {};
  if (busiest_pct >= kBusyPct)
    return {busiest->kind, busiest->before + percent(busiest_pct) + busiest->after};

  // No unit is busy: warps wait. Say how many there are and what they wait on.
  std::vector<std::string> parts;
  if (const auto occupancy = number(metrics, "achieved_occupancy_pct")) parts.push_back(percent(*occupancy) + " occupancy");
  if (metrics.contains("stalls") && metrics["stalls"].is_array() && !metrics["stalls"].empty()) {
    std::string reason = metrics["stalls"][0].value("reason", "");
    std::replace(reason.begin(), reason.end(), '_', ' ');
    if (!reason.empty()) parts.push_back(reason);
  }
  std::string text = "latency";
  for (size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? ": " : ", ") + parts[i];
  return {"latency", text};
}

}  // namespace convtune
