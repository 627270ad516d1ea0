// Runs one candidate on one problem: can_implement -> prepare (JIT) -> verify on fresh random inputs
// against the float64 reference -> time -> verify again -> one record. Failures become statuses.
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/cuda_raii.h"
#include "harness/device.h"
#include "harness/gpu_clocks.h"
#include "harness/jit.h"
#include "harness/measure.h"
#include "harness/variant.h"

namespace convtune {

using json = nlohmann::json;

struct ErrorSums;

// The verification record of an output whose errors against the float64 reference are `e`: rel_l2,
// max_abs, max_rel, nonfinite, the tolerance, and pass (no non-finite output, both errors within tolerance).
json verification_verdict(const ErrorSums& e, const Tolerance& tol);
// The bound a candidate's output is verified against: the method's, as its family takes it on the output.
Tolerance verification_tolerance(const Variant& v, const Problem& p, const Config& c);

// Device buffers for one problem, reused by every candidate of that problem.
struct ProblemBuffers {
  Problem problem;
  std::vector<DeviceArray<float>> operands;
  DeviceArray<double> reference;
  Operands pointers() const;
};

class Runner {
 public:
  Runner(DeviceInfo dev, Ceilings ceilings, MeasureOptions options, JitCache& jit, uint64_t seed);

  // Always returns a record; never throws for a candidate's own failure. A record with
  // "context_lost": true means a sticky CUDA error: the process must stop (issue: worker processes).
  json run(const Variant& v, const Problem& p, const Config& c);
  // The record's fields that do not need a GPU (problem, candidate, cost model, status skipped...); the
  // cost is the config's as resolved on `dev`.
  static json skeleton(const Variant& v, const Problem& p, const Config& c, const Ceilings& ceilings,
                       const DeviceInfo& dev = DeviceInfo{});

  // Off: no clock readings and no re-measure, so a candidate's samples are timed exactly once (the profile
  // worker, whose one timed range is what Nsight Compute collects).
  void guard_clocks(bool on) { guard_clocks_ = on; }
  const DeviceInfo& device() const { return dev_; }
  const Ceilings& ceilings() const { return ceilings_; }

 private:
  ProblemBuffers& buffers_for(const Problem& p);
  json verify(const Variant& v, const Config& c, Plan& plan, ProblemBuffers& b, bool fresh_inputs);
  // The timed samples between two clock readings; measured once more after a pause when throttled.
  Timing measure_guarded(Plan& plan, json& r);
  Timing time_samples(Plan& plan);
  Timing measure_between_readings(Plan& plan, json& clocks, ThrottleVerdict& verdict);

  DeviceInfo dev_;
  Ceilings ceilings_;
  JitCache& jit_;
  uint64_t seed_;
  Stream stream_;
  Timer timer_;
  GpuClocks clocks_;
  unsigned max_sm_mhz_ = 0;  // the highest SM clock seen after an unthrottled candidate
  bool guard_clocks_ = true;
  std::unique_ptr<ProblemBuffers> buffers_;
};

// A timed record's rates from its median time and its skeleton's figures: effective bandwidth, GFLOP/s, and
// the fraction of each floor (floor_ms, floor_own_ms, floor_math_ms where the record has it) the time reaches.
void add_rates(json& record, double median_ms);

// Fails with InputError naming the problem when its buffers cannot fit in the device's memory.
void check_fits(const Problem& p, const DeviceInfo& dev, const std::string& where);

}  // namespace convtune
