// Search strategies and their replay on synthetic landscapes: a smooth bowl over the parameter indices
// of conv2d.register_tiled with a known optimum, a few failures and a few infeasible (absent) points.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "harness/error.h"
#include "harness/records.h"
#include "harness/replay.h"
#include "harness/strategies/common.h"
#include "harness/strategy.h"

using namespace convtune;

namespace {

struct Landscape {
  std::vector<SearchCandidate> cands;
  std::vector<double> ms;
  size_t optimum = 0;
};

// Index of each config value in its parameter's declared list.
std::vector<int> positions(const ParamSpace& space, const Config& c) {
  std::vector<int> pos;
  for (const auto& p : space.params())
    pos.push_back(int(std::find(p.values.begin(), p.values.end(), c.at(p.name)) - p.values.begin()));
  return pos;
}

// Fixed spaces (not the variants' own, which evolve): the strategies only use a variant for its name.
ParamSpace tiled_space() {
  return ParamSpace()
      .add("block_x", "", {16, 32, 64})
      .add("block_y", "", {2, 4, 8, 16})
      .add("px", "", {1, 2, 4})
      .add("py", "", {1, 2, 4, 8});
}
ParamSpace halo_space() {
  return ParamSpace().add("tile_x", "", {16, 32, 64}).add("tile_y", "", {4, 8, 16, 32}).add("dir", "", {"x", "y"});
}

// conv2d.register_tiled over tiled_space() minus block_x=64 with py=8 (absent, as if can_implement
// refused them); optimum at `center`; every 23rd point fails. conv2d.tiled_halo_l2 adds a second,
// slower variant with a named parameter.
Landscape bowl(std::vector<int> center = {1, 2, 1, 2}, double curvature = 0.08) {
  Landscape l;
  const Variant* rt = Registry::instance().find("conv2d.register_tiled");
  const Variant* halo = Registry::instance().find("conv2d.tiled_halo_l2");
  const ParamSpace space = tiled_space();
  double best = INFINITY;
  for (const Config& c : space.enumerate()) {
    const auto pos = positions(space, c);
    if (pos[0] == 2 && pos[3] == 3) continue;
    double d2 = 0;
    for (size_t k = 0; k < pos.size(); ++k) d2 += (pos[k] - center[k]) * (pos[k] - center[k]);
    double ms = 1.0 + curvature * d2;
    if (d2 > 0 && l.cands.size() % 23 == 5) ms = INFINITY;
    if (ms < best) best = ms, l.optimum = l.cands.size();
    l.cands.push_back({rt, c});
    l.ms.push_back(ms);
  }
  const ParamSpace hspace = halo_space();
  for (const Config& c : hspace.enumerate()) {
    const auto pos = positions(hspace, c);
    l.cands.push_back({halo, c});
    l.ms.push_back(1.3 + 0.05 * (pos[0] + pos[1] + pos[2]));
  }
  return l;
}

struct Trace {
  std::vector<Proposal> proposals;
  double best_full = INFINITY;  // best full-fidelity time
  size_t evals_to_5pct = 0;     // 0: never
};

Trace run(const std::string& name, const Landscape& l, const StrategyOptions& o, double brief_noise = 0.03) {
  auto s = make_strategy(name, l.cands, o);
  EXPECT_EQ(s->name(), name);
  const size_t budget = s->budget();
  strategies::Rng noise(o.seed + 99);
  Trace r;
  while (auto p = s->next()) {
    EXPECT_LT(p->index, l.cands.size());
    r.proposals.push_back(*p);
    double ms = l.ms[p->index];
    if (p->fidelity == Fidelity::brief) {
      ms *= std::exp(brief_noise * noise.normal());
    } else {
      r.best_full = std::min(r.best_full, ms);
      if (!r.evals_to_5pct && r.best_full <= 1.05 * l.ms[l.optimum]) r.evals_to_5pct = r.proposals.size();
    }
    s->tell(*p, ms);
    if (r.proposals.size() > 3 * l.cands.size()) break;  // a runaway strategy fails below, not hangs
  }
  EXPECT_LE(r.proposals.size(), budget) << name << ": more proposals than its budget";
  return r;
}

void expect_no_repeats(const Trace& r) {
  std::set<std::pair<size_t, int>> seen;
  for (const auto& p : r.proposals)
    EXPECT_TRUE(seen.emplace(p.index, int(p.fidelity)).second) << "index " << p.index << " proposed twice";
}

StrategyOptions seeded(uint64_t seed) {
  StrategyOptions o;
  o.seed = seed;
  return o;
}

}  // namespace

// A keep fraction outside (0, 1] is refused, naming the option and its range (seed 15: the message emptied).
TEST(Strategies, KeepFractionOutsideItsRangeIsNamed) {
  for (double bad : {0.0, -0.5, 1.5}) {
    StrategyOptions o;
    o.keep_fraction = bad;
    try {
      make_strategy("halving", bowl().cands, o);
      FAIL() << bad << " accepted";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("keep_fraction"), std::string::npos) << msg;
      EXPECT_NE(msg.find("is not in (0, 1]"), std::string::npos) << msg;
    }
  }
}

TEST(Strategies, NamesAndUnknownName) {
  EXPECT_EQ(strategy_names(), (std::vector<std::string>{"exhaustive", "random", "halving", "anneal", "warm"}));
  try {
    make_strategy("genetic", bowl().cands, {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("spec.strategy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("genetic"), std::string::npos) << msg;
    EXPECT_NE(msg.find("exhaustive, random, halving, anneal, warm"), std::string::npos) << msg;
  }
  for (const auto& name : strategy_names()) EXPECT_FALSE(make_strategy(name, {}, {})->next()) << name;
}

TEST(Strategies, NeighboursStepOverAbsentConfigs) {
  const Landscape l = bowl();
  const strategies::NeighbourGraph g(l.cands);
  EXPECT_EQ(g.groups, 2u);
  const auto name = [&](size_t i) { return candidate_name(l.cands[i].variant->name(), l.cands[i].config); };
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < l.cands.size(); ++i) index[name(i)] = i;
  auto nb = [&](const std::string& from) {
    std::set<std::string> out;
    for (size_t j : g.neighbours.at(index.at(from))) out.insert(name(j));
    return out;
  };
  // block_x=32,py=8: block_x=64,py=8 is absent, so block_x has one neighbour; py steps to 4.
  EXPECT_EQ(nb("conv2d.register_tiled[block_x=32,block_y=2,px=1,py=8]"),
            (std::set<std::string>{"conv2d.register_tiled[block_x=16,block_y=2,px=1,py=8]",
                                   "conv2d.register_tiled[block_x=32,block_y=4,px=1,py=8]",
                                   "conv2d.register_tiled[block_x=32,block_y=2,px=2,py=8]",
                                   "conv2d.register_tiled[block_x=32,block_y=2,px=1,py=4]"}));
  // block_x=64,py=4: py=8 is absent there, so py has only the step down.
  EXPECT_EQ(nb("conv2d.register_tiled[block_x=64,block_y=16,px=4,py=4]").size(), 4u);
  EXPECT_EQ(nb("conv2d.tiled_halo_l2[dir=y,tile_x=16,tile_y=4]"),
            (std::set<std::string>{"conv2d.tiled_halo_l2[dir=x,tile_x=16,tile_y=4]",
                                   "conv2d.tiled_halo_l2[dir=y,tile_x=32,tile_y=4]",
                                   "conv2d.tiled_halo_l2[dir=y,tile_x=16,tile_y=8]"}));
  for (size_t i = 0; i < l.cands.size(); ++i)
    for (size_t j : g.neighbours[i]) EXPECT_EQ(g.group[i], g.group[j]);
}

TEST(Strategies, ExhaustiveMeasuresEverythingInOrder) {
  const Landscape l = bowl();
  const Trace r = run("exhaustive", l, {});
  ASSERT_EQ(r.proposals.size(), l.cands.size());
  for (size_t i = 0; i < r.proposals.size(); ++i) {
    EXPECT_EQ(r.proposals[i].index, i);
    EXPECT_EQ(r.proposals[i].fidelity, Fidelity::full);
  }
  EXPECT_EQ(r.best_full, l.ms[l.optimum]);
}

TEST(Strategies, RandomIsASeededSampleOfAQuarter) {
  const Landscape l = bowl();
  const Trace a = run("random", l, seeded(3)), b = run("random", l, seeded(3)), c = run("random", l, seeded(4));
  EXPECT_EQ(a.proposals.size(), (l.cands.size() + 3) / 4);
  expect_no_repeats(a);
  for (const auto& p : a.proposals) EXPECT_EQ(p.fidelity, Fidelity::full);
  auto indices = [](const Trace& r) {
    std::vector<size_t> v;
    for (const auto& p : r.proposals) v.push_back(p.index);
    return v;
  };
  EXPECT_EQ(indices(a), indices(b));
  EXPECT_NE(indices(a), indices(c));
}

TEST(Strategies, HalvingKeepsTheOptimumWhenBriefNoiseIsSmall) {
  const Landscape l = bowl();
  const size_t n = l.cands.size(), keep = (n + 3) / 4;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const Trace r = run("halving", l, seeded(seed), 0.01);
    expect_no_repeats(r);
    size_t brief = 0;
    std::set<size_t> screened;
    for (const auto& p : r.proposals) {
      if (p.fidelity == Fidelity::brief) {
        ++brief;
        screened.insert(p.index);
      } else {
        EXPECT_TRUE(screened.count(p.index)) << "full measurement of an unscreened candidate";
        EXPECT_TRUE(std::isfinite(l.ms[p.index])) << "a failed candidate survived screening";
      }
    }
    EXPECT_EQ(brief, n);
    EXPECT_EQ(r.proposals.size() - brief, keep);
    EXPECT_EQ(r.best_full, l.ms[l.optimum]) << "seed " << seed;
  }
}

TEST(Strategies, HalvingFitsItsBudget) {
  const Landscape l = bowl();
  for (size_t budget : {1, 2, 5, 40}) {
    StrategyOptions o;
    o.max_evaluations = budget;
    const Trace r = run("halving", l, o);
    EXPECT_LE(r.proposals.size(), budget);
    EXPECT_GE(r.proposals.size(), 1u);
    EXPECT_TRUE(std::isfinite(r.best_full) || budget <= 2);
    expect_no_repeats(r);
  }
}

TEST(Strategies, AnnealFindsTheOptimumWithAQuarterOfTheSpace) {
  const Landscape l = bowl();
  const size_t quarter = (l.cands.size() + 3) / 4;
  int found = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const Trace r = run("anneal", l, seeded(seed));
    expect_no_repeats(r);
    EXPECT_EQ(r.proposals.size(), quarter);
    found += r.best_full <= 1.05 * l.ms[l.optimum];
  }
  EXPECT_GE(found, 8);
}

TEST(Strategies, WarmStartsFromThePriorAndFallsBackToAnneal) {
  const Landscape l = bowl();
  // The prior: the ranking of a neighbouring shape whose optimum sits one step away in block_y.
  const Landscape near = bowl({1, 3, 1, 2});
  std::vector<size_t> prior(l.cands.size());
  for (size_t i = 0; i < prior.size(); ++i) prior[i] = i;
  std::stable_sort(prior.begin(), prior.end(), [&](size_t a, size_t b) { return near.ms[a] < near.ms[b]; });
  int found = 0;
  double evals = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    StrategyOptions o = seeded(seed);
    o.prior_order = prior;
    const Trace r = run("warm", l, o);
    expect_no_repeats(r);
    EXPECT_EQ(r.proposals.size(), (l.cands.size() + 3) / 4);
    EXPECT_EQ(r.proposals[0].index, prior[0]);
    found += r.best_full <= 1.05 * l.ms[l.optimum];
    evals += double(r.evals_to_5pct);
  }
  EXPECT_GE(found, 8);
  EXPECT_LE(evals / 10, 16) << "a good prior should get there fast";

  // Without a prior, warm proposes exactly what anneal does.
  const Trace w = run("warm", l, seeded(5)), a = run("anneal", l, seeded(5));
  ASSERT_EQ(w.proposals.size(), a.proposals.size());
  for (size_t i = 0; i < w.proposals.size(); ++i) EXPECT_EQ(w.proposals[i].index, a.proposals[i].index);
}

// halving.cpp:47 (seed 12's survivor): a tell() must match the pending proposal's index and fidelity both
// ways; a brief answer to a full proposal (or the reverse) is a driver's bug, refused.
TEST(Strategies, HalvingRefusesATellOfTheOtherFidelity) {
  const Landscape l = bowl();
  for (const Fidelity asked : {Fidelity::brief, Fidelity::full}) {
    auto s = make_strategy("halving", l.cands, seeded(2));
    std::optional<Proposal> p;
    while ((p = s->next()) && p->fidelity != asked) s->tell(*p, l.ms[p->index]);
    ASSERT_TRUE(p) << "no " << fidelity_name(asked) << " proposal";
    const Fidelity other = asked == Fidelity::brief ? Fidelity::full : Fidelity::brief;
    EXPECT_THROW(s->tell(Proposal{p->index, other}, 1.0), std::logic_error) << fidelity_name(asked);
    EXPECT_THROW(s->tell(Proposal{p->index + 1, asked}, 1.0), std::logic_error) << fidelity_name(asked);
    EXPECT_NO_THROW(s->tell(*p, 1.0));
  }
}

// A small space: 10% of 40 is 4, so the floor of 8 decides how many of the prior's ranking come first.
TEST(Strategies, WarmTakesEightOfThePriorsRankingOnASmallSpace) {
  Landscape l = bowl();
  l.cands.resize(40);  // register_tiled's configs alone
  l.ms.resize(40);
  std::vector<size_t> prior(l.cands.size());
  for (size_t i = 0; i < prior.size(); ++i) prior[i] = (7 * i) % prior.size();  // 7 and 40 coprime: a permutation
  StrategyOptions o = seeded(5);
  o.prior_order = prior;
  o.max_evaluations = 30;  // half of it (15) is more than 8
  const Trace r = run("warm", l, o);
  ASSERT_GE(r.proposals.size(), 8u);
  for (size_t k = 0; k < 8; ++k) EXPECT_EQ(r.proposals[k].index, prior[k]) << "proposal " << k;
}

// Warm's first proposals are the prior's top: the best config of each variant (in the prior's order), then
// the rest of the prior's ranking, max(8, 10% of the space) in all within half the budget. The bowl has 156
// candidates: budget 39, half 20, top = min(20, max(8, 16)) = 16.
TEST(Strategies, WarmTakesThePriorsTopTenPercentOrEightFirst) {
  const Landscape l = bowl();
  ASSERT_EQ(l.cands.size(), 156u);
  std::vector<size_t> prior(l.cands.size());
  for (size_t i = 0; i < prior.size(); ++i) prior[i] = prior.size() - 1 - i;  // the slow variant ranked first
  std::vector<size_t> want = {prior[0]};
  for (size_t i : prior)
    if (l.cands[i].variant != l.cands[prior[0]].variant) {
      want.push_back(i);
      break;
    }
  for (size_t i : prior)
    if (want.size() < 16 && std::find(want.begin(), want.end(), i) == want.end()) want.push_back(i);
  StrategyOptions o = seeded(3);
  o.prior_order = prior;
  const Trace r = run("warm", l, o);
  ASSERT_EQ(r.proposals.size(), 39u);
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(r.proposals[k].index, want[k]) << "proposal " << k;
  // The 17th is annealing's, not the prior's next (a top of 17..20 would take that one).
  size_t next = 0;
  for (size_t i : prior)
    if (std::find(want.begin(), want.end(), i) == want.end()) {
      next = i;
      break;
    }
  EXPECT_NE(r.proposals[16].index, next);
  // A small budget caps the top at half of it: 10 evaluations, top 5 (the prior's first five picks).
  StrategyOptions small = o;
  small.max_evaluations = 10;
  const Trace s = run("warm", l, small);
  ASSERT_EQ(s.proposals.size(), 10u);
  for (size_t k = 0; k < 5; ++k) EXPECT_EQ(s.proposals[k].index, want[k]) << "small budget, proposal " << k;
  EXPECT_NE(s.proposals[5].index, want[5]);
}

TEST(Strategies, AllRespectMaxEvaluations) {
  const Landscape l = bowl();
  for (const auto& name : strategy_names())
    for (size_t budget : {1, 7, 1000}) {
      StrategyOptions o;
      o.max_evaluations = budget;
      const Trace r = run(name, l, o);
      EXPECT_LE(r.proposals.size(), std::min(budget, 2 * l.cands.size())) << name << " budget " << budget;
      EXPECT_GE(r.proposals.size(), 1u) << name;
      expect_no_repeats(r);
    }
}

TEST(Strategies, ReplayOnSyntheticRecords) {
  // Three conv2d shapes whose optima drift by one block_y step; records as an exhaustive sweep writes them.
  std::vector<json> records;
  const std::vector<std::vector<int>> centers = {{1, 1, 1, 2}, {1, 2, 1, 2}, {1, 3, 1, 2}};
  for (int s = 0; s < 3; ++s) {
    const Landscape l = bowl(centers[s]);
    const json problem = {{"family", "conv2d"}, {"h", 1024 << s}, {"w", 1024}, {"r", 3}};
    const std::string key = "conv2d/h=" + std::to_string(1024 << s) + ",r=3,w=1024";
    for (size_t i = 0; i < l.cands.size(); ++i) {
      json r = {{"problem", problem}, {"problem_key", key}, {"family", "conv2d"},
                {"variant", l.cands[i].variant->name()}, {"config", l.cands[i].config},
                {"candidate", candidate_name(l.cands[i].variant->name(), l.cands[i].config)}};
      if (std::isfinite(l.ms[i])) {
        r["status"] = status::ok;
        r["time"] = {{"median_ms", l.ms[i]}};
      } else {
        r["status"] = status::wrong_result;
      }
      records.push_back(r);
    }
    records.push_back({{"problem", problem}, {"problem_key", key}, {"family", "conv2d"},
                       {"variant", "conv2d.register_tiled"}, {"config", {{"block_x", 64}, {"block_y", 2}, {"px", 1}, {"py", 8}}},
                       {"status", status::skipped}, {"reason", "too much shared memory"}});
  }
  const auto results = replay_strategies(records, strategy_names(), 4, 1.0);
  ASSERT_EQ(results.size(), strategy_names().size());
  for (const auto& r : results) {
    EXPECT_EQ(r.family, "conv2d");
    EXPECT_EQ(r.problems, 3);
    EXPECT_EQ(r.trials, 12);
  }
  // Exhaustive walks the records in file order: it reaches each problem's optimum (the only point within
  // 5%: the bowl's next points are 8% slower) at the optimum's place in that order, 1-based.
  const ReplayResult& ex = results[0];
  EXPECT_EQ(ex.strategy, "exhaustive");
  EXPECT_EQ(ex.success_rate, 1.0);
  double places = 0;
  for (const auto& center : centers) places += double(bowl(center).optimum + 1);
  EXPECT_DOUBLE_EQ(ex.mean_evals_to_5pct, places / 3);
  EXPECT_DOUBLE_EQ(ex.mean_fraction_of_space, places / 3 / double(bowl().cands.size()));

  // With a quarter of the space, the warm start (prior from the neighbouring shape) should nearly always succeed.
  const auto quarter = replay_strategies(records, {"anneal", "warm"}, 10, 0.25);
  for (const auto& r : quarter) std::printf("replay %s: %s\n", r.strategy.c_str(), r.to_json().dump().c_str());
  EXPECT_GE(quarter[1].success_rate, 0.8);
  EXPECT_LE(quarter[1].mean_evals_to_5pct, quarter[0].mean_evals_to_5pct);

  // The live sweep's warm prior: problem h=1024's nearest other shape is h=2048 (center {1, 2, 1, 2}).
  const Landscape l = bowl();
  const auto prior = warm_prior(records, Problem::from_json({{"family", "conv2d"}, {"h", 1024}, {"w", 1024}, {"r", 3}}),
                                l.cands);
  ASSERT_FALSE(prior.empty());
  EXPECT_EQ(prior[0], l.optimum);
  EXPECT_LT(prior.size(), l.cands.size());  // failed candidates are not in the prior
  EXPECT_TRUE(warm_prior(records, example_problem("conv1d"), l.cands).empty());

  EXPECT_THROW(replay_strategies(records, {"nope"}, 1, 1.0), InputError);
  EXPECT_THROW(replay_strategies(records, {"anneal"}, 0, 1.0), InputError);
}

// Replay's figures worked by hand on two problems of four candidates (times in ms, x: a wrong result):
//   P1: 4, 1.04, 1, 3     P2: 1.06, x, 1, 5
// Exhaustive over the whole space: P1 is within 5% at its 2nd proposal (1.04), P2 at its 3rd (1.06 is
// 6% off); 2 trials each: evals {2, 2, 3, 3}, fractions {2/4, 2/4, 3/4, 3/4}, every final best the optimum.
// Half the space (2 evaluations): P1 succeeds at 2 with best 1.04; P2 sees 1.06 and x: no success, best 1.06.
// A skipped record, a brief one, and a later repeat of a candidate (all faster) are not read.
TEST(Strategies, ReplayFiguresOnAHandMadeLandscape) {
  std::vector<json> records;
  auto add = [&](int h, int k, const std::string& st, double ms, const std::string& fidelity = "full") {
    const json problem = {{"family", "conv2d"}, {"h", h}, {"w", 64}, {"r", 1}};
    json r = {{"problem", problem}, {"problem_key", "conv2d/h=" + std::to_string(h) + ",r=1,w=64"}, {"family", "conv2d"},
              {"variant", "conv2d.naive"}, {"config", {{"block_x", k}}}, {"status", st}, {"fidelity", fidelity}};
    if (st == status::ok) r["time"] = {{"median_ms", ms}};
    records.push_back(r);
  };
  const std::vector<double> p1 = {4, 1.04, 1, 3}, p2 = {1.06, INFINITY, 1, 5};
  for (int k = 0; k < 4; ++k) {
    add(64, k, status::ok, p1[size_t(k)]);
    add(128, k, std::isfinite(p2[size_t(k)]) ? status::ok : status::wrong_result, p2[size_t(k)]);
  }
  add(64, 9, status::skipped, 0);
  add(64, 8, status::ok, 0.5, "brief");
  add(128, 3, status::ok, 0.5);  // a repeat of P2's 4th candidate: the first record stands

  const ReplayResult all = replay_strategies(records, {"exhaustive"}, 2, 1.0).at(0);
  EXPECT_EQ(all.problems, 2);
  EXPECT_EQ(all.trials, 4);
  EXPECT_DOUBLE_EQ(all.success_rate, 1.0);
  EXPECT_DOUBLE_EQ(all.mean_evals_to_5pct, 2.5);
  EXPECT_DOUBLE_EQ(all.median_evals_to_5pct, 2.5);
  EXPECT_DOUBLE_EQ(all.mean_fraction_of_space, 0.625);
  EXPECT_DOUBLE_EQ(all.mean_best_ratio, 1.0);

  const ReplayResult half = replay_strategies(records, {"exhaustive"}, 2, 0.5).at(0);
  EXPECT_DOUBLE_EQ(half.success_rate, 0.5);
  EXPECT_DOUBLE_EQ(half.mean_evals_to_5pct, 2.0);
  EXPECT_DOUBLE_EQ(half.median_evals_to_5pct, 2.0);
  EXPECT_DOUBLE_EQ(half.mean_fraction_of_space, 0.5);
  EXPECT_DOUBLE_EQ(half.mean_best_ratio, (1.04 + 1.04 + 1.06 + 1.06) / 4);
  EXPECT_EQ(half.to_json()["success_rate"], 0.5);

  // Three trials per problem: the median of an even count {2, 2, 2, 3, 3, 3} is the mean of the middle two.
  EXPECT_DOUBLE_EQ(replay_strategies(records, {"exhaustive"}, 3, 1.0).at(0).median_evals_to_5pct, 2.5);
}

// A long filter refuses most configs: 23 candidates in 8 variants, the fastest variant has 4 of them.
// A quarter of the space (6) is fewer than the variants; the default budget still tries every variant,
// and warm, whose prior ranks only one slow variant, still reaches the fast one.
TEST(Strategies, EveryVariantIsTriedWhenMostConfigsAreRefused) {
  const std::vector<std::string> names = {"conv2d.naive",    "conv2d.constant",     "conv2d.coarsened",
                                          "conv2d.tiled_in", "conv2d.tiled_halo_l2", "conv2d.cudnn",
                                          "conv2d.fft",      "conv2d.register_tiled"};
  Landscape l;
  for (size_t v = 0; v < names.size(); ++v) {
    const Variant* var = Registry::instance().find(names[v]);
    ASSERT_NE(var, nullptr) << names[v];
    const bool fast = v + 1 == names.size();
    const int configs = fast ? 4 : v == 0 ? 7 : 2;
    for (int k = 0; k < configs; ++k) {
      l.cands.push_back({var, Config{{"k", k}}});
      l.ms.push_back(fast ? 1.0 + 0.3 * k : 20.0 + v + k);
    }
  }
  l.optimum = l.cands.size() - 4;
  ASSERT_EQ(l.cands.size(), 23u);
  for (const std::string strategy : {"anneal", "warm"}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      StrategyOptions o = seeded(seed);
      if (strategy == "warm") o.prior_order = {0, 1, 2, 3, 4};  // the nearest shape knew only the slowest variant
      const Trace r = run(strategy, l, o);
      expect_no_repeats(r);
      EXPECT_LE(r.proposals.size(), 16u) << strategy;
      EXPECT_LE(r.best_full, 1.05 * l.ms[l.optimum]) << strategy << " seed " << seed;
    }
  }
}
