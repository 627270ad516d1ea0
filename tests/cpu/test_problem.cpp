#include <gtest/gtest.h>

#include "harness/error.h"
#include "harness/params.h"
#include "harness/problem.h"

#include "tests/cpu/test_support.h"

using namespace convtune;

TEST(Problem, ParsesValidatesAndNamesItself) {
  const Problem p = Problem::from_json({{"family", "conv2d"}, {"h", 7}, {"w", 13}, {"r", 2}});
  EXPECT_EQ(p.key(), "conv2d/h=7,r=2,w=13");
  const auto ops = p.operands();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].elements, 7 * 13);
  EXPECT_EQ(ops[1].elements, 25);
  EXPECT_EQ(ops[2].elements, 7 * 13);
  EXPECT_DOUBLE_EQ(p.direct_flops(), 2.0 * 25 * 7 * 13);
  EXPECT_DOUBLE_EQ(p.min_bytes(), 4.0 * (7 * 13 * 2 + 25));
  EXPECT_EQ(Problem::from_json(p.to_json()), p);
}

TEST(Problem, ErrorsNameTheFieldAndTheAllowedValues) {
  try {
    Problem::from_json({{"family", "conv3d"}, {"h", 7}});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("conv3d"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("conv1d, conv1d_parts, conv2d"), std::string::npos) << e.what();
  }
  try {
    Problem::from_json({{"family", "conv2d"}, {"h", 7}, {"w", 7}, {"r", 99}}, "spec.problems[0]");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("spec.problems[0].r"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("0..32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Problem::from_json({{"family", "conv2d"}, {"h", 7}, {"w", 7}}), InputError);             // no r
  EXPECT_THROW(Problem::from_json({{"family", "conv2d"}, {"h", 7}, {"w", 7}, {"r", 1}, {"q", 1}}), InputError);
  EXPECT_THROW(Problem::from_json({{"family", "conv2d"}, {"h", "7"}, {"w", 7}, {"r", 1}}), InputError);
}

TEST(Problem, DefaultsAndOtherFamilies) {
  const Problem p = Problem::from_json({{"family", "conv1d"}, {"n", 100}, {"m", 7}});
  EXPECT_EQ(p.at("mode"), 1);  // full by default
  EXPECT_EQ(p.output_elements(), 106);
  const Problem v = Problem::from_json({{"family", "conv1d"}, {"n", 100}, {"m", 7}, {"mode", 0}});
  EXPECT_EQ(v.output_elements(), 94);
  EXPECT_DOUBLE_EQ(v.direct_flops(), 2.0 * 94 * 7);
}

TEST(Params, EnumeratesTheProductInAFixedOrder) {
  ParamSpace s;
  s.add("a", "", {1, 2}).add("b", "", {"x", "y", "z"});
  const auto all = s.enumerate();
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0], json({{"a", 1}, {"b", "x"}}));
  EXPECT_EQ(all[1], json({{"a", 1}, {"b", "y"}}));
  EXPECT_EQ(all[5], json({{"a", 2}, {"b", "z"}}));
  EXPECT_EQ(config_string(all[4]), "a=2,b=y");
}

TEST(Params, RestrictionsAreCheckedWithClearErrors) {
  ParamSpace s;
  s.add("tile", "", {8, 16}).add("dir", "", {"x", "y"});
  EXPECT_EQ(s.restricted({{"tile", 64}}, "p").size(), 2u);  // values beyond the list are reachable
  EXPECT_EQ(s.restricted({{"dir", {"y"}}}, "p").size(), 2u);
  try {
    s.restricted({{"tiles", 8}}, "spec.params.v");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("spec.params.v.tiles"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("tile, dir"), std::string::npos);
  }
  // Each refusal names the field and every allowed value, in the space's order (pinned whole).
  auto message = [&](const json& restriction) {
    try {
      s.restricted(restriction, "p");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message({{"dir", "q"}}), "p.dir: unknown value \"q\"; allowed: x, y");
  EXPECT_EQ(message({{"tile", "8"}}), "p.tile: \"8\" is not an integer; allowed: 8, 16");
  try {
    s.complete_config({{"tile", 8}}, "--config");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--config.dir: missing"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("values: x, y)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.restricted({{"tile", json::array()}}, "p"), InputError);
}

// An alternative stands in for a rule's parameter in older configs (a split count where the space now has
// waves): never enumerated, accepted in place of the parameter, refused beside it, and only as a positive count.
TEST(Params, AnAlternativeStandsInForItsParameterInOlderConfigs) {
  ParamSpace s;
  s.add("tile", "", {8, 16}).add("waves", "", {1, 2}).alternative("splits", "a count", "waves");
  EXPECT_EQ(s.enumerate().size(), 4u);
  for (const Config& c : s.enumerate()) EXPECT_FALSE(c.contains("splits"));
  const Config older = {{"tile", 8}, {"splits", 7}};
  EXPECT_EQ(s.complete_config(older, "cfg"), older);
  EXPECT_EQ(s.complete_config({{"tile", 8}, {"waves", 2}}, "cfg"), json({{"tile", 8}, {"waves", 2}}));
  auto message = [&](const Config& c) { return test::input_error([&] { s.complete_config(c, "cfg"); }); };
  EXPECT_EQ(message({{"tile", 8}, {"splits", 7}, {"waves", 1}}),
            "cfg.splits: beside waves, which it stands in for; allowed: one of them");
  EXPECT_EQ(message({{"tile", 8}, {"splits", 0}}), "cfg.splits: 0; allowed: a positive integer (a count)");
  EXPECT_EQ(message({{"tile", 8}, {"splits", "7"}}), "cfg.splits: \"7\"; allowed: a positive integer (a count)");
  EXPECT_EQ(message({{"tile", 8}}), "cfg.waves: missing (; values: 1, 2)");
  EXPECT_EQ(message({{"tile", 8}, {"split", 7}}), "cfg.split: unknown parameter; allowed: tile, waves");
}

TEST(Params, ParsesCommandLineConfigs) {
  const Config c = parse_config("tile_x=32,dir=y", "--config");
  EXPECT_EQ(c["tile_x"], 32);
  EXPECT_EQ(c["dir"], "y");
  EXPECT_THROW(parse_config("tile_x", "--config"), InputError);
  ParamSpace s;
  s.add("tile_x", "", {16, 32}).add("dir", "", {"x", "y"});
  EXPECT_EQ(s.complete_config(c, "--config"), c);
  EXPECT_THROW(s.complete_config(parse_config("tile_x=32", "c"), "--config"), InputError);             // missing
  EXPECT_THROW(s.complete_config(parse_config("tile_x=32,dir=y,q=1", "c"), "--config"), InputError);   // unknown
}
