#include "harness/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <thread>

#include "harness/error.h"
#include "harness/gpu_kernels.h"
#include "harness/records.h"
#include "harness/family.h"
#include "harness/nvtx.h"
#include "harness/plugin.h"

namespace convtune {

Operands ProblemBuffers::pointers() const {
  Operands ops;
  for (const auto& a : operands) ops.data.push_back(a.get());
  return ops;
}

static double device_bytes_needed(const Problem& p) {
  return p.min_bytes() + 8.0 * double(p.output_elements());  // operands + float64 reference
}

void check_fits(const Problem& p, const DeviceInfo& dev, const std::string& where) {
  const double need = device_bytes_needed(p);
  const double have = 0.8 * double(dev.global_mem_bytes);  // room for workspaces and the L2 flush buffer
  if (dev.global_mem_bytes > 0 && need > have) {
    char msg[256];
    std::snprintf(msg, sizeof msg, "needs %.2f GiB of device memory (operands + float64 reference); %s has %.2f GiB",
                  need / double(1 << 30), dev.name.c_str(), double(dev.global_mem_bytes) / double(1 << 30));
    throw InputError(where + " " + p.key() + ": " + msg + "; use a smaller shape");
  }
}

static std::string pci_bus_id(int ordinal) {
  char id[32] = {};
  return cudaDeviceGetPCIBusId(id, sizeof id, ordinal) == cudaSuccess ? id : "";
}

Runner::Runner(DeviceInfo dev, Ceilings ceilings, MeasureOptions options, JitCache& jit, uint64_t seed)
    : dev_(std::move(dev)), ceilings_(ceilings), jit_(jit), seed_(seed), timer_(dev_.l2_bytes, options),
      clocks_(pci_bus_id(dev_.ordinal)) {}

Timing Runner::time_samples(Plan& plan) {
  const Timing t = timer_.measure([&](cudaStream_t s) { plan.run(s); }, stream_.get());
  CT_CHECK_LAUNCH();
  return t;
}

Timing Runner::measure_between_readings(Plan& plan, json& clocks, ThrottleVerdict& verdict) {
  const ClockSample before = clocks_.sample();
  const Timing t = time_samples(plan);
  const ClockSample after = clocks_.sample();
  verdict = judge(before, after, max_sm_mhz_);
  if (after.valid && !verdict.throttled) max_sm_mhz_ = std::max(max_sm_mhz_, after.sm_mhz);
  clocks = {{"before", before.to_json()}, {"after", after.to_json()}};
  return t;
}

Timing Runner::measure_guarded(Plan& plan, json& r) {
  if (!guard_clocks_ || !clocks_.available()) {
    if (guard_clocks_) r["clocks"] = {{"unavailable", clocks_.why()}};
    return time_samples(plan);
  }
  ThrottleVerdict verdict;
  Timing t = measure_between_readings(plan, r["clocks"], verdict);
  if (verdict.throttled) {
    // Once more after a pause: a GPU that cooled down or left its power cap gives the honest figure.
    r["throttled_first"] = {{"time", t.to_json()}, {"clocks", r["clocks"]}, {"reason", verdict.reason}};
    std::this_thread::sleep_for(std::chrono::seconds(1));
    t = measure_between_readings(plan, r["clocks"], verdict);
    r["remeasured"] = true;
  }
  r["throttled"] = verdict.throttled;
  if (verdict.throttled) r["throttle_reason"] = verdict.reason;
  return t;
}

ProblemBuffers& Runner::buffers_for(const Problem& p) {
  if (!buffers_ || !(buffers_->problem == p)) {
    buffers_.reset();  // free the last problem's memory first
    auto b = std::make_unique<ProblemBuffers>();
    b->problem = p;
    for (const auto& o : p.operands()) b->operands.emplace_back(static_cast<size_t>(o.elements));
    b->reference = DeviceArray<double>(static_cast<size_t>(p.output_elements()));
    buffers_ = std::move(b);
  }
  return *buffers_;
}

// The same work against the ceiling of the math it runs on (3xTF32 and TF32 kernels pass the FMA rate);
// floor_math_ms is left out where that ceiling was not measured (no TF32 tensor cores, an older run).
static void add_math_floor(json& r, const Variant& v, const Config& c, const Ceilings& ceilings, double bytes,
                           double flops) {
  Math math;
  try {
    math = v.math_of(c);
  } catch (const InputError&) {
    return;  // a config naming no known math, which can_implement refuses: its skipped record states none
  }
  r["math"] = math_name(math);
  if (const double floor = ceilings.floor_ms(bytes, flops, math); floor > 0) r["floor_math_ms"] = floor;
}

json Runner::skeleton(const Variant& v, const Problem& p, const Config& c, const Ceilings& ceilings,
                     const DeviceInfo& dev) {
  json r;
  r["schema"] = kSchemaVersion;
  r["problem"] = p.to_json();
  r["problem_key"] = p.key();
  r["family"] = p.family;
  r["variant"] = v.name();
  r["library"] = v.library();
  r["config"] = c;
  r["candidate"] = candidate_name(v.name(), c);
  const Cost cost = v.cost(p, v.resolve(p, c, dev));
  r["flops"] = cost.flops;
  r["flops_variant"] = cost.flops_variant;
  r["bytes_min"] = cost.bytes_min;
  r["bytes_model"] = cost.bytes_model;
  r["intensity_min"] = cost.bytes_min > 0 ? cost.flops / cost.bytes_min : 0;
  r["intensity_model"] = cost.bytes_model > 0 ? cost.flops / cost.bytes_model : 0;
  r["floor_ms"] = ceilings.floor_ms(cost.bytes_min, cost.flops);
  // The variant's own roofline: a spectral method does fewer flops than the direct sum, so it can beat
  // floor_ms; this one says how close it runs to the limit of the work it does.
  const double own_flops = cost.flops_variant > 0 ? cost.flops_variant : cost.flops;
  r["floor_own_ms"] = ceilings.floor_ms(cost.bytes_min, own_flops);
  add_math_floor(r, v, c, ceilings, cost.bytes_min, own_flops);
  r["complexity"] = v.complexity();
  if (const auto* plugin = dynamic_cast<const PluginVariant*>(&v)) r["plugin"] = plugin->provenance();
  r["timestamp"] = now_iso();
  r["status"] = status::ok;
  return r;
}

void add_rates(json& r, double median_ms) {
  const double sec = median_ms * 1e-3;
  r["gbps_effective"] = sec > 0 ? r["bytes_min"].get<double>() / sec / 1e9 : 0;
  r["gflops"] = sec > 0 ? r["flops"].get<double>() / sec / 1e9 : 0;
  r["roofline_fraction"] = median_ms > 0 ? r["floor_ms"].get<double>() / median_ms : 0;
  r["roofline_fraction_own"] = median_ms > 0 ? r["floor_own_ms"].get<double>() / median_ms : 0;
  if (r.contains("floor_math_ms") && median_ms > 0)
    r["roofline_fraction_math"] = r["floor_math_ms"].get<double>() / median_ms;
}

json Runner::verify(const Variant& v, const Config& c, Plan& plan, ProblemBuffers& b, bool fresh_inputs) {
  const Problem& p = b.problem;
  const NvtxRange range(kNvtxVerify);
  const cudaStream_t s = stream_.get();
  const auto ops = p.operands();
  const size_t n_inputs = ops.size() - 1;
  if (fresh_inputs) {
    for (size_t i = 0; i < n_inputs; ++i)
      fill_uniform(b.operands[i].get(), ops[i].elements, ++seed_, s, ops[i].amplitude);
    std::vector<const float*> inputs;
    for (size_t i = 0; i < n_inputs; ++i) inputs.push_back(b.operands[i].get());
    gpu_reference(p, inputs, b.reference.get(), s);
    plan.bind(b.pointers(), s);
  }
  poison_nan(b.operands.back().get(), ops.back().elements, s);
  plan.run(s);
  CT_CHECK_LAUNCH();
  const ErrorSums e = compare_to_reference(b.operands.back().get(), b.reference.get(), ops.back().elements, s);
  return verification_verdict(e, verification_tolerance(v, p, c));
}

Tolerance verification_tolerance(const Variant& v, const Problem& p, const Config& c) {
  return p.type().output_tolerance(p, v.tolerance(p, c));
}

json verification_verdict(const ErrorSums& e, const Tolerance& tol) {
  json out;
  out["rel_l2"] = e.sq_ref > 0 ? std::sqrt(e.sq_err / e.sq_ref) : std::sqrt(e.sq_err);
  out["max_abs"] = e.max_abs_err;
  out["max_rel"] = e.max_abs_ref > 0 ? e.max_abs_err / e.max_abs_ref : e.max_abs_err;
  out["nonfinite"] = e.nonfinite;
  out["tolerance"] = tol.to_json();
  const bool pass = e.nonfinite == 0 && std::isfinite(e.sq_err) && out["rel_l2"].get<double>() <= tol.rel_l2 &&
                    out["max_rel"].get<double>() <= tol.max_rel;
  out["pass"] = pass;
  return out;
}

json Runner::run(const Variant& v, const Problem& p, const Config& c) {
  json r = skeleton(v, p, c, ceilings_, dev_);
  const Status st = v.can_implement(p, c, dev_);
  if (!st) {
    r["status"] = status::skipped;
    r["reason"] = st.reason;
    return r;
  }
  std::unique_ptr<Plan> plan;
  const NvtxRange range(nvtx_candidate_range(r["candidate"].get<std::string>(), p.key()));
  try {
    const int compiles_before = jit_.compiles();
    const double compile_ms_before = jit_.compile_ms();
    plan = v.prepare(p, c, dev_, jit_);
    r["compiled"] = jit_.compiles() > compiles_before;
    r["compile_ms"] = jit_.compile_ms() - compile_ms_before;
    r["kernel"] = plan->attributes().to_json();
    r["workspace_bytes"] = plan->workspace_bytes();

    ProblemBuffers& b = buffers_for(p);
    json check = verify(v, c, *plan, b, true);
    r["error"] = check;
    const json details = plan->details();
    if (!details.empty()) r["details"] = details;
    if (!check["pass"].get<bool>()) {
      r["status"] = status::wrong_result;
      return r;
    }
    const Timing t = measure_guarded(*plan, r);
    r["time"] = t.to_json();
    r["cold"] = timer_.options().cold;
    // Same inputs again after the timed runs: a race or a stale-state bug shows up here.
    json recheck = verify(v, c, *plan, b, false);
    if (!recheck["pass"].get<bool>()) {
      r["error_after_timing"] = recheck;
      r["status"] = status::wrong_result;
      r["reason"] = "correct before timing, wrong after: a race or state kept between runs";
      return r;
    }
    add_rates(r, t.median_ms);
  } catch (const Unsupported& e) {
    r["status"] = status::skipped;
    r["reason"] = e.what();
  } catch (const CompileError& e) {
    r["status"] = status::compile_error;
    r["reason"] = e.what();
    r["log"] = e.log;
  } catch (const CudaError& e) {
    r["status"] = status::runtime_error;
    r["reason"] = e.what();
    // A sticky error leaves the context unusable: the caller must stop (records so far are on disk).
    const cudaError_t sticky = cudaDeviceSynchronize();
    if (sticky != cudaSuccess) {
      r["context_lost"] = true;
      mark_context_lost();
    }
  }
  return r;
}

}  // namespace convtune
