// The dispatch rules, written once: `lookup()`, `check-dispatch` and the runtime library call them through
// harness/dispatch_table.h, and every exported header embeds this file verbatim. Standard library only.
//
// For a problem of a family: an exact entry; else, where the table carries a performance model for the
// family, the candidate with the lowest predicted time among those that can run the shape; else the nearest
// entry that can run it; else the family's safe default. A caller that knows what can run (the harness
// asks each variant's can_implement) passes a CanRun; without one every candidate is taken to run.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace convtune_dispatch {

constexpr int kMaxDims = 16;      // the family with the most dims has 14
constexpr int kMaxParams = 12;    // tunables of one candidate (layer_fwd.direct_tiled with an epilogue has 9)
constexpr int kMaxFeatures = 512;  // a model's features (dims x numeric tunables dominate)
constexpr int kMaxQuantities = 8;  // quantities a family derives from its dims for its model
constexpr int kMaxSteps = 32;      // steps of one quantity's program

// A tunable's value: an integer (str_value == nullptr) or a name.
struct Param {
  const char* name;
  int64_t int_value;
  const char* str_value;
};

// One measured problem and its best candidate, or a candidate alone (a default, a model's candidate: dims
// all 0, median_ms 0). dims are in the family's order (FamilyInfo::dims).
struct Entry {
  const char* family;
  int64_t dims[kMaxDims];
  const char* variant;
  Param params[kMaxParams];
  int param_count;
  double median_ms;
  const char* candidate;
};

// A quantity a family derives from its dims for its model (a layer pass's GEMM extents: what decides how a
// tile fits, which no single dim shows), as a program of a small stack machine: push a dim (arg: its index)
// or a constant, or replace the top two values a, b by a + b, a - b, a * b or floor(a / b).
enum StepOp : int { kPushDim = 0, kPushConstant = 1, kAdd = 2, kSub = 3, kMul = 4, kDiv = 5 };
struct Step {
  int op;
  int64_t arg;
};
struct Quantity {
  const char* name;
  const Step* steps;
  int step_count;
};

// A program's value on dims; 0 where it divides by 0. Programs are checked when a table is read
// (compile_quantity in harness/dispatch_table.cpp): each step has its operands.
inline double quantity_value(const Quantity& q, const int64_t* dims) {
  double stack[kMaxSteps];
  int top = 0;
  if (q.step_count > kMaxSteps) return 0;
  for (int i = 0; i < q.step_count; ++i) {
    const Step& s = q.steps[i];
    if (s.op == kPushDim || s.op == kPushConstant) {
      stack[top++] = s.op == kPushDim ? double(dims[s.arg]) : double(s.arg);
      continue;
    }
    const double b = stack[--top], a = stack[top - 1];
    stack[top - 1] = s.op == kAdd ? a + b : s.op == kSub ? a - b : s.op == kMul ? a * b : b != 0 ? std::floor(a / b) : 0;
  }
  return top == 1 ? stack[0] : 0;
}

// A performance model of one family: gradient-boosted regression trees over features() that predict
// log2(median time / the problem's floor), so that candidates of one shape compare by prediction alone.
// As compiled (the table's JSON keeps XGBoost's feature -1 at leaves): a leaf a walk can reach links to
// itself on both sides, so that every walk takes Model::depth steps without asking whether it has arrived,
// and its threshold is its value (16 bytes a node; a layer model's walks 27 -> 22 us against a separate value
// field, docs/DISPATCH.md). Nodes no walk reaches keep feature -1.
struct Node {
  int feature;
  float threshold;  // a split's; a leaf's contribution
  int next[2];      // node indices: next[0] when the feature < threshold, else next[1]
};
struct Model {
  const char* const* variants;  // one-hot features, in this order
  int variant_count;
  const char* const* numeric;   // integer tunables: log2(value + 1), and each dim against each of them
  int numeric_count;
  const char* const* string_keys;    // (key, value) one-hot features of named tunables
  const char* const* string_values;
  int string_count;
  float base;
  const Node* nodes;
  const int* roots;  // each tree's first node
  int tree_count;
  const Entry* candidates;  // what the model chooses among
  int candidate_count;
  const float* candidate_features;  // static_features() of each candidate, one row each
  int depth;                        // the deepest tree's levels of splits
  // Optional (a model without them has none of their features): the family's derived quantities; what a
  // candidate's variant derives from its config (traits, read like integer tunables; a trait named after a
  // quantity is the candidate's tile along it); the SMs of the table's GPU, over which tiles make waves.
  const Quantity* quantities;
  int quantity_count;
  const char* const* traits;
  int trait_count;
  int sms;
  // The lookup's candidates: the first lookup_count (0: all). First-use tuning ranks them all: more configs to
  // time from, at no cost to a lookup's tree walks.
  int lookup_count;
};

// How many of m's candidates a lookup ranks.
inline int lookup_candidates(const Model& m) {
  return m.lookup_count > 0 && m.lookup_count < m.candidate_count ? m.lookup_count : m.candidate_count;
}

// constraint[i]: entries equal in dim i are preferred by the nearest rule (compile-time in kernels);
// required[i]: an entry that differs in dim i is never used (it decides what a config may do, e.g. TF32 math).
struct FamilyInfo {
  const char* name;
  int n_dims;
  const char* dims[kMaxDims];
  bool constraint[kMaxDims];
  bool required[kMaxDims];
  int default_index;  // into Table::defaults, -1 if none
  int model_index;    // into Table::models, -1 if none
  // A caller may pass only the first min_dims dims: the rest take these values (dims added later with a
  // default, e.g. conv2d's batch b, so that code written before them keeps working).
  int min_dims;
  int64_t defaults[kMaxDims];
};

struct Table {
  const char* device;
  const char* compute_capability;
  const FamilyInfo* families;
  int family_count;
  const Entry* entries;  // sorted by problem key; on equal distances the first wins
  int entry_count;
  const Entry* defaults;
  const Model* models;
};

struct Choice {
  const Entry* entry;  // nullptr when rule is "none"
  const char* rule;    // "exact" | "model" | "nearest" | "default" | "none"
  float predicted;     // rule "model": log2(predicted time / the problem's floor); else 0
};

// Whether `candidate` can run a problem of `dims` here. nullptr: everything can.
using CanRun = bool (*)(const Entry& candidate, const int64_t* dims, void* context);

inline const FamilyInfo* find_family(const Table& t, const char* family) {
  for (int i = 0; i < t.family_count; ++i)
    if (family && std::strcmp(t.families[i].name, family) == 0) return &t.families[i];
  return nullptr;
}

inline bool can_run(CanRun check, void* context, const Entry& e, const int64_t* dims) {
  return !check || check(e, dims, context);
}

// Integer tunables and traits: each read as log2(value + 1), and each against each dim and quantity.
inline int integer_count(const Model& m) { return m.numeric_count + m.trait_count; }

inline int feature_count(const Model& m, const FamilyInfo& f) {
  const int q = m.quantity_count, integers = integer_count(m);
  return f.n_dims + 1 + m.variant_count + integers + m.string_count + f.n_dims * integers +
         (q ? q + 1 + q * integers + 2 * q + 2 : 0);
}

inline const Param* find_param(const Entry& c, const char* name) {
  for (int i = 0; i < c.param_count; ++i)
    if (std::strcmp(c.params[i].name, name) == 0) return &c.params[i];
  return nullptr;
}

// What the model knows of a candidate alone: its variant and named tunables one-hot, and log2(value + 1) of
// each integer tunable and each trait (traits[t], -1 where the variant has none: -1 here). Computed once per
// candidate (Model::candidate_features).
inline int static_feature_count(const Model& m) { return m.variant_count + integer_count(m) + m.string_count; }

inline void static_features(const Model& m, const Entry& c, const int64_t* traits, float* out) {
  int n = 0;
  for (int v = 0; v < m.variant_count; ++v) out[n++] = std::strcmp(c.variant, m.variants[v]) == 0 ? 1.0f : 0.0f;
  for (int k = 0; k < m.numeric_count; ++k) {
    const Param* p = find_param(c, m.numeric[k]);
    out[n++] = p && !p->str_value ? float(std::log2(double(p->int_value) + 1.0)) : -1.0f;
  }
  for (int t = 0; t < m.trait_count; ++t) out[n++] = traits && traits[t] >= 0 ? float(std::log2(double(traits[t]) + 1.0)) : -1.0f;
  for (int s = 0; s < m.string_count; ++s) {
    const Param* p = find_param(c, m.string_keys[s]);
    out[n++] = p && p->str_value && std::strcmp(p->str_value, m.string_values[s]) == 0 ? 1.0f : 0.0f;
  }
}

// The model's inputs for a candidate (its static_features) on a problem whose dims give log_dims[i] =
// log2(dims[i] + 1): those and their sum (the size), the static features, and each dim over each integer
// tunable and trait in log2 (how many tiles, maps or splits the shape makes of it; -100 where absent). With
// quantities (their values on the problem in `quantities`, `tiles[q]` the trait that is the candidate's tile
// along quantity q or -1): their log2 and its sum, each over each integer tunable and trait, and where the
// candidate has the tile: log2 of the tiles along it and how full the last is, then log2 of the CTAs (the
// product of the tile counts) per SM and how full their last wave is (-100 and -1 where absent).
inline int features(const Model& m, const FamilyInfo& f, const double* log_dims, const double* quantities,
                    const int* tiles, const float* candidate, float* out) {
  int n = 0;
  double size = 0;
  for (int i = 0; i < f.n_dims; ++i) {
    out[n++] = float(log_dims[i]);
    size += log_dims[i];
  }
  out[n++] = float(size);
  const int statics = static_feature_count(m), integers = integer_count(m);
  for (int j = 0; j < statics; ++j) out[n++] = candidate[j];
  const float* logs = candidate + m.variant_count;
  for (int i = 0; i < f.n_dims; ++i)
    for (int k = 0; k < integers; ++k) out[n++] = logs[k] < 0 ? -100.0f : float(log_dims[i] - double(logs[k]));
  if (!m.quantity_count) return n;
  double log_q[kMaxQuantities], sum = 0;
  for (int q = 0; q < m.quantity_count; ++q) {
    log_q[q] = std::log2(std::max(quantities[q], 0.0) + 1.0);
    out[n++] = float(log_q[q]);
    sum += log_q[q];
  }
  out[n++] = float(sum);
  for (int q = 0; q < m.quantity_count; ++q)
    for (int k = 0; k < integers; ++k) out[n++] = logs[k] < 0 ? -100.0f : float(log_q[q] - double(logs[k]));
  double ctas = 1;
  bool tiled = false;
  for (int q = 0; q < m.quantity_count; ++q) {
    const float log_tile = tiles[q] < 0 ? -1.0f : logs[m.numeric_count + tiles[q]];
    if (log_tile < 0 || quantities[q] < 1) {
      out[n++] = -100.0f;
      out[n++] = -1.0f;
      continue;
    }
    const double tile = std::max(1.0, std::round(std::exp2(double(log_tile)) - 1.0));
    const double count = std::ceil(quantities[q] / tile);
    out[n++] = float(std::log2(count));
    out[n++] = float(quantities[q] / (count * tile));
    ctas *= count;
    tiled = true;
  }
  const double waves = tiled && m.sms > 0 ? ctas / m.sms : 0;
  out[n++] = waves > 0 ? float(std::log2(waves)) : -100.0f;
  out[n++] = waves > 0 ? float(waves / std::ceil(waves)) : -1.0f;
  return n;
}

// The trait that is the tile along each quantity (the one of the same name), or -1.
inline void quantity_tiles(const Model& m, int* tiles) {
  for (int q = 0; q < m.quantity_count; ++q) {
    tiles[q] = -1;
    for (int t = 0; t < m.trait_count; ++t)
      if (std::strcmp(m.quantities[q].name, m.traits[t]) == 0) tiles[q] = t;
  }
}

inline void quantity_values(const Model& m, const int64_t* dims, double* out) {
  for (int q = 0; q < m.quantity_count; ++q) out[q] = quantity_value(m.quantities[q], dims);
}

inline void log_dims_of(const FamilyInfo& f, const int64_t* dims, double* out) {
  for (int i = 0; i < f.n_dims; ++i) out[i] = std::log2(double(dims[i]) + 1.0);
}

// The node a step leads to, indexed rather than branched to: a branch is mispredicted on about half of the
// nodes.
inline int child(const Node& node, const float* x) { return node.next[int(!(x[node.feature] < node.threshold))]; }

inline float predict(const Model& m, const float* x) {
  float y = m.base;
  for (int t = 0; t < m.tree_count; ++t) {
    int i = m.roots[t];
    for (int d = 0; d < m.depth; ++d) i = child(m.nodes[i], x);
    y += m.nodes[i].threshold;
  }
  return y;
}

// predict() of n <= kWalkTogether feature rows at once: each tree walked by all rows a level at a time, so
// that the rows' independent loads overlap (16 keep more loads in flight than 8; 32 were slower). Always 16
// walks (rows past n repeat row 0), the level's loop unrolled: the walks' positions stay in registers, 15%
// faster than a loop of n (g++ -O2, 36-39 -> 32-35 us a layer shape's select()).
constexpr int kWalkTogether = 16;
inline void predict_rows(const Model& m, const float (*x)[kMaxFeatures], int n, float* y) {
  const float* row[kWalkTogether];
  float sum[kWalkTogether];
  for (int c = 0; c < kWalkTogether; ++c) row[c] = x[c < n ? c : 0], sum[c] = m.base;
  for (int t = 0; t < m.tree_count; ++t) {
    int at[kWalkTogether];
    for (int c = 0; c < kWalkTogether; ++c) at[c] = m.roots[t];
    for (int d = 0; d < m.depth; ++d) {
#if defined(__clang__)
#pragma unroll
#elif defined(__GNUC__)
#pragma GCC unroll 16
#endif
      for (int c = 0; c < kWalkTogether; ++c) at[c] = child(m.nodes[at[c]], row[c]);
    }
    for (int c = 0; c < kWalkTogether; ++c) sum[c] += m.nodes[at[c]].threshold;
  }
  for (int c = 0; c < n; ++c) y[c] = sum[c];
}

// Picks, k times, the lowest key not taken yet whose item can run (ties: the lower index), so that the
// check (can_implement in the harness) runs on the few best items only. Returns how many were found.
template <class Key, class Runs>
inline int take_lowest(const Key* keys, int n, bool* taken, int* out, int k, Runs runs) {
  int found = 0;
  while (found < k) {
    int best = -1;
    for (int i = 0; i < n; ++i)
      if (!taken[i] && (best < 0 || keys[i] < keys[best])) best = i;
    if (best < 0) break;
    taken[best] = true;
    if (runs(best)) out[found++] = best;
  }
  return found;
}

constexpr int kMaxCandidates = 256;  // a model's candidates

// The model's k lowest predictions among the first `considered` candidates (-1: the lookup's) that can run,
// best first: their indices into m.candidates in `out` (and the predictions in `predicted`, if given).
// Returns how many (<= k).
inline int rank_by_model(const Model& m, const FamilyInfo& f, const int64_t* dims, CanRun check, void* context,
                         int* out, float* predicted, int k, int considered = -1) {
  const int count = considered < 0 ? lookup_candidates(m) : std::min(considered, m.candidate_count);
  if (feature_count(m, f) > kMaxFeatures || count > kMaxCandidates || m.quantity_count > kMaxQuantities)
    return 0;
  float x[kWalkTogether][kMaxFeatures], y[kMaxCandidates];  // (32 KiB of stack: features a few rows at a time)
  bool taken[kMaxCandidates] = {};
  double log_dims[kMaxDims], quantities[kMaxQuantities];
  int tiles[kMaxQuantities];
  log_dims_of(f, dims, log_dims);
  quantity_values(m, dims, quantities);
  quantity_tiles(m, tiles);
  for (int first = 0; first < count; first += kWalkTogether) {
    const int n = std::min(kWalkTogether, count - first);
    for (int c = 0; c < n; ++c)
      features(m, f, log_dims, quantities, tiles, m.candidate_features + (first + c) * static_feature_count(m), x[c]);
    predict_rows(m, x, n, y + first);
  }
  const int n = take_lowest(y, count, taken, out, k,
                            [&](int c) { return can_run(check, context, m.candidates[c], dims); });
  if (predicted)
    for (int j = 0; j < n; ++j) predicted[j] = y[out[j]];
  return n;
}

// Distances of entry e from the problem: sums over dims of |log2((a + 1) / (b + 1))|, over the constraint
// dims and over the others. False when e is of another family or differs in a required dim.
inline bool entry_distance(const FamilyInfo& f, const Entry& e, const int64_t* dims, double* constraint_d,
                           double* shape_d, bool* exact) {
  if (std::strcmp(e.family, f.name) != 0) return false;
  *constraint_d = *shape_d = 0;
  *exact = true;
  for (int i = 0; i < f.n_dims; ++i) {
    if (e.dims[i] != dims[i] && f.required[i]) return false;
    *exact = *exact && e.dims[i] == dims[i];
    const double d = std::fabs(std::log2((double(e.dims[i]) + 1.0) / (double(dims[i]) + 1.0)));
    (f.constraint[i] ? *constraint_d : *shape_d) += d;
  }
  return true;
}

// The k nearest entries that can run, nearest first: by constraint distance, then shape distance, then
// the earlier entry. Their indices into t.entries in `out`; returns how many (<= k). Each pass takes the
// next entry in that order, so that the check (can_implement in the harness) runs on the nearest only.
struct Distance {
  double constraint, shape;
  int index;
  bool operator<(const Distance& o) const {
    if (constraint < o.constraint - 1e-9) return true;
    if (constraint > o.constraint + 1e-9) return false;
    if (shape < o.shape - 1e-9) return true;
    if (shape > o.shape + 1e-9) return false;
    return index < o.index;
  }
};
inline int nearest_entries(const Table& t, const FamilyInfo& f, const int64_t* dims, CanRun check, void* context,
                           int* out, int k) {
  int found = 0;
  Distance last{0, 0, -1};
  bool first = true;
  while (found < k) {
    Distance next{0, 0, -1};
    for (int e = 0; e < t.entry_count; ++e) {
      Distance d{0, 0, e};
      bool exact;
      if (!entry_distance(f, t.entries[e], dims, &d.constraint, &d.shape, &exact)) continue;
      if ((first || last < d) && (next.index < 0 || d < next)) next = d;
    }
    if (next.index < 0) break;
    first = false;
    last = next;
    if (can_run(check, context, t.entries[next.index], dims)) out[found++] = next.index;
  }
  return found;
}

inline Choice select(const Table& t, const char* family, const int64_t* dims, int n_dims, CanRun check = nullptr,
                     void* context = nullptr) {
  const FamilyInfo* f = find_family(t, family);
  if (!f || !dims || n_dims < f->min_dims || n_dims > f->n_dims) return {nullptr, "none", 0};
  int64_t full[kMaxDims];
  if (n_dims < f->n_dims) {
    for (int i = 0; i < f->n_dims; ++i) full[i] = i < n_dims ? dims[i] : f->defaults[i];
    dims = full;
    n_dims = f->n_dims;
  }
  for (int i = 0; i < n_dims; ++i)
    if (dims[i] < 0) return {nullptr, "none", 0};
  for (int e = 0; e < t.entry_count; ++e) {
    double c, s;
    bool exact;
    if (entry_distance(*f, t.entries[e], dims, &c, &s, &exact) && exact && can_run(check, context, t.entries[e], dims))
      return {&t.entries[e], "exact", 0};
  }
  if (f->model_index >= 0 && t.models) {
    const Model& m = t.models[f->model_index];
    int best;
    float predicted;
    if (rank_by_model(m, *f, dims, check, context, &best, &predicted, 1) == 1)
      return {&m.candidates[best], "model", predicted};
  }
  int nearest;
  if (nearest_entries(t, *f, dims, check, context, &nearest, 1) == 1) return {&t.entries[nearest], "nearest", 0};
  if (f->default_index >= 0 && can_run(check, context, t.defaults[f->default_index], dims))
    return {&t.defaults[f->default_index], "default", 0};
  return {nullptr, "none", 0};
}

// A fleet: one table per GPU model. The table of the exact model (its name); else of a model of the same
// architecture (compute capability); else none applies: -1, and the caller uses the first table's defaults
// alone (defaults_only). With a family, only tables that have it count: a family one model's run did not
// sweep is taken from another model's table of the same architecture.
inline int pick_table(const Table* tables, int n, const char* device_name, const char* compute_capability,
                      const char** rule, const char* family = nullptr) {
  auto has = [&](int i) { return !family || find_family(tables[i], family) != nullptr; };
  for (int i = 0; i < n; ++i)
    if (device_name && std::strcmp(tables[i].device, device_name) == 0 && has(i)) {
      *rule = "exact model";
      return i;
    }
  for (int i = 0; i < n; ++i)
    if (compute_capability && compute_capability[0] && std::strcmp(tables[i].compute_capability, compute_capability) == 0 &&
        has(i)) {
      *rule = "same architecture";
      return i;
    }
  *rule = "default";
  return -1;
}

// A table's safe defaults alone: what a GPU gets that no table of the fleet was measured on.
inline Table defaults_only(const Table& t) {
  Table d = t;
  d.entry_count = 0;
  d.models = nullptr;
  return d;
}

}  // namespace convtune_dispatch
