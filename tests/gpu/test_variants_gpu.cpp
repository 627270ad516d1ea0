// Every variant x sampled configs x awkward sizes x radii, verified against the float64 reference by
// the runner itself (fresh random inputs, NaN-poisoned output, tolerance per method).
#include <gtest/gtest.h>

#include <random>

#include "harness/device.h"
#include "harness/gpu_kernels.h"
#include "harness/family.h"
#include "harness/records.h"
#include "harness/runner.h"
#include "harness/select.h"
#include "tests/gpu/gpu_test_support.h"
#include "variants/layer_common/layer_shape.h"
#include "variants/layer_common/layer_variant.h"

using namespace convtune;
using test_gpu::have_gpu;
using test_gpu::quick;

namespace {

Problem conv2d(int64_t h, int64_t w, int64_t r) {
  return Problem::from_json({{"family", "conv2d"}, {"h", h}, {"w", w}, {"r", r}});
}

}  // namespace

// Each family's GPU reference against its CPU reference on the family's test shapes.
TEST(GpuReference, MatchesTheCpuReference) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  for (const Family* fam : FamilyRegistry::instance().all())
    for (const Problem& p : fam->test_problems()) {
      const auto ops = p.operands();
      if (p.direct_flops() > 2e10) continue;  // the CPU reference is direct: keep it to seconds
      std::vector<DeviceArray<float>> in;
      std::vector<const float*> ptrs;
      std::vector<std::vector<float>> host;
      for (size_t i = 0; i + 1 < ops.size(); ++i) {
        in.emplace_back(size_t(ops[i].elements));
        fill_uniform(in.back().get(), ops[i].elements, 11 + i, nullptr);
        ptrs.push_back(in.back().get());
        host.emplace_back(size_t(ops[i].elements));
        CT_CUDA(cudaMemcpy(host.back().data(), in.back().get(), in.back().bytes(), cudaMemcpyDeviceToHost));
      }
      DeviceArray<double> out(size_t(ops.back().elements));
      gpu_reference(p, ptrs, out.get(), nullptr);
      std::vector<double> gpu(size_t(ops.back().elements));
      CT_CUDA(cudaMemcpy(gpu.data(), out.get(), out.bytes(), cudaMemcpyDeviceToHost));
      const auto cpu = cpu_reference(p, host);
      ASSERT_EQ(cpu.size(), gpu.size()) << p.key();
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
  std::vector<Problem> problems;
  for (const Family* fam : FamilyRegistry::instance().all())
    for (const Problem& p : fam->test_problems()) problems.push_back(p);
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
        for (auto& prog : v->programs(p, v->resolve(p, c, dev))) programs.push_back(prog);
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

// A block of at most 48 KB of dynamic shared memory whose static memory (row_bands' mbarriers) takes it past
// 48 KB needs the opt-in: such a launch failed, CUDA_ERROR_INVALID_VALUE, while kernel_attributes asked for it
// only past 48 KB of dynamic memory alone. Here one stage of 8 rows of 1528 columns (r = 0) with its zero
// borders: 4 * (4 + 8 * 1532) = 49040 bytes.
TEST(GpuVariants, SharedMemoryJustPast48KbLaunches) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  if (dev.max_smem_per_block_optin <= 48 * 1024) GTEST_SKIP() << "this GPU has no shared memory past 48 KB a block";
  JitCache jit(JitCache::default_dir(), dev.arch());
  Runner runner(dev, Ceilings{}, quick(), jit, 2026);
  const Problem p = Problem::from_json({{"family", "conv2d"}, {"b", 2}, {"h", 64}, {"w", 1528}, {"r", 0}});
  const json rec = runner.run(Registry::instance().get("conv2d.row_bands"), p,
                              {{"band", 8}, {"py", 1}, {"threads", 64}, {"stages", 1}});
  EXPECT_EQ(rec["status"], status::ok) << rec.dump().substr(0, 600);
  const int dynamic = rec["kernel"]["dynamic_smem_bytes"], fixed = rec["kernel"]["static_smem_bytes"];
  EXPECT_LE(dynamic, 48 * 1024);
  EXPECT_GT(dynamic + fixed, 48 * 1024) << "the shape no longer crosses 48 KB: " << dynamic << " + " << fixed;
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

// Tensor cores at fp32 accuracy take the 3xTF32 split; with one TF32 product the same kernel is plain TF32
// (rel_l2 about 4e-4 here), which the fp32 check must catch: recorded wrong_result, never chosen.
TEST(GpuVariants, PlainTf32OnTensorCoresIsCaughtAndNeverChosen) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  if (const Status hopper = wgmma_supported(dev); !hopper) GTEST_SKIP() << hopper.reason;
  JitCache jit(JitCache::default_dir(), dev.arch());
  Runner runner(dev, Ceilings{}, quick(), jit, 2026);
  const Variant& v = Registry::instance().get("conv2d.wgmma_toeplitz");
  const Problem p = conv2d(203, 301, 4);
  Config c = {{"pw", 4}, {"ph", 8}, {"warpgroups", 1}, {"batch", 1}, {"min_blocks", 2}};
  const json split = runner.run(v, p, c);
  c["math"] = kMathTf32;
  const json plain = runner.run(v, p, c);
  ASSERT_EQ(split["status"], status::ok) << split.dump().substr(0, 600);
  ASSERT_EQ(plain["status"], status::wrong_result) << plain.dump().substr(0, 600);
  EXPECT_EQ(plain["error"]["nonfinite"], 0u);  // every output written: wrong by rounding, not by omission
  EXPECT_GT(plain["error"]["rel_l2"].get<double>(), 10 * plain["error"]["tolerance"]["rel_l2"].get<double>());
  EXPECT_LT(split["error"]["rel_l2"].get<double>(), split["error"]["tolerance"]["rel_l2"].get<double>());
  std::printf("rel_l2: plain TF32 %.2e, 3xTF32 %.2e (tolerance %.0e)\n", plain["error"]["rel_l2"].get<double>(),
              split["error"]["rel_l2"].get<double>(), split["error"]["tolerance"]["rel_l2"].get<double>());
  const auto choices = select_best({plain, split});
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(choices[0].best["candidate"], split["candidate"]);
}

// The Winograd variants beyond the families' test shapes: both output blocks (2 and 4: blocks reaching past
// the odd edges) and every chunk (one not dividing n: backward-filter's last chunk then holds zero tiles), paddings 0 and 2 (backward-data's transposed padding 2 and 0), odd
// output sizes, more channels than a warp.
TEST(GpuVariants, WinogradOnEveryChunkAndPadding) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  JitCache jit(JitCache::default_dir(), dev.arch());
  Runner runner(dev, Ceilings{}, quick(), jit, 2027);
  const json shapes[] = {{{"n", 5}, {"c", 6}, {"h", 11}, {"w", 8}, {"k", 9}, {"pad_h", 0}, {"pad_w", 2}},
                         {{"n", 9}, {"c", 40}, {"h", 6}, {"w", 5}, {"k", 33}, {"pad_h", 2}, {"pad_w", 0}}};
  int ok = 0;
  for (const char* family : {"layer_fwd", "layer_bwd_data", "layer_bwd_filter"})
    for (json dims : shapes) {
      dims["family"] = family;
      dims["r"] = 3;
      dims["s"] = 3;
      if (std::string(family) == "layer_fwd") dims["bias"] = dims["relu"] = 1;
      const Problem p = Problem::from_json(dims);
      const Variant& v = Registry::instance().get(std::string(family) + ".winograd");
      for (const Config& c : v.space(p, dev).enumerate()) {
        ASSERT_TRUE(v.can_implement(p, c, dev).ok) << p.key() << " " << c.dump();
        const json rec = runner.run(v, p, c);
        EXPECT_EQ(rec["status"], status::ok) << rec.dump().substr(0, 600);
        ok += rec["status"] == status::ok;
      }
    }
  EXPECT_GE(ok, 30);  // chunks 4 and 5 for n = 5; 4, 8 and 9 for n = 9; on the three passes, for both tiles
}

// The tiled FFT variants on every tile size: several tiles a map with cut edge tiles,
// r != s, padding 0 and r - 1, bias with each activation, a batch whose tiles exceed one block's maps.
TEST(GpuVariants, FftOnEveryTile) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  JitCache jit(JitCache::default_dir(), dev.arch());
  Runner runner(dev, Ceilings{}, quick(), jit, 2028);
  const json shapes[] = {{{"n", 3}, {"c", 5}, {"h", 21}, {"w", 13}, {"k", 6}, {"r", 5}, {"s", 3}, {"pad_h", 2}, {"pad_w", 0}},
                         {{"n", 2}, {"c", 70}, {"h", 9}, {"w", 30}, {"k", 33}, {"r", 3}, {"s", 3}, {"pad_h", 0}, {"pad_w", 2}},
                         {{"n", 4}, {"c", 16}, {"h", 23}, {"w", 23}, {"k", 24}, {"r", 7}, {"s", 7}, {"pad_h", 3}, {"pad_w", 3}}};
  int ok = 0, act = 0;
  for (const char* family : {"layer_fwd", "layer_bwd_data", "layer_bwd_filter"})
    for (json dims : shapes) {
      dims["family"] = family;
      if (std::string(family) == "layer_fwd") {
        dims["bias"] = 1;
        dims["relu"] = act++ % 4;
      }
      const Problem p = Problem::from_json(dims);
      const Variant& v = Registry::instance().get(std::string(family) + ".fft");
      for (const Config& c : v.space(p, dev).enumerate()) {
        ASSERT_TRUE(v.can_implement(p, c, dev).ok) << p.key() << " " << c.dump();
        const json rec = runner.run(v, p, c);
        EXPECT_EQ(rec["status"], status::ok) << rec.dump().substr(0, 600);
        ok += rec["status"] == status::ok;
      }
    }
  EXPECT_EQ(ok, 3 * (2 + 3 + 2));  // tiles 16 and 32, 8 to 32, 16 and 32
}

// The warp-specialized wgmma GEMM's persistent CTAs, each taking several row tiles: every gather (filter-tap
// major, the tap table, the per-tap decode, strided backward-data), a tile of one k-tile (fewer than the
// stages), odd and even k-tile counts, both consumer loops (tile_n 64 and 128), bias and ReLU staged once for
// all of a CTA's tiles. The batch is sized from the device so that each CTA takes two tiles or more, which
// the test checks from the plan's own occupancy.
TEST(GpuVariants, PersistentWgmmaCtasTakeSeveralTilesOnEveryGather) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  if (const Status hopper = wgmma_supported(dev); !hopper) GTEST_SKIP() << hopper.reason;
  JitCache jit(JitCache::default_dir(), dev.arch());
  Runner runner(dev, Ceilings{}, quick(), jit, 2029);
  struct Shape {
    const char* family;
    int64_t c, h, k, r, u;
  };
  const Shape shapes[] = {{"layer_fwd", 32, 16, 48, 3, 1},      // tap major, 9 k-tiles
                          {"layer_fwd", 5, 16, 40, 3, 1},       // the tap table, 2 k-tiles
                          {"layer_fwd", 3, 31, 24, 7, 2},       // the per-tap decode, 5 k-tiles
                          {"layer_fwd", 32, 16, 70, 1, 1},      // one k-tile, a partial column tile
                          {"layer_bwd_data", 40, 16, 32, 3, 1},  // tap major over k
                          {"layer_bwd_data", 24, 17, 20, 3, 2}};  // strided: the per-tap decode
  int ok = 0;
  for (const Shape& sh : shapes) {
    const bool forward = std::string(sh.family) == "layer_fwd";
    const int64_t pad = sh.r / 2, out = (sh.h + 2 * pad - sh.r) / sh.u + 1;
    const int64_t rows_per_image = forward ? out * out : sh.h * sh.h;  // the GEMM's rows: y's or dx's pixels
    const int64_t n = 1 + 5 * 64 * int64_t(dev.sms) / rows_per_image;  // over 2.5 tiles a CTA at two CTAs a SM
    json dims = {{"family", sh.family}, {"n", n}, {"c", sh.c}, {"h", sh.h}, {"w", sh.h}, {"k", sh.k},
                 {"r", sh.r}, {"s", sh.r}, {"pad_h", pad}, {"pad_w", pad}, {"u", sh.u}, {"v", sh.u}};
    if (forward) dims["bias"] = dims["relu"] = 1;
    const Problem p = Problem::from_json(dims);
    const auto& v = dynamic_cast<const JitLayerVariant&>(Registry::instance().get(std::string(sh.family) +
                                                                                 ".implicit_gemm_wgmma_ws"));
    for (const int tile_n : {64, 128})
      for (const int stages : {2, 4}) {
        const Config c = {{"math", kMath3xTf32}, {"warpgroups", 1}, {"tile_n", tile_n}, {"stages", stages}};
        ASSERT_TRUE(v.can_implement(p, c, dev).ok) << p.key() << " " << c.dump();
        const json rec = runner.run(v, p, c);
        EXPECT_EQ(rec["status"], status::ok) << rec.dump().substr(0, 600);
        ok += rec["status"] == status::ok;
        for (const LayerLaunch& l : v.launches(LayerShape(p), v.resolve(p, c, dev)))
          if (l.main) {
            const int64_t resident = int64_t(dev.sms) * rec["kernel"]["blocks_per_sm"].get<int64_t>();
            EXPECT_LE(2 * int64_t(persistent_grid_x(l.grid, resident)), int64_t(l.grid.x))
                << p.key() << " " << c.dump() << ": CTAs with under two tiles test nothing new here";
          }
      }
  }
  EXPECT_EQ(ok, 24);
}

// The direct kernels' shapes of work: every rows_per_thread, both window layouts (float4 at 8 pixels a
// thread, scalar at 2), one or two stages, 1 or 3 maps a thread (taps padded to float4), on every test
// shape of the two passes (stride 2, odd sizes, tiles wider and taller than the image, dilated dy).
TEST(GpuVariants, DirectKernelsOnEveryShapeOfWork) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  JitCache jit(JitCache::default_dir(), dev.arch());
  Runner runner(dev, Ceilings{}, quick(), jit, 2028);
  int ok = 0, tried = 0;
  for (const char* name : {"layer_fwd.direct_tiled", "layer_bwd_data.direct"}) {
    const Variant& v = Registry::instance().get(name);
    for (const Problem& p : FamilyRegistry::instance().get(v.family()).test_problems())
      for (const int rows : {1, 2, 4})
        for (const int pix : {2, 8})
          for (const int maps : {1, 3})
            for (const int stages : {1, 2}) {
              // 3 maps a chunk for 2 stages: a last chunk that is partial on most shapes
              const Config c = {{"tile_w", 64},         {"tile_h", 16},          {"maps", maps},
                                {"maps_per_thread", maps}, {"pix_per_thread", pix}, {"rows_per_thread", rows},
                                {"in_chunk", stages == 1 ? 4 : 3}, {"stages", stages}};
              if (!v.can_implement(p, c, dev)) continue;
              ++tried;
              const json rec = runner.run(v, p, c);
              EXPECT_EQ(rec["status"], status::ok) << rec.dump().substr(0, 600);
              ok += rec["status"] == status::ok;
            }
  }
  EXPECT_EQ(ok, tried);
  EXPECT_GE(tried, 80);
}
