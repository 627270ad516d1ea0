// Plug-in variants on the GPU: each family's new-variant template, as written, verifies against the family's
// float64 reference on every test shape and config (the runner poisons the output and uses fresh inputs);
// a wrong plug-in is recorded wrong_result, one that does not compile compile_error with NVRTC's log.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/device.h"
#include "harness/family.h"
#include "harness/jit_runtime_source.h"
#include "harness/plugin.h"
#include "harness/plugin_template.h"
#include "harness/records.h"
#include "harness/runner.h"
#include "tests/gpu/gpu_test_support.h"

using namespace convtune;
using test_gpu::have_gpu;
using test_gpu::quick;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("convtune-plugins-gpu-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  return dir;
}

// The family's template under `name`, its kernel text changed by `edit`, ready to run but not registered: the
// GPU suite is one process, and the other tests walk the registry (a wrong plug-in there would fail them).
const PluginVariant& template_plugin(const std::string& family, const std::string& name,
                                     const std::function<void(std::string&)>& edit = {}) {
  const fs::path dir = scratch(name);
  write_plugin_template(family, name, dir);
  if (edit) {
    std::ifstream in(dir / "kernel.cuh");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    edit(text);
    std::ofstream(dir / "kernel.cuh") << text;
  }
  static std::vector<std::unique_ptr<PluginVariant>> kept;
  kept.push_back(std::make_unique<PluginVariant>(read_plugin_folder(dir)));
  const PluginManifest& m = kept.back()->manifest();
  std::map<std::string, std::string> headers = m.sources;
  headers.erase(m.main_source);
  add_runtime_source(kept.back()->jit_source(), m.sources.at(m.main_source), headers);
  return *kept.back();
}

// Shapes the family's own test_problems() leave out that a plain template kernel's index arithmetic could get
// wrong: strides past the window (pixels no output reads), padding on one side only, a slice at the very end
// of the full convolution, a radius larger than the image. Added to the family's shapes, not instead of them.
std::vector<Problem> template_extra_shapes(const std::string& family) {
  std::vector<json> shapes;
  if (family == "conv2d_separable")
    shapes = {json{{"h", 1}, {"w", 1}, {"r", 0}}, json{{"h", 5}, {"w", 3}, {"r", 4}}, json{{"h", 33}, {"w", 1000}, {"r", 1}}};
  else if (family == "conv1d_parts")
    shapes = {json{{"n", 7}, {"m", 300}, {"start", 5}, {"end", 200}},
              json{{"n", 300}, {"m", 7}, {"start", 299}, {"end", 306}},
              json{{"n", 1}, {"m", 1000}, {"start", 999}, {"end", 1000}}};
  else if (family == "layer_pool")  // n c h w r s pad_h pad_w u v op
    for (const auto& v : std::vector<std::vector<int>>{{1, 2, 10, 11, 3, 4, 1, 2, 3, 2, 2},
                                                       {2, 1, 6, 6, 2, 2, 1, 0, 1, 1, 0},
                                                       {1, 3, 11, 9, 2, 2, 1, 1, 3, 3, 1}})
      shapes.push_back(json{{"n", v[0]}, {"c", v[1]}, {"h", v[2]}, {"w", v[3]}, {"r", v[4]}, {"s", v[5]},
                        {"pad_h", v[6]}, {"pad_w", v[7]}, {"u", v[8]}, {"v", v[9]}, {"op", v[10]}});
  else if (family == "layer_bwd_data" || family == "layer_bwd_filter")  // n c h w k r s pad_h pad_w u v
    for (const auto& v : std::vector<std::vector<int>>{{1, 2, 11, 10, 3, 2, 2, 1, 0, 3, 3},
                                                       {2, 3, 8, 9, 4, 5, 3, 4, 2, 1, 2},
                                                       {1, 1, 5, 6, 2, 1, 3, 0, 2, 2, 1}})
      shapes.push_back(json{{"n", v[0]}, {"c", v[1]}, {"h", v[2]}, {"w", v[3]}, {"k", v[4]}, {"r", v[5]}, {"s", v[6]},
                        {"pad_h", v[7]}, {"pad_w", v[8]}, {"u", v[9]}, {"v", v[10]}, {"precision", 0}});
  std::vector<Problem> out;
  for (json shape : shapes) {
    shape["family"] = family;
    out.push_back(Problem::from_json(shape, "template_extra_shapes"));
  }
  return out;
}

}  // namespace

TEST(GpuPlugins, EveryTemplateVerifiesOnEveryTestShape) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  JitCache jit(JitCache::default_dir(), dev.arch());
  Runner runner(dev, Ceilings{}, quick(), jit, 2026);
  for (const auto& family : plugin_template_families()) {
    const PluginVariant& v = template_plugin(family, "gpu_" + family);
    int ok = 0;
    std::vector<Problem> shapes = find_family(family).test_problems();
    for (const Problem& p : template_extra_shapes(family)) shapes.push_back(p);
    for (const Problem& p : shapes)
      for (const Config& c : v.space(p, dev).enumerate()) {
        if (!v.can_implement(p, c, dev)) continue;
        const json rec = runner.run(v, p, c);
        EXPECT_EQ(rec["status"], status::ok) << rec["candidate"] << " @ " << p.key() << ": " << rec.value("reason", "")
                                             << " " << rec.value("error", json()).dump();
        EXPECT_EQ(rec["plugin"]["source_hash"], v.manifest().source_hash);
        ok += rec["status"] == status::ok;
      }
    EXPECT_GT(ok, 0) << family;
  }
}

TEST(GpuPlugins, AWrongPluginIsWrongResultAndABrokenOneCompileError) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  JitCache jit(JitCache::default_dir(), dev.arch());
  Runner runner(dev, Ceilings{}, quick(), jit, 2026);
  const Problem p = Problem::from_json({{"family", "conv2d"}, {"h", 67}, {"w", 129}, {"r", 2}});
  const Config c = {{"block_x", 32}, {"block_y", 4}};
  // The last column is left as the runner poisoned it: the check must see it.
  const PluginVariant& wrong = template_plugin("conv2d", "gpu_wrong", [](std::string& k) {
    k.replace(k.find("if (row >= h || col >= w) return;"), 33, "if (row >= h || col >= w - 1) return;");
  });
  EXPECT_EQ(runner.run(wrong, p, c)["status"], status::wrong_result);
  const PluginVariant& broken = template_plugin("conv2d", "gpu_broken", [](std::string& k) {
    k.replace(k.find("float acc = 0.0f;"), 17, "float acc = undeclared_name;");
  });
  const json rec = runner.run(broken, p, c);
  EXPECT_EQ(rec["status"], status::compile_error);
  EXPECT_NE(rec.value("log", "").find("undeclared_name"), std::string::npos) << rec.dump();
}
