// convtune_bench: Google Benchmark over a dispatch table. For every problem it registers the dispatched
// candidate and the library baselines (cuDNN's best algorithm in the run, cuFFT), each verified once
// against the float64 reference, then timed with CUDA events (manual time, L2 flushed before each
// iteration), with bytes and FLOP rates as counters. Use Google Benchmark's own flags for output
// (--benchmark_format=json, --benchmark_out=...) and its compare.py to compare runs.
//
//   convtune_bench <dispatch.json> [google benchmark flags]
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <iostream>

#include "harness/device.h"
#include "harness/error.h"
#include "harness/gpu_kernels.h"
#include "harness/measure.h"
#include "harness/records.h"
#include "harness/runner.h"
#include "harness/family.h"
#include "harness/runner.h"
#include "harness/json_file.h"

using namespace convtune;

namespace {

struct BenchCase {
  const Variant* variant;
  Problem problem;
  Config config;
  std::string role;  // "dispatch" or "baseline"
};

void run_case(benchmark::State& state, const BenchCase& bc, const DeviceInfo& dev, JitCache& jit) {
  Stream stream;
  std::unique_ptr<Plan> plan;
  try {
    plan = bc.variant->prepare(bc.problem, bc.config, dev, jit);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  const auto ops = bc.problem.operands();
  std::vector<DeviceArray<float>> bufs;
  for (const auto& o : ops) bufs.emplace_back(static_cast<size_t>(o.elements));
  Operands pointers;
  std::vector<const float*> inputs;
  for (size_t i = 0; i < bufs.size(); ++i) {
    pointers.data.push_back(bufs[i].get());
    if (i + 1 < bufs.size()) {
      fill_uniform(bufs[i].get(), ops[i].elements, 1234 + i, stream.get(), ops[i].amplitude);
      inputs.push_back(bufs[i].get());
    }
  }
  plan->bind(pointers, stream.get());
  // Verify once: a benchmark of a wrong answer is worthless.
  {
    DeviceArray<double> ref(static_cast<size_t>(ops.back().elements));
    gpu_reference(bc.problem, inputs, ref.get(), stream.get());
    poison_nan(bufs.back().get(), ops.back().elements, stream.get());
    plan->run(stream.get());
    const ErrorSums e = compare_to_reference(bufs.back().get(), ref.get(), ops.back().elements, stream.get());
    const Tolerance tol = verification_tolerance(*bc.variant, bc.problem, bc.config);
    const double rel = e.sq_ref > 0 ? std::sqrt(e.sq_err / e.sq_ref) : std::sqrt(e.sq_err);
    if (e.nonfinite || !(rel <= tol.rel_l2)) {
      state.SkipWithError(("wrong result: rel_l2 " + std::to_string(rel)).c_str());
      return;
    }
  }
  L2Flusher flusher(dev.l2_bytes);
  Event start, stop;
  for (auto _ : state) {
    flusher.flush(stream.get());
    start.record(stream.get());
    plan->run(stream.get());
    stop.record(stream.get());
    CT_CUDA(cudaEventSynchronize(stop.get()));
    float ms = 0;
    CT_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    state.SetIterationTime(ms * 1e-3);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bc.problem.min_bytes()));
  state.counters["FLOP/s"] = benchmark::Counter(bc.problem.direct_flops(), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(bc.role);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: convtune_bench <dispatch.json> [--benchmark_* flags]\n");
    return 2;
  }
  try {
    const json dispatch = read_json(argv[1]);
    if (!dispatch.contains("entries") || !dispatch["entries"].is_array())
      throw InputError(std::string(argv[1]) + ": not a dispatch table (no 'entries'); make one with convtune export");
    require_gpu("convtune_bench");
    static const DeviceInfo dev = DeviceInfo::query(0);
    static JitCache jit(JitCache::default_dir(), dev.arch());
    static std::vector<BenchCase> cases;
    for (const auto& e : dispatch["entries"]) {
      const Problem p = Problem::from_json(e.at("problem"), "entries[].problem");
      cases.push_back({&Registry::instance().get(e.at("variant")), p, e.at("config"), "dispatch"});
      // Baselines: every library variant's configs that this run found best for the problem, if listed.
      for (const auto& b : e.value("baselines", json::array()))
        cases.push_back({&Registry::instance().get(b.at("variant")), p, b.at("config"), "baseline"});
    }
    for (const auto& bc : cases) {
      const std::string name = bc.problem.key() + "/" + candidate_name(bc.variant->name(), bc.config);
      benchmark::RegisterBenchmark(name.c_str(), [&bc](benchmark::State& s) { run_case(s, bc, dev, jit); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  } catch (const InputError& e) {
    std::fprintf(stderr, "convtune_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "convtune_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
