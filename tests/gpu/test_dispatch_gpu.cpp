// The shipped fleet table's choice on shapes no run measured, one family at a time: what lookup() returns
// for this GPU runs, and verifies against the float64 reference (the runner poisons and checks the output).
#include <gtest/gtest.h>

#include "harness/device.h"
#include "harness/dispatch.h"
#include "harness/fleet.h"
#include "harness/json_file.h"
#include "harness/records.h"
#include "harness/runner.h"

using namespace convtune;

namespace {

Problem shape(const json& j) { return Problem::from_json(j); }

}  // namespace

TEST(GpuDispatch, ModelChoicesOnUnseenShapesRunAndVerify) {
  if (DeviceInfo::count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine: GPU tests skipped";
  const DeviceInfo dev = DeviceInfo::query(0);
  const DispatchTable table(read_json(std::filesystem::path(CONVTUNE_SOURCE_DIR) / "results/fleet-h100-h200/dispatch.json"));
  const std::string cc = std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor);
  JitCache jit(JitCache::default_dir(), dev.arch());
  MeasureOptions quick;
  quick.cold = false;
  quick.warmup = 1;
  quick.min_samples = quick.max_samples = 2;
  Runner runner(dev, Ceilings{}, quick, jit, 2027);
  const std::vector<json> unseen = {
      {{"family", "conv2d"}, {"h", 1111}, {"w", 777}, {"r", 6}},
      {{"family", "conv2d"}, {"h", 3000}, {"w", 200}, {"r", 13}},
      {{"family", "conv2d"}, {"h", 100}, {"w", 77}, {"r", 2}, {"b", 37}},
      {{"family", "conv1d"}, {"n", 3000001}, {"m", 100}, {"mode", 1}},
      {{"family", "conv1d_parts"}, {"n", 700001}, {"m", 300007}, {"start", 12345}, {"end", 45678}},
      {{"family", "conv2d_separable"}, {"h", 1234}, {"w", 567}, {"r", 4}},
      {{"family", "layer_pool"}, {"n", 3}, {"c", 40}, {"h", 33}, {"w", 29}, {"r", 3}, {"s", 3}, {"pad_h", 1}, {"pad_w", 1},
       {"u", 2}, {"v", 2}, {"op", 1}},
      {{"family", "layer_fwd"}, {"n", 4}, {"c", 32}, {"h", 45}, {"w", 45}, {"k", 48}, {"r", 5}, {"s", 5}, {"pad_h", 2}, {"pad_w", 2}},
      {{"family", "layer_fwd"}, {"n", 2}, {"c", 8}, {"h", 60}, {"w", 60}, {"k", 24}, {"r", 3}, {"s", 3}, {"pad_h", 1}, {"pad_w", 1}},
      {{"family", "layer_bwd_data"}, {"n", 2}, {"c", 4}, {"h", 50}, {"w", 50}, {"k", 16}, {"r", 7}, {"s", 7}, {"pad_h", 3}, {"pad_w", 3}},
      {{"family", "layer_bwd_filter"}, {"n", 3}, {"c", 32}, {"h", 30}, {"w", 30}, {"k", 32}, {"r", 3}, {"s", 3}, {"pad_h", 1}, {"pad_w", 1}},
  };
  int model_rule = 0;
  for (const json& j : unseen) {
    const Problem p = shape(j);
    const DeviceLookup l = lookup_on_device(table, dev.name, cc, p, &dev);
    model_rule += l.lookup.rule == "model";
    ASSERT_TRUE(candidate_can_run(l.lookup.entry, p, dev)) << p.key();
    // The runtime's order: a library may refuse a shape only when asked; the next of the chain then runs.
    bool verified = false;
    for (const json& c : fallback_chain(table.pick(dev.name, cc, p.family), p, &dev, l.lookup)) {
      if (c["config"].is_null()) continue;
      const Variant& v = Registry::instance().get(c["variant"].get<std::string>());
      const json rec = runner.run(v, p, c["config"]);
      if (rec["status"] == status::skipped) continue;
      EXPECT_EQ(rec["status"], status::ok) << c["candidate"] << " on " << p.key() << ": " << rec.dump().substr(0, 400);
      EXPECT_EQ(rec["error"]["nonfinite"], 0u) << p.key();
      std::printf("%s: %s (%s) %s\n", p.key().c_str(), c["candidate"].get<std::string>().c_str(),
                  c["rule"].get<std::string>().c_str(), rec["status"].get<std::string>().c_str());
      verified = rec["status"] == status::ok;
      break;
    }
    EXPECT_TRUE(verified) << p.key();
  }
  EXPECT_GE(model_rule, 8) << "the fleet table's models answered too few of the unseen shapes";
}
