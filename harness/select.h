// Choosing the best candidate per problem from a run's records.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

struct Choice {
  std::string problem_key;
  json best;                  // the chosen record
  std::vector<json> ties;     // other candidates within measurement noise of the fastest
  json runner_up;             // fastest ok record of another variant (null if none)
  double margin = 0;          // runner_up time / best time - 1
  std::map<std::string, json> best_per_variant;  // variant -> its fastest ok record
  // variant -> the ok record of the config the library picks by itself (details.library_pick), if measured
  std::map<std::string, json> library_pick;
  // The next fastest ok records after the chosen one, in time order (at most kAlternates): what
  // first-use tuning times for a shape near this one (docs/DISPATCH.md).
  std::vector<json> alternates;
};

constexpr size_t kAlternates = 4;

// The math a record ran on and its time's fraction of that math's floor, for runs from before the TF32 ceiling
// too: the math is the record's "math", else details.math, else config.math, else fp32; the fraction its
// roofline_fraction_math, else for fp32 its roofline_fraction_own (the same floor), else NaN (not known).
struct MathFraction {
  std::string math;
  double fraction;
};
MathFraction math_fraction(const json& record);

// Two medians differ beyond noise when their gap exceeds this relative amount: the larger of 1% and
// three times the combined relative standard errors.
double noise_threshold(const json& a, const json& b);
// Per problem: the fastest ok record, then among those within noise of it the simplest (lowest
// complexity, then fastest). Records of any other status are never chosen.
std::vector<Choice> select_best(const std::vector<json>& records);

// The records of several runs on one GPU model as one set for select_best, so that a choice is fast in
// every run (a library whose time moves from run to run is judged by its slowest): per problem, a
// candidate's record is its slowest run's, read as select_best reads a run, with every run's median under
// "repeats"; one that failed in a run (no usable full-fidelity record there, only a failure) keeps that
// failed record (the worst: a wrong result or runtime error before any other) and is never chosen; one a
// run did not measure is judged on the runs that did.
std::vector<json> combine_repeats(const std::vector<const std::vector<json>*>& runs);

}  // namespace convtune
