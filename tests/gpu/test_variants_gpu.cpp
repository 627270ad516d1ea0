// Every variant x sampled configs x awkward sizes x radii, verified against the float64 reference by
// the runner itself (fresh random inputs, NaN-poisoned output, tolerance per method).
#include <gtest/gtest.h>

#include <random>

#include "harness/device.h"
#include "harness/gpu_kernels.h"
#include "harness/family.h"
#include "harness/records.h"
#include "harness/runner.h"

using namespace convtune;

namespace {

bool have_gpu() { return DeviceInfo::count() > 0; }

MeasureOptions quick() {
  MeasureOptions m;
  m.cold = false;
  m.warmup = 1;
  m.min_samples = 2;
  m.max_samples = 2;
  return m;
}

Problem conv2d(int64_t h, int64_t w, int64_t r) {
  return Problem::from_json({{"family", "conv2d"}, {"h", h}, {"w", w}, {"r", r}});
}

}  // namespace

TEST(GpuReference, MatchesTheCpuReference) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  for (auto [h, w, r] : {std::tuple{1, 1, 0}, {7, 13, 2}, {31, 17, 5}, {64, 97, 16}}) {
    const Problem p = conv2d(h, w, r);
    const auto ops = p.operands();
    DeviceArray<float> img(ops[0].elements), f(ops[1].elements);
    DeviceArray<double> out(ops[2].elements);
    fill_uniform(img.get(), ops[0].elements, 11, nullptr);
    fill_uniform(f.get(), ops[1].elements, 12, nullptr);
    gpu_reference(p, {img.get(), f.get()}, out.get(), nullptr);
    std::vector<std::vector<float>> host(2);
    host[0].resize(ops[0].elements);
    host[1].resize(ops[1].elements);
    std::vector<double> gpu(ops[2].elements);
    CT_CUDA(cudaMemcpy(host[0].data(), img.get(), img.bytes(), cudaMemcpyDeviceToHost));
    CT_CUDA(cudaMemcpy(host[1].data(), f.get(), f.bytes(), cudaMemcpyDeviceToHost));
    CT_CUDA(cudaMemcpy(gpu.data(), out.get(), out.bytes(), cudaMemcpyDeviceToHost));
    const auto cpu = cpu_reference(p, host);
    double nonzero = 0;
    for (size_t i = 0; i < cpu.size(); ++i) {
      ASSERT_NEAR(gpu[i], cpu[i], 1e-12 * (1 + std::abs(cpu[i]))) << p.key() << " at " << i;
      nonzero += cpu[i] != 0;
    }
    EXPECT_GT(nonzero, 0) << "inputs must not be zeros";
  }
}

TEST(GpuVariants, EveryVariantIsCorrectOnAwkwardShapes) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  JitCache jit(JitCache::default_dir(), dev.arch());
  Runner runner(dev, Ceilings{}, quick(), jit, 2026);
  const std::vector<Problem> problems = {conv2d(1, 1, 1),   conv2d(7, 13, 2),    conv2d(97, 31, 3),
                                         conv2d(257, 509, 1), conv2d(131, 67, 5), conv2d(61, 1031, 8),
                                         conv2d(139, 83, 16), conv2d(33, 35, 0)};
  struct Case {
    const Variant* v;
    Problem p;
    Config c;
  };
  std::vector<Case> cases;
  std::vector<JitProgram> programs;
  std::mt19937 rng(7);
  for (const Variant* v : Registry::instance().all())
    for (const auto& p : problems) {
      if (v->family() != p.family) continue;
      auto configs = v->space(p, dev).enumerate();
      std::shuffle(configs.begin(), configs.end(), rng);
      int taken = 0;
      for (const auto& c : configs) {
        if (!v->can_implement(p, c, dev)) continue;
        cases.push_back({v, p, c});
        for (auto& prog : v->programs(p, c)) programs.push_back(prog);
        if (++taken == 6) break;
      }
    }
  jit.compile_all(programs);
  std::map<std::string, int> ok_per_variant;
  for (const auto& k : cases) {
    const json rec = runner.run(*k.v, k.p, k.c);
    const std::string st = rec["status"];
    if (st == status::skipped) continue;  // a library refusing a shape at prepare time
    EXPECT_EQ(st, status::ok) << rec["candidate"].get<std::string>() << " on " << k.p.key() << ": "
                              << rec.dump().substr(0, 600);
    if (st == status::ok) {
      ok_per_variant[k.v->name()]++;
      EXPECT_EQ(rec["error"]["nonfinite"], 0u);
      EXPECT_LE(rec["error"]["rel_l2"].get<double>(), rec["error"]["tolerance"]["rel_l2"].get<double>());
    }
    ASSERT_FALSE(rec.value("context_lost", false)) << "CUDA context lost";
  }
  for (const Variant* v : Registry::instance().all())
    EXPECT_GT(ok_per_variant[v->name()], 0) << v->name() << " never ran correctly";
}

TEST(GpuVariants, AWrongKernelIsCaught) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  // The verification must fail when an output is left unwritten: run a plan whose output is poisoned
  // and never computed, through the same comparison the runner uses.
  const Problem p = conv2d(64, 64, 2);
  const auto ops = p.operands();
  DeviceArray<float> out(ops[2].elements), img(ops[0].elements), f(ops[1].elements);
  DeviceArray<double> ref(ops[2].elements);
  fill_uniform(img.get(), ops[0].elements, 1, nullptr);
  fill_uniform(f.get(), ops[1].elements, 2, nullptr);
  gpu_reference(p, {img.get(), f.get()}, ref.get(), nullptr);
  poison_nan(out.get(), ops[2].elements, nullptr);
  // Write all but the last element correctly.
  std::vector<double> host(ops[2].elements);
  CT_CUDA(cudaMemcpy(host.data(), ref.get(), ref.bytes(), cudaMemcpyDeviceToHost));
  std::vector<float> hf(host.begin(), host.end() - 1);
  CT_CUDA(cudaMemcpy(out.get(), hf.data(), hf.size() * 4, cudaMemcpyHostToDevice));
  ErrorSums e = compare_to_reference(out.get(), ref.get(), ops[2].elements, nullptr);
  EXPECT_EQ(e.nonfinite, 1u);
  hf.push_back(float(host.back()));
  CT_CUDA(cudaMemcpy(out.get(), hf.data(), hf.size() * 4, cudaMemcpyHostToDevice));
  e = compare_to_reference(out.get(), ref.get(), ops[2].elements, nullptr);
  EXPECT_EQ(e.nonfinite, 0u);
  EXPECT_LT(std::sqrt(e.sq_err / e.sq_ref), 1e-6);
}
