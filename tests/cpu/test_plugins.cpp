// Plug-in variants (harness/plugin*.h) without a GPU: manifests and every bad-manifest case, expressions and
// constraints against device limits, the new-variant templates through NVRTC, planning a spec with a plug-in,
// the provenance records carry, and the bundle a dispatch table carries.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "harness/dispatch.h"
#include "harness/family.h"
#include "harness/json_file.h"
#include "harness/records.h"
#include "harness/plugin.h"
#include "harness/plugin_template.h"
#include "harness/runner.h"
#include "harness/spec.h"
#include "test_support.h"

extern char** environ;

using namespace convtune;
using convtune::test::contains;
using convtune::test::input_error;
namespace fs = std::filesystem;

namespace {

using test::read_text;

// A fresh folder per test.
fs::path scratch(const std::string& name) { return test::fresh_temp_dir("plugins-" + name); }

json template_manifest(const std::string& family) { return json::parse(embedded_source(family + "_plugin.json")); }
std::map<std::string, std::string> template_sources(const std::string& family) {
  return {{"kernel.cuh", embedded_source(family + "_plugin.cuh")}};
}

// The message of parsing the conv2d template with `change` applied.
std::string manifest_error(const std::function<void(json&)>& change) {
  json m = template_manifest("conv2d");
  change(m);
  return input_error([&] { parse_plugin_manifest(m, template_sources("conv2d"), "bad/plugin.json"); });
}

using test::CliResult;

using test::convtune_cli;

using test::conv2d;

// The parameter declarations of `entry` in a kernel source, trimmed ("const float* __restrict__ x", "int n"):
// what a launch passes is the manifest's operands then scalars, and nothing checks the count at run time.
std::vector<std::string> kernel_parameters(const std::string& source, const std::string& entry) {
  const size_t open = source.find(entry + "(");
  if (open == std::string::npos) return {};
  const size_t close = source.find(')', open);
  std::vector<std::string> out;
  std::string text = source.substr(open + entry.size() + 1, close - open - entry.size() - 1);
  for (size_t at = 0; at <= text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    std::string param = text.substr(at, comma - at);
    param.erase(0, param.find_first_not_of(" \n"));
    param.erase(param.find_last_not_of(" \n") + 1);
    out.push_back(param);
    at = comma + 1;
  }
  return out;
}

}  // namespace

TEST(Plugins, ExpressionsEvaluateWithTheirFunctions) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  const std::vector<std::string> names = {"w", "b", "mode"};
  const Symbols s = {{"w", 1000}, {"b", 64}, {"mode", 0}};
  EXPECT_EQ(Expr("ceil_div(w, b)", names).eval(s), 16);
  EXPECT_EQ(Expr("round_up(w, b)", names).eval(s), 1024);
  EXPECT_EQ(Expr("w % b", names).eval(s), 1000 % 64);
  EXPECT_EQ(Expr("mode ? w : b", names).eval(s), 64);
  EXPECT_EQ(Expr("b * b <= 4096 && w > 999", names).eval(s), 1);
  EXPECT_EQ(Expr("min(floor(w / 3), ceil(b / 3))", names).eval(s), 22);
  EXPECT_EQ(Expr("2^10", names).eval(s), 1024);
  try {
    Expr("w * q", names);
    ADD_FAILURE() << "an unknown symbol parsed";
  } catch (const ExprError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown symbol 'q'");
  }
  EXPECT_THROW(Expr("w *", names), ExprError);
}

TEST(Plugins, TemplateManifestParses) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  const auto m = parse_plugin_manifest(template_manifest("conv2d"), template_sources("conv2d"), "t/plugin.json");
  EXPECT_EQ(m->variant, "conv2d.my_kernel");
  EXPECT_EQ(m->entry, "conv2d_plugin");
  EXPECT_EQ(m->main_source, "kernel.cuh");
  ASSERT_EQ(m->space.params().size(), 2u);
  EXPECT_EQ(m->space.size(), 9u);
  EXPECT_EQ(m->defines.size(), 3u);
  ASSERT_EQ(m->constants.size(), 1u);
  EXPECT_EQ(m->constants[0].second, 1);  // the filter operand
  EXPECT_EQ(m->source_hash.size(), 16u);
  // The hash follows the sources: another kernel text is another plug-in version.
  auto other = template_sources("conv2d");
  other["kernel.cuh"] += "\n// changed\n";
  EXPECT_NE(parse_plugin_manifest(template_manifest("conv2d"), other, "t/plugin.json")->source_hash, m->source_hash);
}

// Each bad manifest: one message naming the file, the field, the value and what is allowed.
TEST(Plugins, BadManifestsNameFileFieldValueAndAllowed) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  struct Case {
    std::function<void(json&)> change;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {[](json& m) { m.erase("entry"); }, {"bad/plugin.json: entry: missing"}},
      {[](json& m) { m["family"] = "conv3d"; }, {"family: 'conv3d' is not allowed", "allowed: ", "conv2d"}},
      {[](json& m) { m["operands"] = {"image", "output"}; }, {"operands: [\"image\",\"output\"]", "3 operands", "\"filter\""}},
      {[](json& m) { m["operands"] = {"image", "output", "filter"}; }, {"operands[1]: \"output\"", "in order"}},
      {[](json& m) { m["constraints"][1] = "r <="; }, {"constraints[1]: 'r <=' is not allowed", "does not parse"}},
      {[](json& m) { m["launch"]["grid"][0] = "ceil_div(w, blok_x)"; },
       {"launch.grid[0]: 'ceil_div(w, blok_x)'", "unknown symbol 'blok_x'", "symbols allowed:", "block_x"}},
      {[](json& m) { m["colour"] = "red"; }, {"colour: unknown field; allowed:", "constraints"}},
      {[](json& m) { m["params"]["block_x"] = {16, "wide"}; }, {"params.block_x: [16,\"wide\"]", "integers"}},
      {[](json& m) { m["sources"] = {"../kernel.cuh"}; }, {"sources[0]: \"../kernel.cuh\"", "a file name"}},
      {[](json& m) { m["sources"] = {"missing.cuh"}; }, {"sources[0]: 'missing.cuh'", "cannot be read"}},
      {[](json& m) { m["name"] = "my-kernel"; }, {"name: 'my-kernel' is not allowed", "letters, digits and '_'"}},
      {[](json& m) { m["derived"] = {{"a", "z + 1"}, {"z", "a + 1"}}; }, {"derived.a", "cycle"}},
      {[](json& m) { m["defines"]["SMS"] = "sms"; }, {"defines.SMS: 'sms'", "unknown symbol 'sms'"}},
      {[](json& m) { m["params"]["r"] = {1}; }, {"params.r: 'r'", "taken by a dim"}},
      {[](json& m) { m["constants"] = {{"c_out", "output"}}; }, {"constants.c_out: \"output\"", "an input operand"}},
      {[](json& m) { m["launch"]["block"] = json::array(); }, {"launch.block: []", "1 to 3 expressions"}},
      {[](json& m) { m["scalar_type"] = "float"; }, {"scalar_type: \"float\"", "\"int64\""}},
  };
  for (const auto& c : cases) {
    const std::string e = manifest_error(c.change);
    EXPECT_TRUE(contains(e, "bad/plugin.json: ")) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    for (const auto& part : c.parts) EXPECT_TRUE(contains(e, part)) << "'" << part << "' not in: " << e;
  }
}

TEST(Plugins, ConstraintsAndLaunchLimitsRefuseWithReasons) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  json m = template_manifest("conv2d");
  m["name"] = "limits_probe";
  m["params"]["block_x"] = {32, 64};
  m["params"]["block_y"] = {8, 32};
  m["launch"]["dynamic_smem"] = "block_x * block_y * 64";
  m["constraints"] = {"r <= 8"};  // the thread limit is left to the launch check
  const PluginVariant v(parse_plugin_manifest(m, template_sources("conv2d"), "probe/plugin.json"));
  DeviceInfo dev = DeviceInfo::offline_sm90();
  const Problem p = conv2d(100, 70, 3);
  EXPECT_TRUE(v.can_implement(p, {{"block_x", 32}, {"block_y", 8}}, dev).ok);
  const Status radius = v.can_implement(conv2d(100, 70, 9), {{"block_x", 32}, {"block_y", 8}}, dev);
  EXPECT_EQ(radius.reason, "constraint 'r <= 8' fails (r=9)");
  const Status threads = v.can_implement(p, {{"block_x", 64}, {"block_y", 32}}, dev);
  EXPECT_TRUE(contains(threads.reason, "block of 2048 threads > device limit 1024")) << threads.reason;
  dev.max_smem_per_block_optin = 64 * 1024;  // 32 x 32 x 64 B = 64 KiB fits exactly; a smaller device refuses
  EXPECT_TRUE(v.can_implement(p, {{"block_x", 32}, {"block_y", 32}}, dev).ok);
  dev.max_smem_per_block_optin = 48 * 1024;
  const Status smem = v.can_implement(p, {{"block_x", 32}, {"block_y", 32}}, dev);
  EXPECT_TRUE(contains(smem.reason, "dynamic_smem 'block_x * block_y * 64' = 65536")) << smem.reason;
  EXPECT_FALSE(v.can_implement(p, {{"block_x", "wide"}, {"block_y", 8}}, dev).ok);
  EXPECT_FALSE(v.can_implement({"conv1d", {{"n", 100}, {"m", 3}, {"mode", 1}}}, {{"block_x", 32}, {"block_y", 8}}, dev).ok);
  // The launch, defines and scalars as the plan will use them.
  const auto progs = v.programs(p, {{"block_x", 32}, {"block_y", 8}});
  ASSERT_EQ(progs.size(), 1u);
  EXPECT_EQ(progs[0].options, (std::vector<std::string>{"-DBLOCK_X=32", "-DBLOCK_Y=8", "-DRADIUS=3"}));
  EXPECT_TRUE(contains(progs[0].source, "conv2d.limits_probe"));
}

TEST(Plugins, CostModelAndToleranceComeFromTheManifest) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  json m = template_manifest("conv1d");
  m["name"] = "cost_probe";
  const PluginVariant v(parse_plugin_manifest(m, template_sources("conv1d"), "cost/plugin.json"));
  const Problem valid{"conv1d", {{"n", 20000}, {"m", 10000}, {"mode", 0}}};
  const Cost c = v.cost(valid, {{"threads", 128}});
  EXPECT_DOUBLE_EQ(c.bytes_model, 4.0 * (10001.0 * 10001.0 + 10000.0));
  EXPECT_DOUBLE_EQ(c.flops, valid.direct_flops());
  EXPECT_DOUBLE_EQ(c.bytes_min, valid.min_bytes());
  const Tolerance t = v.tolerance(valid, {{"threads", 128}});
  EXPECT_DOUBLE_EQ(t.rel_l2, 2e-7 * 100.0);
  EXPECT_DOUBLE_EQ(t.max_rel, 2e-6 * 100.0);
}

// Every family with a template: the template as written compiles for sm_90 (compile only, no GPU).
TEST(Plugins, NewVariantTemplatesCompileWithNvrtcForSm90) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  const auto families = plugin_template_families();
  EXPECT_EQ(families, (std::vector<std::string>{"conv1d", "conv1d_parts", "conv2d", "conv2d_separable", "layer_bwd_data",
                                                "layer_bwd_filter", "layer_fwd", "layer_pool"}));
  for (const auto& family : families) {
    const fs::path dir = scratch("template-" + family);
    write_plugin_template(family, "compiled_" + family, dir / "p");
    const auto loaded = load_plugins((dir / "p").string());
    ASSERT_EQ(loaded.size(), 1u);
    const PluginVariant& v = *loaded[0];
    const Problem p = find_family(family).example();
    const DeviceInfo dev = DeviceInfo::offline_sm90();
    int compiled = 0;
    for (const Config& c : v.space(p, dev).enumerate()) {
      if (!v.can_implement(p, c, dev)) continue;
      for (const auto& prog : v.programs(p, c)) {
        std::string log;
        EXPECT_NO_THROW(nvrtc_compile(prog, "sm_90", &log)) << family << " " << prog.describe();
        ++compiled;
      }
      break;  // one config a family: the others differ only in their defines' values
    }
    EXPECT_EQ(compiled, 1) << family;
    // It plans every test shape of its family: some config runs there (its launch and defines evaluate), or
    // the shape is refused by a constraint the manifest states (conv2d's r <= 16) or by its operands (the
    // layer_fwd template takes no bias: a shape with one names both lists), never by a launch or define
    // that fails to evaluate.
    for (const Problem& shape : find_family(family).test_problems()) {
      int runnable = 0;
      std::vector<std::string> refusals;
      for (const Config& c : v.space(shape, dev).enumerate()) {
        const Status s = v.can_implement(shape, c, dev);
        if (!s) {
          refusals.push_back(s.reason);
          continue;
        }
        EXPECT_NO_THROW(v.programs(shape, c)) << family << " " << shape.key() << " " << c.dump();
        ++runnable;
      }
      if (runnable == 0)
        for (const auto& why : refusals)
          EXPECT_TRUE(why.rfind("constraint '", 0) == 0 || why.find("operands are") != std::string::npos)
              << family << " " << shape.key() << ": " << why;
    }
  }
}

// Every family has a template; its manifest names the family's operands (one fewer is refused, so a template
// with a wrong count fails here and in the test above), and its kernel takes exactly those operands (inputs
// const, the output last and writable) and then the manifest's scalars as integers.
TEST(Plugins, EveryTemplateKernelTakesItsFamilysOperandsThenItsScalars) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  std::vector<std::string> all_families;
  for (const Family* f : FamilyRegistry::instance().all()) all_families.push_back(f->name());
  EXPECT_EQ(plugin_template_families(), all_families);
  for (const auto& family : plugin_template_families()) {
    const json manifest = template_manifest(family);
    std::vector<std::string> operand_names;
    for (const Operand& o : find_family(family).operands(find_family(family).example())) operand_names.push_back(o.name);
    EXPECT_EQ(manifest["operands"].get<std::vector<std::string>>(), operand_names) << family;

    json short_of_one = manifest;
    short_of_one["operands"].erase(short_of_one["operands"].size() - 1);
    const std::string refused =
        input_error([&] { parse_plugin_manifest(short_of_one, template_sources(family), "t/plugin.json"); });
    EXPECT_TRUE(contains(refused, std::to_string(operand_names.size()) + " operands")) << family << ": " << refused;

    const std::vector<std::string> params =
        kernel_parameters(template_sources(family).at("kernel.cuh"), manifest["entry"].get<std::string>());
    ASSERT_EQ(params.size(), operand_names.size() + manifest["scalars"].size()) << family << ": " << json(params).dump();
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string& param = params[i];
      if (i + 1 < operand_names.size()) EXPECT_EQ(param.rfind("const float*", 0), 0u) << family << " input: " << param;
      else if (i + 1 == operand_names.size()) EXPECT_EQ(param.rfind("float*", 0), 0u) << family << " output: " << param;
      else EXPECT_EQ(param.rfind("int ", 0), 0u) << family << " scalar: " << param;
    }
  }
}

TEST(Plugins, NewVariantRefusesAndWritesNothing) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  const fs::path dir = scratch("refusals");
  EXPECT_TRUE(contains(input_error([&] { write_plugin_template("conv3d", "x", dir / "a"); }),
                       "family 'conv3d' has no template; allowed: conv1d, conv1d_parts, conv2d, conv2d_separable, "
                       "layer_bwd_data, layer_bwd_filter, layer_fwd, layer_pool"));
  EXPECT_TRUE(contains(input_error([&] { write_plugin_template("conv2d", "naive", dir / "a"); }), "is a variant already"));
  EXPECT_TRUE(contains(input_error([&] { write_plugin_template("conv2d", "2x", dir / "a"); }), "name: '2x'"));
  EXPECT_FALSE(fs::exists(dir / "a"));
  write_plugin_template("conv2d", "twice", dir / "b");
  EXPECT_TRUE(contains(input_error([&] { write_plugin_template("conv2d", "twice", dir / "b"); }), "holds a plugin.json"));
}

// A spec with a plug-in plans its candidates like a built-in's: --plugins and the spec key.
TEST(Plugins, DryRunPlansThePluginsCandidates) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  const fs::path dir = scratch("plan");
  ASSERT_EQ(convtune_cli({"new-variant", "conv2d", "planned", "-o", (dir / "plug").string()}, dir).exit_code, 0);
  std::ofstream(dir / "spec.json") << R"({"name": "p", "problems": [{"family": "conv2d", "h": 64, "w": 64, "r": [3, 17]}],
                                          "variants": ["conv2d.planned"]})";
  const CliResult r = convtune_cli({"sweep", (dir / "spec.json").string(), "--dry-run", "--json", "--plugins", (dir / "plug").string()}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json plan = json::parse(r.out);
  int runnable = 0, skipped = 0;
  for (const auto& c : plan["candidates"]) {
    EXPECT_TRUE(contains(c["candidate"].get<std::string>(), "conv2d.planned[block_x=")) << c.dump();
    if (c["status"] == "runnable") {
      ++runnable;
      EXPECT_TRUE(contains(c["problem"].get<std::string>(), "r=3"));
    } else {
      ++skipped;
      EXPECT_EQ(c["reason"], "constraint 'r <= 16' fails (r=17)");
    }
  }
  EXPECT_EQ(runnable, 9);
  EXPECT_EQ(skipped, 9);
  // The spec key, relative to the spec's folder.
  std::ofstream(dir / "spec2.json") << R"({"name": "p", "problems": [{"family": "conv2d", "h": 64, "w": 64, "r": 3}],
                                           "variants": ["conv2d.planned"], "plugins": ["plug"]})";
  const CliResult r2 = convtune_cli({"sweep", (dir / "spec2.json").string(), "--dry-run", "--json"}, dir);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(json::parse(r2.out)["candidates"].size(), 9u);
  const CliResult list = convtune_cli({"list", "--family", "conv2d", "--plugins", (dir / "plug").string()}, dir);
  EXPECT_TRUE(contains(list.out, "conv2d.planned  (plug-in " + (dir / "plug" / "plugin.json").string())) << list.out;
}

// A bad plug-in through the CLI: exit 2, one line naming the file and field, nothing written.
TEST(Plugins, BadPluginOnTheCommandLineIsOneLineAndExit2) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  const fs::path dir = scratch("badcli");
  ASSERT_EQ(convtune_cli({"new-variant", "conv2d", "broken", "-o", (dir / "plug").string()}, dir).exit_code, 0);
  json m = json::parse(read_text(dir / "plug" / "plugin.json"));
  m["launch"]["block"][0] = "block_x +";
  std::ofstream(dir / "plug" / "plugin.json") << m.dump(2);
  std::ofstream(dir / "spec.json") << R"({"name": "p", "problems": [{"family": "conv2d", "h": 64, "w": 64, "r": 3}]})";
  const CliResult r = convtune_cli({"sweep", (dir / "spec.json").string(), "--plugins", (dir / "plug").string(),
                                    "--results", (dir / "results").string()}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(contains(r.err, (dir / "plug" / "plugin.json").string() + ": launch.block[0]: 'block_x +'")) << r.err;
  EXPECT_FALSE(fs::exists(dir / "results"));
  const CliResult missing = convtune_cli({"list", "--plugins", (dir / "nowhere").string()}, dir);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(contains(missing.err, "--plugins: '" + (dir / "nowhere").string() + "' is not a plug-in")) << missing.err;
}

// Records say where a plug-in came from; a dispatch table carries the plug-ins it names, and loading that
// bundle again gives the same variant.
TEST(Plugins, RecordsCarryProvenanceAndTablesCarryTheBundle) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  const fs::path dir = scratch("provenance");
  write_plugin_template("conv2d", "traced", dir / "plug");
  const auto loaded = load_plugins((dir / "plug").string());
  ASSERT_EQ(loaded.size(), 1u);
  const PluginVariant& v = *loaded[0];
  const json rec = Runner::skeleton(v, conv2d(64, 64, 3), {{"block_x", 32}, {"block_y", 4}}, Ceilings{});
  EXPECT_EQ(rec["plugin"]["folder"], (dir / "plug").string());
  EXPECT_EQ(rec["plugin"]["manifest"], (dir / "plug" / "plugin.json").string());
  EXPECT_EQ(rec["plugin"]["source_hash"], v.manifest().source_hash);
  EXPECT_FALSE(Runner::skeleton(Registry::instance().get("conv2d.naive"), conv2d(64, 64, 3),
                                {{"block_x", 32}, {"block_y", 4}}, Ceilings{}).contains("plugin"));

  const json summary = {{"plugins", loaded_plugin_bundles()}};
  const json table = {{"entries", {{{"variant", "conv2d.traced"}}}}};
  const json carried = plugins_named_by(table, summary);
  ASSERT_EQ(carried.size(), 1u);
  EXPECT_EQ(carried[0]["sources"]["kernel.cuh"], read_text(dir / "plug" / "kernel.cuh"));
  EXPECT_TRUE(plugins_named_by({{"entries", {{{"variant", "conv2d.naive"}}}}}, summary).empty());
  EXPECT_NO_THROW(load_plugin_bundles({{"plugins", carried}}, "dispatch.json"));  // the same version: no change
  json edited = carried;
  edited[0]["sources"]["kernel.cuh"] = "// edited\n";
  EXPECT_TRUE(contains(input_error([&] { load_plugin_bundles({{"plugins", edited}}, "dispatch.json"); }),
                       "dispatch.json: plugins[0]: provenance.source_hash"));
}

// examples/plugins/conv2d_constant is conv2d.constant's kernel under a manifest: it plans the same candidates
// with the same refusals, cost and tolerance (the GPU script compares their records and times).
TEST(Plugins, ConstantAsAPluginPlansAsTheBuiltInDoes) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  const auto loaded = load_plugins(std::string(CONVTUNE_SOURCE_DIR) + "/examples/plugins/conv2d_constant");
  ASSERT_EQ(loaded.size(), 1u);
  const Variant& plugin = *loaded[0];
  const Variant& builtin = Registry::instance().get("conv2d.constant");
  DeviceInfo small = DeviceInfo::offline_sm90();
  small.max_threads_per_block = 512;
  for (const DeviceInfo& dev : {DeviceInfo::offline_sm90(), small})
    for (const Problem& p : {conv2d(1000, 999, 3), conv2d(65536, 7, 2), conv2d(64, 64, 16), conv2d(64, 64, 17)}) {
      ASSERT_EQ(plugin.space(p, dev).enumerate(), builtin.space(p, dev).enumerate());
      for (const Config& c : builtin.space(p, dev).enumerate()) {
        EXPECT_EQ(plugin.can_implement(p, c, dev).ok, builtin.can_implement(p, c, dev).ok) << p.key() << " " << c.dump();
        if (!builtin.can_implement(p, c, dev)) continue;
        EXPECT_EQ(plugin.cost(p, c).to_json(), builtin.cost(p, c).to_json());
        EXPECT_EQ(plugin.tolerance(p, c).to_json(), builtin.tolerance(p, c).to_json());
        auto options = [&](const Variant& v) {  // the same defines; their order does not matter
          auto o = v.programs(p, c)[0].options;
          std::sort(o.begin(), o.end());
          return o;
        };
        EXPECT_EQ(options(plugin), options(builtin));
      }
    }
  EXPECT_EQ(plugin.complexity(), builtin.complexity());
}

// A run whose candidates are a plug-in's (a shipped H100 run's conv2d.constant records, renamed to the example
// plug-in that holds the same kernel): its table names the plug-in, carries its sources, and looks it up.
TEST(Plugins, ARunOfAPluginExportsATableThatCarriesItAndLooksItUp) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  const fs::path shipped = fs::path(CONVTUNE_SOURCE_DIR) / "results/nvidia-h100-80gb-hbm3/conv2d-20261126-041142";
  const auto loaded = load_plugins(std::string(CONVTUNE_SOURCE_DIR) + "/examples/plugins/conv2d_constant");
  ASSERT_EQ(loaded.size(), 1u);
  const fs::path run = scratch("export");
  json summary = read_json(shipped / "summary.json");
  summary["plugins"] = json::array({plugin_bundle(*loaded[0])});
  std::ofstream(run / "summary.json") << summary.dump();
  std::ofstream records(run / "records.jsonl");
  size_t renamed = 0;
  for (json r : read_records(shipped / "records.jsonl").records) {
    if (r["variant"] != "conv2d.constant") continue;
    r["variant"] = "conv2d.constant_plugin";
    r["candidate"] = candidate_name("conv2d.constant_plugin", r["config"]);
    r["plugin"] = loaded[0]->provenance();
    records << r.dump() << "\n";
    ++renamed;
  }
  records.close();
  ASSERT_GT(renamed, 0u);
  export_run(run);
  const json table = read_json(run / "dispatch.json");
  ASSERT_FALSE(table["entries"].empty());
  for (const auto& e : table["entries"]) EXPECT_EQ(e["variant"], "conv2d.constant_plugin");
  ASSERT_EQ(table["plugins"].size(), 1u);
  EXPECT_EQ(table["plugins"][0]["sources"]["kernel.cuh"], loaded[0]->manifest().sources.at("kernel.cuh"));
  const Problem p = Problem::from_json(table["entries"][0]["problem"]);
  const DeviceInfo dev = DeviceInfo::offline_sm90();
  const Lookup exact = lookup(table, p, &dev);
  EXPECT_EQ(exact.rule, "exact");
  EXPECT_EQ(exact.entry["variant"], "conv2d.constant_plugin");
  // A shape the run did not measure, on this device: a plug-in candidate that can run it (can_implement).
  const Lookup unseen = lookup(table, conv2d(777, 1500, p.at("r")), &dev);
  EXPECT_EQ(unseen.entry["variant"], "conv2d.constant_plugin") << unseen.rule;
  // The table alone brings the plug-in back (the same version: nothing changes).
  EXPECT_EQ(load_plugins((run / "dispatch.json").string()).size(), loaded_plugins().size());
}

// A plug-in of several files: the compiled one #includes its own header and an embedded helper by name, and
// the cache key follows the header's text.
TEST(Plugins, SourcesIncludeTheirHeadersAndEmbeddedHelpers) {
  if (!expressions_available()) GTEST_SKIP() << expressions_hint();
  const fs::path dir = scratch("headers");
  write_plugin_template("conv2d", "with_header", dir);
  json m = json::parse(read_text(dir / "plugin.json"));
  m["sources"] = {"kernel.cuh", "tap.cuh"};
  std::ofstream(dir / "plugin.json") << m.dump(2);
  std::string kernel = read_text(dir / "kernel.cuh");
  kernel.replace(kernel.find("acc += c_filter[i * FW + j] * in[(long long)y * w + x];"), 55,
                 "acc = tap(acc, c_filter[i * FW + j], in[(long long)y * w + x]);");
  std::ofstream(dir / "kernel.cuh") << "#include \"tap.cuh\"\n#include \"async_copy.cuh\"\n" << kernel;
  std::ofstream(dir / "tap.cuh") << "__device__ inline float tap(float acc, float f, float x) { return fmaf(f, x, acc); }\n";
  const PluginVariant& v = *load_plugins(dir.string()).at(0);
  const JitProgram prog = v.programs(conv2d(64, 64, 2), {{"block_x", 32}, {"block_y", 4}}).at(0);
  EXPECT_NO_THROW(nvrtc_compile(prog, "sm_90"));
  JitCache a(dir / "cache", "sm_90");
  a.cubin(prog);
  EXPECT_EQ(a.compiles(), 1);
  a.cubin(prog);
  EXPECT_EQ(a.hits(), 1);  // the same texts: from the disk cache
}
