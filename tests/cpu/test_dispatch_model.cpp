// The dispatch table's performance model and the one rule set: fitting is deterministic, lookup never returns
// a candidate that cannot run, the exported header's select() and lookup() agree, corrupt models are refused,
// and cross-validation on a shipped run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <unistd.h>

#include "harness/cross_validate.h"
#include "harness/dispatch.h"
#include "harness/dispatch_table.h"
#include "harness/family.h"
#include "harness/fleet.h"
#include "harness/json_file.h"
#include "harness/perf_model.h"
#include "harness/records.h"
#include "test_support.h"

namespace convtune {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::input_error;

// A shipped exhaustive run with several shapes of every family (conv2d, conv1d, parts, layers, pooling).
const fs::path kRun = fs::path(CONVTUNE_SOURCE_DIR) / "results/nvidia-h100-80gb-hbm3/default-20261126-052059";

struct Shipped {
  json summary;
  std::vector<json> records;
  json table;  // with its model
};

const Shipped& shipped();

// The shipped table as the run's own GPU (an H100) sees it.
struct OnDevice {
  DeviceInfo dev;
  DispatchTable table;
  DispatchTable::Pick pick;
  OnDevice()
      : dev(DeviceInfo::from_json(shipped().summary["device"])), table(shipped().table), pick(table.pick(dev.name, "9.0", "")) {}
};

// Where this test binary's fit of the shipped run is kept for the other test processes (ctest runs the tests
// in several shards, and a developer one test at a time: the fit takes 5 s). Named by the binary's size and time, so that a rebuild
// (or a mutant's relink) fits again; empty where /proc/self/exe cannot be read.
fs::path cached_fit_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const auto size = fs::file_size(exe, ec);
  if (ec) return {};
  const auto time = fs::last_write_time(exe, ec).time_since_epoch().count();
  if (ec) return {};
  return fs::temp_directory_path() /
         ("convtune-test-shipped-fit-" + std::to_string(size) + "-" + std::to_string(time) + ".json");
}

const Shipped& shipped() {
  static const Shipped s = [] {
    Shipped out{read_json(kRun / "summary.json"), read_records(kRun / "records.jsonl").records, nullptr};
    const fs::path cache = cached_fit_path();
    std::error_code ec;
    if (!cache.empty() && fs::exists(cache, ec)) {
      try {
        out.table = read_json(cache);
        return out;
      } catch (const std::exception&) {  // torn or foreign: fit again
      }
    }
    out.table = make_dispatch(out.summary, out.records);
    if (!cache.empty()) {
      try {
        write_json_atomically(cache, out.table);
      } catch (const std::exception&) {  // a read-only temp folder: every process fits
      }
    }
    return out;
  }();
  return s;
}


using test::conv2d;

// Random valid shapes of every family the table has a model for, none of them measured by the run.
std::vector<Problem> random_shapes(const json& table, int per_family, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Problem> out;
  for (const auto& [family, model] : table.at("model").at("families").items())
    for (int i = 0; i < per_family; ++i) {
      // A measured shape of the family with each dim scaled by 2^[-1.5, 1.5] (flags and radii kept in range).
      const auto& entries = table.at("entries");
      std::vector<const json*> of_family;
      for (const json& e : entries)
        if (e.at("family") == family) of_family.push_back(&e);
      const json& base = of_family[rng() % of_family.size()]->at("problem");
      Problem p = Problem::from_json(base);
      for (const auto& d : p.type().dims()) {
        if (d.max <= 1 || d.name == "mode" || d.name == "precision") continue;
        const double scale = std::exp2(std::uniform_real_distribution<double>(-1.5, 1.5)(rng));
        p.dims[d.name] = std::clamp<int64_t>(int64_t(double(p.at(d.name)) * scale), d.min, d.max);
      }
      try {
        validate(p, "shape");
        out.push_back(p);
      } catch (const InputError&) {
      }
    }
  return out;
}

// The shipped run's records of one family.
std::vector<json> shipped_records_of(const std::string& family) {
  std::vector<json> out;
  for (const json& r : shipped().records)
    if (r.value("family", "") == family) out.push_back(r);
  return out;
}

TEST(DispatchModel, FitIsDeterministicAndIgnoresRecordOrder) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const Shipped& s = shipped();
  ASSERT_TRUE(s.table.contains("model"));
  std::vector<json> reversed(s.records.rbegin(), s.records.rend());
  EXPECT_EQ(make_dispatch(s.summary, reversed).dump(), s.table.dump());
  // Every family with three or more shapes has a model with trees and candidates; parts (2 shapes) none.
  EXPECT_FALSE(s.table["model"]["families"].contains("conv1d_parts"));
  for (const char* f : {"conv2d", "conv1d", "layer_fwd", "layer_bwd_data", "layer_bwd_filter"}) {
    ASSERT_TRUE(s.table["model"]["families"].contains(f)) << f;
    const json& m = s.table["model"]["families"][f];
    EXPECT_GT(m["trees"].size(), 10u) << f;
    EXPECT_GT(m["candidates"].size(), 1u) << f;
  }
}

TEST(DispatchModel, CandidatesAreKeptByCountThenByTheProblemsTheyBringNearTheBest) {
  // By count: a (near the best on three problems), b (two of those), d (one of those), c (one no other is near
  // on), e (none).
  const std::map<std::string, std::set<std::string>> near = {
      {"a", {"p1", "p2", "p3"}}, {"b", {"p1", "p2"}}, {"c", {"p4"}}, {"d", {"p1"}}, {"lib", {"p4"}}};
  const std::vector<std::string> by_count = {"a", "b", "d", "c", "e"};
  EXPECT_EQ(cover_order({}, by_count, near, 3, 0), by_count);
  // One slot of three reserved: c, which brings p4, takes it ahead of d.
  EXPECT_EQ(cover_order({}, by_count, near, 3, 1), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  // ... unless a library kept ahead of them is near on p4 already: then nothing is brought, and count decides.
  EXPECT_EQ(cover_order({"lib"}, by_count, near, 3, 1), by_count);
  // All reserved: a set cover (a, then c), then the rest by count.
  EXPECT_EQ(cover_order({}, by_count, near, 4, 4), (std::vector<std::string>{"a", "c", "b", "d", "e"}));
  EXPECT_EQ(cover_order({}, {}, near, 4, 2), std::vector<std::string>{});
}

// A fit's candidate list, fast: one tree of one level (the candidates do not depend on the trees), the lookup's
// 8 and `tune` listed in all.
ModelOptions candidate_list_options(size_t cover, size_t tune) {
  ModelOptions o;
  o.rounds = 1;
  o.depth = 1;
  o.max_candidates = 8;
  o.tune_candidates = tune;
  o.cover = cover;
  return o;
}

// The cover in a fit: with slots reserved, the kept candidates differ from those by count alone, libraries
// still first, never more than max_candidates.
TEST(DispatchModel, ReservedSlotsChangeWhichCandidatesAFitKeeps) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const Shipped& s = shipped();
  const std::vector<json> conv2d = shipped_records_of("conv2d");
  auto kept = [&](size_t cover) {
    const ModelOptions o = candidate_list_options(cover, 0);  // the lookup's alone
    std::vector<std::string> names;
    bool libraries_first = true, seen_own = false;
    const json fit = fit_models(s.table, conv2d, o);
    for (const json& c : fit["families"]["conv2d"]["candidates"]) {
      const bool library = Registry::instance().get(c["variant"].get<std::string>()).library();
      libraries_first = libraries_first && !(library && seen_own);
      seen_own = seen_own || !library;
      names.push_back(c["candidate"].get<std::string>());
    }
    EXPECT_TRUE(libraries_first) << cover;
    EXPECT_LE(names.size(), 8u);
    return std::set<std::string>(names.begin(), names.end());
  };
  EXPECT_NE(kept(0), kept(4));
}

// tune_candidates lists more candidates after the lookup's, for first-use tuning: the lookup's are the same
// ones in the same order, the table says how many they are, and the rules rank only them for a lookup.
TEST(DispatchModel, TuningCandidatesFollowTheLookupsUnchanged) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const Shipped& s = shipped();
  const std::vector<json> conv2d = shipped_records_of("conv2d");
  auto fit = [&](size_t tune) {
    return fit_models(s.table, conv2d, candidate_list_options(ModelOptions().cover, tune))["families"]["conv2d"];
  };
  const json lookup_only = fit(0), longer = fit(24);
  EXPECT_FALSE(lookup_only.contains("lookup_candidates"));
  ASSERT_EQ(lookup_only["candidates"].size(), 8u);
  ASSERT_GT(longer["candidates"].size(), 8u);
  EXPECT_LE(longer["candidates"].size(), 24u);
  EXPECT_EQ(longer["lookup_candidates"], 8);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(longer["candidates"][i], lookup_only["candidates"][i]) << i;
}

// others = false: the model trains on the lookup's candidates' rows only, one a (problem, candidate) that has
// an ok full-fidelity record; the default trains on every such row.
TEST(DispatchModel, OthersFalseTrainsOnTheCandidatesRowsOnly) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const Shipped& s = shipped();
  const std::vector<json> conv2d = shipped_records_of("conv2d");
  ModelOptions o;
  o.rounds = 1;
  o.depth = 1;
  auto rows_of = [&](const json& fit) { return fit["families"]["conv2d"]["fit"]["rows"].get<size_t>(); };
  const json all = fit_models(s.table, conv2d, o);
  o.others = false;
  const json only = fit_models(s.table, conv2d, o);
  std::set<std::string> names;  // the lookup's candidates (those listed for first-use tuning only are not trained on)
  const json& listed = only["families"]["conv2d"]["candidates"];
  for (size_t i = 0; i < listed.size() && i < o.max_candidates; ++i) names.insert(listed[i]["candidate"].get<std::string>());
  std::set<std::pair<std::string, std::string>> every, of_candidates;
  for (const json& r : conv2d) {
    if (r.value("status", "") != "ok" || !r.contains("time") || r.value("fidelity", "full") == "brief") continue;
    const std::pair<std::string, std::string> row{r["problem_key"].get<std::string>(), r["candidate"].get<std::string>()};
    every.insert(row);
    if (names.count(row.second)) of_candidates.insert(row);
  }
  EXPECT_EQ(rows_of(all), every.size());
  EXPECT_EQ(rows_of(only), of_candidates.size());
  EXPECT_LT(of_candidates.size(), every.size());
  EXPECT_EQ(only["families"]["conv2d"]["fit"]["others"], false);
  EXPECT_FALSE(all["families"]["conv2d"]["fit"].contains("others"));  // fits before the option read the same
}

TEST(DispatchModel, ParallelTreesAndTheSeedReachTheFit) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const Shipped& s = shipped();
  const std::vector<json> conv1d = shipped_records_of("conv1d");
  ModelOptions o;
  o.rounds = 2;
  o.depth = 3;
  const auto model = [&](const ModelOptions& opts) { return fit_models(s.table, conv1d, opts)["families"]["conv1d"]; };
  const json plain = model(o);
  o.parallel = 3;
  o.subsample = 0.5;
  o.seed = 1;
  const json bagged = model(o), again = model(o);
  o.seed = 2;
  const json reseeded = model(o);
  // Each round adds `parallel` trees, to the regression and to the classifier alike.
  EXPECT_EQ(plain["trees"].size(), 4u);
  EXPECT_EQ(bagged["trees"].size(), 12u);
  EXPECT_EQ(bagged["fit"]["parallel"], 3);
  EXPECT_EQ(bagged["fit"]["seed"], 1);
  EXPECT_FALSE(plain["fit"].contains("parallel"));  // fits before the options read the same
  EXPECT_FALSE(plain["fit"].contains("seed"));
  EXPECT_EQ(bagged["trees"].dump(), again["trees"].dump());  // a seed is deterministic
  EXPECT_NE(bagged["trees"].dump(), reseeded["trees"].dump());  // and draws other subsamples than another
}

// A candidate that gave a wrong result on any training shape is never one the model may choose, however
// fast it was elsewhere.
TEST(DispatchModel, ACandidateThatFailedOnAnyShapeIsNoModelCandidate) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const Shipped& s = shipped();
  std::vector<json> conv1d = shipped_records_of("conv1d");
  auto candidates = [](const json& table) {
    std::set<std::string> out;
    for (const json& c : table.at("model").at("families").at("conv1d").at("candidates"))
      out.insert(c.at("candidate").get<std::string>());
    return out;
  };
  const json before = make_dispatch(s.summary, conv1d);
  const std::string fast = before.at("model").at("families").at("conv1d").at("candidates").at(0).at("candidate");
  ASSERT_TRUE(candidates(before).count(fast));
  for (const json& r : conv1d)
    if (r.at("candidate") == fast && r.value("status", "") == "ok") {
      json wrong = r;
      wrong["status"] = "wrong_result";
      wrong.erase("time");
      conv1d.push_back(wrong);  // on one problem; ok records of it on the others stay
      break;
    }
  EXPECT_FALSE(candidates(make_dispatch(s.summary, conv1d)).count(fast)) << fast;
}

TEST(DispatchModel, ExactShapesKeepTheirMeasuredChoice) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const json& t = shipped().table;
  for (const json& e : t["entries"]) {
    const Lookup l = lookup(t, Problem::from_json(e["problem"]));
    EXPECT_EQ(l.rule, "exact");
    EXPECT_EQ(l.entry["candidate"], e["candidate"]);
  }
}

TEST(DispatchModel, ModelLookupNeverReturnsWhatCannotRun) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const json& t = shipped().table;
  const OnDevice on;
  const DeviceInfo& dev = on.dev;
  const auto& pick = on.pick;
  int model_rule = 0, tuning_beyond_lookup = 0;
  // Each family's candidates by name: their place in the list, and how many the lookup ranks.
  std::map<std::string, std::map<std::string, size_t>> place;
  std::map<std::string, size_t> lookup_count;
  for (const auto& [family, m] : t.at("model").at("families").items()) {
    for (size_t i = 0; i < m.at("candidates").size(); ++i) place[family][m["candidates"][i]["candidate"]] = i;
    lookup_count[family] = m.value("lookup_candidates", m.at("candidates").size());
  }
  for (const Problem& p : random_shapes(t, 40, 7)) {
    const Lookup l = lookup(pick, p, &dev);
    EXPECT_TRUE(candidate_can_run(l.entry, p, dev)) << p.key() << " -> " << l.entry["candidate"];
    model_rule += l.rule == "model";
    // A ratio to the best (trained on ratios >= 1), plus a tenth of the classifier's margin (in log2 units):
    // unscaled, the margin alone would put it near 2^-5.
    if (l.rule == "model") EXPECT_GT(l.predicted_ratio, 0.5) << p.key();
    if (l.rule == "model")  // the lookup ranks only the lookup's candidates
      EXPECT_LT(place[p.family].at(l.entry["candidate"].get<std::string>()), lookup_count[p.family]) << p.key();
    for (const json& c : tuning_shortlist(pick, p, &dev)) {
      EXPECT_TRUE(candidate_can_run(c, p, dev)) << p.key() << " shortlist " << c["candidate"];
      const auto at = place[p.family].find(c["candidate"].get<std::string>());
      tuning_beyond_lookup += at != place[p.family].end() && at->second >= lookup_count[p.family];
    }
  }
  EXPECT_GT(model_rule, 100);
  EXPECT_GT(tuning_beyond_lookup, 0);  // first-use tuning draws on the candidates after the lookup's
}

// CONVTUNE_TUNE_TOP sets how many of the model's candidates first-use tuning times: more of them with the
// default 8 than with 4 (every shortlist with 4 is within the default's), and any other value is refused by name.
TEST(DispatchModel, TuneTopSetsHowManyModelCandidatesAreTimed) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const OnDevice on;
  struct Top : test::ScopedEnv {
    explicit Top(const char* value) : ScopedEnv("CONVTUNE_TUNE_TOP", value) {}
  };
  auto names = [&](const Problem& p) {
    std::set<std::string> out;
    for (const json& c : tuning_shortlist(on.pick, p, &on.dev)) out.insert(c["candidate"].get<std::string>());
    return out;
  };
  int longer = 0;
  for (const Problem& p : random_shapes(shipped().table, 12, 11)) {
    std::set<std::string> four, unset;
    {
      const Top top("4");
      four = names(p);
    }
    {
      const Top top(nullptr);
      unset = names(p);
    }
    EXPECT_TRUE(std::includes(unset.begin(), unset.end(), four.begin(), four.end())) << p.key();
    longer += unset.size() > four.size();
  }
  EXPECT_GT(longer, 0);
  for (const char* bad : {"0", "33", "x", "-1", "4.5"}) {
    const Top top(bad);
    const std::string msg = test::input_error([] { shortlist_model_top(); });
    EXPECT_EQ(msg.rfind(std::string("CONVTUNE_TUNE_TOP: '") + bad + "'; allowed: 1 to 32", 0), 0u) << msg;
  }
}

// A parameter a shape's space lacks: layer_fwd.implicit_gemm has `epilogue` only on layers with a bias or an
// activation. The fleet table's model once offered such a config to the ResNet-18 check's plain strided 1x1
// layer, and the runtime, which completes the config before it runs it, refused it ("epilogue: unknown
// parameter"). candidate_can_run must refuse what the runtime would.
TEST(DispatchModel, ACandidateWithAParameterTheShapesSpaceLacksCannotRun) {
  const OnDevice on;
  json layer = {{"family", "layer_fwd"}, {"n", 32}, {"c", 64}, {"h", 56}, {"w", 56}, {"k", 128}, {"r", 1}, {"s", 1},
                {"pad_h", 0}, {"pad_w", 0}, {"u", 2}, {"v", 2}, {"precision", 0}, {"bias", 0}, {"relu", 0}};
  const json fused = {{"variant", "layer_fwd.implicit_gemm"},
                      {"config", {{"epilogue", "fused"}, {"math", "3xtf32"}, {"splits", 1}, {"stages", 2},
                                  {"tile", "64x64x16"}}}};
  json plain = fused;
  plain["config"].erase("epilogue");
  EXPECT_FALSE(candidate_can_run(fused, Problem::from_json(layer), on.dev));
  EXPECT_TRUE(candidate_can_run(plain, Problem::from_json(layer), on.dev));
  layer["bias"] = 1;
  EXPECT_TRUE(candidate_can_run(fused, Problem::from_json(layer), on.dev));
}

// A conv2d shape beyond a radius limit: without a device, the model's favourite; with one, never a
// candidate whose can_implement refuses it (the table's choices include radius-limited kernels).
TEST(DispatchModel, ADeviceRulesOutCandidatesTheModelWouldPick) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const json& t = shipped().table;
  const DeviceInfo dev = DeviceInfo::from_json(shipped().summary["device"]);
  int refused = 0;
  for (int64_t r : {16, 20, 24, 31}) {
    const Problem p = conv2d(3000, 3000, r);
    for (const json& c : t["model"]["families"]["conv2d"]["candidates"]) refused += !candidate_can_run(c, p, dev);
    EXPECT_TRUE(candidate_can_run(lookup(t, p, &dev).entry, p, dev)) << r;
  }
  EXPECT_GT(refused, 0) << "no candidate is refused at large radii: this test checks nothing";
}

TEST(DispatchModel, HeaderSelectAgreesWithLookupOnRandomShapes) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  if (std::system("command -v c++ > /dev/null 2>&1") != 0) GTEST_SKIP() << "no c++ on PATH";
  const json& t = shipped().table;
  const fs::path dir = test::fresh_temp_dir("model-header");
  std::ofstream(dir / "convtune_dispatch.h") << make_header(t);
  std::string prog = "#include <cstdio>\n#include \"convtune_dispatch.h\"\nint main() {\n  using namespace convtune_dispatch;\n";
  std::string expected;
  for (const Problem& p : random_shapes(t, 12, 11)) {
    std::string dims;
    for (const auto& d : p.type().dims()) dims += (dims.empty() ? "" : ", ") + std::to_string(p.at(d.name));
    prog += "  { const int64_t d[] = {" + dims + "}; const Choice c = select(\"" + p.family + "\", d, " +
            std::to_string(p.type().dims().size()) + ");\n    std::printf(\"%s|%s\\n\", c.rule, c.entry ? c.entry->candidate : \"-\"); }\n";
    const Lookup l = lookup(t, p);
    expected += l.rule + "|" + l.entry["candidate"].get<std::string>() + "\n";
  }
  prog += "}\n";
  std::ofstream(dir / "main.cpp") << prog;
  const std::string d = dir.string();
  ASSERT_EQ(std::system(("c++ -std=c++17 -Wall -Wextra -Werror -O1 -o " + d + "/prog " + d + "/main.cpp && " + d +
                         "/prog > " + d + "/out.txt").c_str()),
            0);
  std::stringstream out;
  out << std::ifstream(dir / "out.txt").rdbuf();
  EXPECT_EQ(out.str(), expected);
  EXPECT_TRUE(contains(expected, "model|"));
  fs::remove_all(dir);
}

TEST(DispatchModel, ATableWithoutAModelTakesTheNearestRule) {
  json t = shipped().table;
  t.erase("model");
  const Lookup l = lookup(t, conv2d(3001, 2999, 3));
  EXPECT_EQ(l.rule, "nearest");
}

TEST(DispatchModel, CorruptModelsAreRefusedNamingWhatIsWrong) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const json& good = shipped().table;
  auto refusal = [&](const std::function<void(json&)>& harm) {
    json t = good;
    harm(t["model"]["families"]["conv2d"]);
    return input_error([&] { DispatchTable table(t); });
  };
  EXPECT_TRUE(contains(refusal([](json& m) { m["feature_count"] = 3; }), "features"));
  EXPECT_TRUE(contains(refusal([](json& m) { m["trees"][0]["yes"][0] = 0; }), "loop"));
  EXPECT_TRUE(contains(refusal([](json& m) { m["trees"][0]["no"][0] = 100000; }), "out of the tree"));
  EXPECT_TRUE(contains(refusal([](json& m) { m["trees"][0]["value"].erase(0); }), "differ in length"));
  EXPECT_TRUE(contains(refusal([](json& m) { m.erase("base"); }), "model of conv2d"));
  EXPECT_TRUE(contains(refusal([](json& m) { m["numeric"] = 5; }), "numeric"));
  auto first_leaf = [](const json& tree) {
    size_t i = 0;
    while (tree["feature"][i].get<int>() >= 0) ++i;
    return i;
  };
  EXPECT_TRUE(contains(refusal([&](json& m) { m["trees"][0]["no"][first_leaf(m["trees"][0])] = -2; }), "a leaf with links"));
}

// The model's layer families carry their quantities and the GEMM variants' traits; a program that names no
// dim, a trait the model does not list, or a program that leaves no single value is refused, naming it.
TEST(DispatchModel, CorruptQuantitiesAndTraitsAreRefusedNamingThem) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const json& good = shipped().table;
  const json& fwd = good["model"]["families"]["layer_fwd"];
  ASSERT_EQ(fwd["quantities"].size(), 3u);
  EXPECT_EQ(fwd["traits"], json({"gemm_m", "gemm_n"}));
  EXPECT_GT(fwd["sms"].get<int>(), 0);
  auto refusal = [&](const std::function<void(json&)>& harm) {
    json t = good;
    harm(t["model"]["families"]["layer_fwd"]);
    return input_error([&] { DispatchTable table(t); });
  };
  const std::string unknown = refusal([](json& m) { m["quantities"][0]["program"] = "n height *"; });
  EXPECT_TRUE(contains(unknown, "quantity gemm_m") && contains(unknown, "'height'") && contains(unknown, "allowed: n, c,"))
      << unknown;
  EXPECT_TRUE(contains(refusal([](json& m) { m["quantities"][1]["program"] = "k *"; }), "'*' without two values"));
  EXPECT_TRUE(contains(refusal([](json& m) { m["quantities"][2]["program"] = "c r"; }), "must leave one value"));
  const std::string trait = refusal([](json& m) {
    for (json& c : m["candidates"])
      if (c.contains("traits")) c["traits"]["gemm_q"] = 4;
  });
  EXPECT_TRUE(contains(trait, "trait 'gemm_q'")) << trait;
  EXPECT_EQ(fwd["lookup_candidates"], 32);  // the lookup's, of the listed 64 (the rest for first-use tuning)
  for (const json& bad : {json(-1), json("32"), json(fwd["candidates"].size() + 1)}) {
    const std::string lookup = refusal([&](json& m) { m["lookup_candidates"] = bad; });
    EXPECT_TRUE(contains(lookup, "lookup_candidates is " + bad.dump() + "; allowed: 0 to the")) << lookup;
  }
}

// What the quantities add to a candidate's features, on a hand-made model: one quantity of 1000 (a program
// over the one dim), a trait of 64 along it, 4 SMs: 16 tiles, the last 1000/1024 full, 4 waves, all full.
TEST(DispatchModel, QuantityFeaturesCountTilesAndWaves) {
  namespace r = convtune_dispatch;
  const r::Step steps[] = {{r::kPushDim, 0}, {r::kPushConstant, 10}, {r::kMul, 0}};  // d * 10
  const r::Quantity quantity{"extent", steps, 3};
  const char* traits[] = {"extent"};
  r::Model m{};
  m.quantities = &quantity;
  m.quantity_count = 1;
  m.traits = traits;
  m.trait_count = 1;
  m.sms = 4;
  r::FamilyInfo f{};
  f.n_dims = 1;
  const int64_t dims[] = {100};
  ASSERT_EQ(r::feature_count(m, f), 1 + 1 + 1 + 1 + 1 + 1 + 1 + 2 + 2);
  const int64_t tile[] = {64};
  float statics[1], x[16];
  r::static_features(m, r::Entry{}, tile, statics);
  EXPECT_FLOAT_EQ(statics[0], float(std::log2(65.0)));
  double log_dims[1], quantities[1];
  int tiles[1];
  r::log_dims_of(f, dims, log_dims);
  r::quantity_values(m, dims, quantities);
  r::quantity_tiles(m, tiles);
  EXPECT_EQ(quantities[0], 1000.0);
  EXPECT_EQ(tiles[0], 0);
  ASSERT_EQ(r::features(m, f, log_dims, quantities, tiles, statics, x), r::feature_count(m, f));
  EXPECT_FLOAT_EQ(x[4], float(std::log2(1001.0)));  // the quantity, after dim, size, trait, dim - trait
  EXPECT_FLOAT_EQ(x[7], 4.0f);                       // log2(16 tiles)
  EXPECT_FLOAT_EQ(x[8], float(1000.0 / 1024.0));     // the last tile's fill
  EXPECT_FLOAT_EQ(x[9], 2.0f);                       // log2(16 CTAs / 4 SMs)
  EXPECT_FLOAT_EQ(x[10], 1.0f);                      // 4 full waves
  const int64_t none[] = {-1};
  r::static_features(m, r::Entry{}, none, statics);
  r::features(m, f, log_dims, quantities, tiles, statics, x);
  EXPECT_EQ(x[7], -100.0f);  // no tile: no counts, no waves
  EXPECT_EQ(x[9], -100.0f);
}

// The model's floats, in dispatch.json and in the header, in the fewest digits that read back exactly: as a
// float literal and through a double (as nlohmann reads dispatch.json), on random floats of every magnitude.
TEST(DispatchModel, FloatsAreWrittenInTheFewestDigitsThatReadBack) {
  EXPECT_EQ(shortest_float_text(3.0056135654449463f), "3.0056136");
  EXPECT_EQ(shortest_float_text(0.5f), "0.5");
  EXPECT_EQ(shortest_float_text(-7.346591f), "-7.346591");  // 17 digits as a double: -7.346590995788574
  std::mt19937 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const float x = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng), int(rng() % 60) - 30);
    const std::string s = shortest_float_text(x);
    ASSERT_EQ(std::strtof(s.c_str(), nullptr), x) << s;
    ASSERT_EQ(float(std::strtod(s.c_str(), nullptr)), x) << s;
  }
}

// conv1d_parts' and conv2d's model quantities, run by the rules' stack machine, are what they name: the
// slice's and the whole convolution's lengths, and every image's pixels, on each family's test shapes.
TEST(DispatchModel, SliceLengthsAndPixelsAreTheQuantitiesTheyName) {
  auto values = [](const std::string& family, const Problem& p) {
    const Family& f = find_family(family);
    std::vector<std::string> names;
    std::vector<int64_t> dims;
    for (const auto& d : f.dims()) {
      names.push_back(d.name);
      dims.push_back(p.at(d.name));
    }
    std::map<std::string, double> out;
    for (const auto& [name, program] : f.model_quantities()) {
      const auto steps = compile_quantity(program, names, family);
      out[name] = convtune_dispatch::quantity_value({name.c_str(), steps.data(), int(steps.size())}, dims.data());
    }
    return out;
  };
  for (const Problem& p : find_family("conv1d_parts").test_problems()) {
    const auto q = values("conv1d_parts", p);
    EXPECT_EQ(q.at("slice"), double(p.at("end") - p.at("start"))) << p.key();
    EXPECT_EQ(q.at("full"), double(p.at("n") + p.at("m") - 1)) << p.key();
  }
  for (const Problem& p : find_family("conv2d").test_problems())
    EXPECT_EQ(values("conv2d", p).at("pixels"), double(p.at("b") * p.at("h") * p.at("w"))) << p.key();
}

// The shipped fleet's models, compiled by the runtime's loader, predict what their JSON trees say, walked
// here directly (a split goes "yes" when the feature is below the threshold; a leaf has feature -1): links
// made absolute, leaves linked to themselves, the depth right. Needs no XGBoost: the fleet table carries
// its fitted trees.
TEST(DispatchModel, CompiledShippedModelsPredictWhatTheirTreesSay) {
  const json fleet = read_json(fs::path(CONVTUNE_SOURCE_DIR) / "results/fleet-h100-h200/dispatch.json");
  const DispatchTable table(fleet);
  std::mt19937 rng(11);
  int compared = 0;
  for (size_t t = 0; t < table.size(); ++t) {
    const CompiledTable& c = table.table(t);
    ASSERT_EQ(c.models.size(), c.model_families.size());
    for (size_t k = 0; k < c.models.size(); ++k) {
      const json& m = (*c.source)["model"]["families"][c.model_families[k]];
      const int n = m["feature_count"].get<int>();
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<float> x(static_cast<size_t>(n));
        for (float& v : x) v = std::uniform_real_distribution<float>(-2.f, 12.f)(rng);
        double want = m["base"].get<double>();
        for (const json& tree : m["trees"]) {
          int i = 0;
          while (tree["feature"][i].get<int>() >= 0)
            i = x[size_t(tree["feature"][i].get<int>())] < tree["threshold"][i].get<float>() ? tree["yes"][i].get<int>()
                                                                                             : tree["no"][i].get<int>();
          want += tree["value"][i].get<double>();
        }
        EXPECT_NEAR(convtune_dispatch::predict(c.models[k], x.data()), want, 1e-4 * (1 + std::abs(want)))
            << c.model_families[k];
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 20 * 8) << "the fleet should carry models of several families on both GPUs";
}

// A model is used only where it names the family's dims, in order: one fitted before a dim was added (or
// with its dims in another order, its features would be read wrongly) is left out, and the family takes
// the nearest rule, as a table without a model does.
TEST(DispatchModel, AModelIsUsedOnlyWhereItNamesTheFamilysDimsInOrder) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const json& good = shipped().table;
  const Problem unseen = conv2d(3001, 2999, 3);
  ASSERT_EQ(lookup(good, unseen).rule, "model");
  const json dims = good["model"]["families"]["conv2d"]["dims"];
  ASSERT_GE(dims.size(), 3u);
  auto rule_with = [&](const json& other_dims) {
    json t = good;
    t["model"]["families"]["conv2d"]["dims"] = other_dims;
    return lookup(t, unseen).rule;
  };
  EXPECT_EQ(rule_with(dims), "model");
  json reversed = json::array();
  for (size_t i = dims.size(); i-- > 0;) reversed.push_back(dims[i]);
  EXPECT_EQ(rule_with(reversed), "nearest");
  json renamed = dims;
  renamed[0] = "height";
  EXPECT_EQ(rule_with(renamed), "nearest");
  json fewer = dims;
  fewer.erase(fewer.size() - 1);
  EXPECT_EQ(rule_with(fewer), "nearest");
}

// The one rule set: a fleet picks its table by the rules, and a GPU no table was measured on gets the
// first table's default, never its model or entries.
TEST(DispatchModel, FleetDefaultsUseNoModel) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  json other = shipped().table;
  other["device"]["name"] = "NVIDIA H200";
  const json fleet = make_fleet({shipped().table, other});
  const Problem p = conv2d(3001, 2999, 3);
  EXPECT_EQ(lookup_on_device(fleet, "NVIDIA H200", "9.0", p).lookup.rule, "model");
  const DeviceLookup l4 = lookup_on_device(fleet, "NVIDIA L4", "8.9", p);
  EXPECT_EQ(l4.table_rule, "default");
  EXPECT_EQ(l4.lookup.rule, "default");
}

TEST(DispatchModel, RuntimeFallbackChainIsChoiceThenModelThenDefaultThenSimplest) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const json& t = shipped().table;
  const OnDevice on;
  const DeviceInfo& dev = on.dev;
  const auto& pick = on.pick;
  const Problem p = conv2d(3001, 2999, 3);
  const Lookup choice = lookup(pick, p, &dev);
  ASSERT_EQ(choice.rule, "model");
  const std::vector<json> chain = fallback_chain(pick, p, &dev, choice);
  ASSERT_GE(chain.size(), 4u);
  EXPECT_EQ(chain[0]["candidate"], choice.entry["candidate"]);
  EXPECT_EQ(chain[1]["rule"], "model");
  EXPECT_EQ(chain[2]["rule"], "model");
  std::set<std::string> names;
  for (const json& c : chain) {
    if (c["rule"] != "simplest") EXPECT_TRUE(candidate_can_run(c, p, dev)) << c["candidate"];
    EXPECT_TRUE(names.insert(c.value("candidate", c["variant"].get<std::string>())).second) << "twice: " << c;
  }
  EXPECT_EQ(chain.back()["rule"], "simplest");
  EXPECT_TRUE(chain.back()["config"].is_null());
  // An exact shape: its entry, then the family's default.
  const Problem measured = Problem::from_json(t["entries"][0]["problem"]);
  const std::vector<json> exact = fallback_chain(pick, measured, &dev, lookup(pick, measured, &dev));
  EXPECT_EQ(exact[0]["rule"], "exact");
  EXPECT_NE(exact[1]["rule"], "model");
}

// The shipped run's records of one family.
std::vector<json> records_of(const Shipped& s, const std::string& family) {
  std::vector<json> out;
  for (const json& r : s.records)
    if (r.value("family", "") == family) out.push_back(r);
  return out;
}

// Cross-validation on the shipped run: every problem judged, and on conv2d (where the run measured every
// candidate) the model's choices are measured and none is far off.
TEST(DispatchModel, CrossValidationOnAShippedRun) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const Shipped& s = shipped();
  const std::vector<json> conv2d_only = records_of(s, "conv2d");
  const json cv = cross_validate(s.summary, conv2d_only, 4);
  EXPECT_EQ(cv["folds"], 4);
  const json& m = cv["families"]["conv2d"]["model"];
  EXPECT_EQ(m["measured"].get<int>() + m["unmeasured"].get<int>(), 22);
  EXPECT_GT(m["measured"].get<int>(), 15);
  EXPECT_LT(m["worst_ratio"].get<double>(), 2.0);
  EXPECT_TRUE(contains(format_cross_validation(cv), "conv2d"));
  EXPECT_TRUE(contains(input_error([&] { cross_validate(s.summary, conv2d_only, 1); }), "--folds"));
  {
    const test::ScopedEnv top("CONVTUNE_TUNE_TOP", "x");  // refused, not taken for shapes that cannot be judged
    EXPECT_TRUE(contains(input_error([&] { cross_validate(s.summary, conv2d_only, 4); }), "CONVTUNE_TUNE_TOP: 'x'"));
  }
  // The best of the model's candidates bounds its choice: no slower where the choice is one of them, never
  // faster than the measured best.
  int bounded = 0;
  for (const json& r : cv["rows"]) {
    if (!r.contains("candidates_ratio")) continue;
    EXPECT_GE(r["candidates_ratio"].get<double>(), 1.0);
    if (r.contains("model_ratio") && r["model_rule"] == "model") {
      EXPECT_LE(r["candidates_ratio"].get<double>(), r["model_ratio"].get<double>() + 1e-12) << r.dump();
      ++bounded;
    }
  }
  EXPECT_GT(bounded, 10);
  EXPECT_TRUE(contains(format_cross_validation(cv), "candidates"));
}

// Held out by run (check-dispatch --leave-runs-out): a problem goes to the fold of the first group that measured
// it, and folds given as the round-robin folds are judged exactly as those.
TEST(DispatchModel, CrossValidationByGroupHoldsOutWholeGroups) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const Shipped& s = shipped();
  const std::vector<json> conv2d_only = records_of(s, "conv2d");
  // Two "runs": the problems of the first half of the records, then the rest; a repeat of a first-run problem
  // in the second run stays in the first run's fold.
  std::vector<int> groups(conv2d_only.size());
  for (size_t i = 0; i < groups.size(); ++i) groups[i] = i < groups.size() / 2 ? 7 : 3;
  std::vector<json> with_repeat = conv2d_only;
  with_repeat.push_back(conv2d_only.front());
  groups.push_back(3);
  std::vector<int> fold_groups;
  const auto fold_of = folds_by_group(with_repeat, groups, fold_groups);
  EXPECT_EQ(fold_groups, (std::vector<int>{7, 3}));
  EXPECT_EQ(fold_of.at(conv2d_only.front().at("problem_key").get<std::string>()), 0);
  const json cv = cross_validate(s.summary, with_repeat, fold_of);
  EXPECT_EQ(cv["folds"], 2);
  int judged = 0;
  for (const json& r : cv["rows"]) {
    EXPECT_EQ(r["fold"], fold_of.at(r["problem_key"].get<std::string>())) << r.dump();
    ++judged;
  }
  EXPECT_EQ(judged, int(fold_of.size()));
  // The round-robin folds given as a map: the same judgement, row for row.
  const json by_count = cross_validate(s.summary, conv2d_only, 2);
  std::map<std::string, int> round_robin;
  for (const json& r : by_count["rows"]) round_robin[r["problem_key"]] = r["fold"];
  EXPECT_EQ(cross_validate(s.summary, conv2d_only, round_robin).dump(), by_count.dump());
  std::vector<int> one(conv2d_only.size(), 0);
  EXPECT_TRUE(contains(input_error([&] { cross_validate(s.summary, conv2d_only, folds_by_group(conv2d_only, one, fold_groups)); }),
                       "1 fold(s)"));
}

// Ratios do not depend on the unit of time: every record's times scaled by 1000 (problems of seconds, not
// milliseconds) judge every held-out problem alike. Two measured problems are enough to cross-validate.
TEST(DispatchModel, CrossValidationIsTheSameInAnyUnitOfTime) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const Shipped& s = shipped();
  const std::vector<json> conv2d_only = records_of(s, "conv2d");
  std::vector<json> slower = conv2d_only;
  for (json& r : slower)
    if (r.contains("time"))
      for (const char* k : {"median_ms", "mean_ms", "min_ms", "max_ms", "p10_ms", "p90_ms"})
        if (r["time"].contains(k)) r["time"][k] = r["time"][k].get<double>() * 1000;
  const json a = cross_validate(s.summary, conv2d_only, 2), b = cross_validate(s.summary, slower, 2);
  ASSERT_EQ(a["rows"].size(), b["rows"].size());
  for (size_t i = 0; i < a["rows"].size(); ++i)
    for (const char* k : {"model_ratio", "nearest_ratio", "tuned_ratio", "candidates_ratio"}) {
      ASSERT_EQ(a["rows"][i].contains(k), b["rows"][i].contains(k)) << k << " " << a["rows"][i].dump();
      if (a["rows"][i].contains(k))
        EXPECT_NEAR(a["rows"][i][k].get<double>(), b["rows"][i][k].get<double>(), 1e-9) << k << " " << a["rows"][i].dump();
    }
  // First-use tuning judged on every problem, never faster than the best.
  EXPECT_GT(a["families"]["conv2d"]["tuned"]["measured"].get<int>(), 15);
  for (const json& r : b["rows"])
    if (r.contains("tuned_ratio")) EXPECT_GE(r["tuned_ratio"].get<double>(), 1.0) << r.dump();
  // The first two measured problems alone.
  std::set<std::string> two;
  std::vector<json> of_two;
  for (const json& r : conv2d_only) {
    const std::string key = r.at("problem_key");
    if (r.value("status", "") == status::ok && two.size() < 2) two.insert(key);
    if (two.count(key)) of_two.push_back(r);
  }
  EXPECT_EQ(cross_validate(s.summary, of_two, 2)["folds"], 2);
}

// Cross-validation judges what the runtime ends up running, as check-dispatch does: a model choice the run
// recorded as refused on the held-out shape (a library that says no only on the GPU) is passed over for
// the next of the fallback chain, instead of counting the shape as unmeasured.
TEST(DispatchModel, CrossValidationPassesOverRefusedChoices) {
  if (!model_fitting_available()) GTEST_SKIP() << "built without XGBoost";
  const Shipped& s = shipped();
  const std::vector<json> conv2d_only = records_of(s, "conv2d");
  const json cv = cross_validate(s.summary, conv2d_only, 2);
  const json* row = nullptr;
  for (const json& r : cv["rows"])
    if (r.contains("model_ratio") && r["model_rule"] == "model") row = &r;
  ASSERT_NE(row, nullptr);
  const std::string key = (*row)["problem_key"], refused = (*row)["model_choice"];
  // The held-out shape's record of the choice becomes a refusal.
  std::vector<json> changed;
  for (json r : conv2d_only) {
    if (r.value("problem_key", "") == key && r.value("candidate", "") == refused) {
      r["status"] = status::skipped;
      r.erase("time");
    }
    changed.push_back(std::move(r));
  }
  const json again = cross_validate(s.summary, changed, 2);
  for (const json& r : again["rows"])
    if (r["problem_key"] == key) {
      EXPECT_NE(r["model_choice"], refused);
      EXPECT_TRUE(r.contains("model_ratio")) << r.dump();
    }
  EXPECT_EQ(again["families"]["conv2d"]["model"]["unmeasured"], cv["families"]["conv2d"]["model"]["unmeasured"]);
}

}  // namespace
}  // namespace convtune
