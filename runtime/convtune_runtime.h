// convtune's runtime for applications: runs the candidate that a tuning run chose for a problem of any
// family. Needs only this header and the convtune_runtime library (docs/DISPATCH.md); no harness headers.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace convtune_runtime {

// One operand of a problem: a float array on the device.
struct Operand {
  std::string name;  // e.g. "signal", "filter", "output"
  int64_t elements;  // floats
};

// One problem of one family (conv2d, conv1d, conv1d_parts...: `convtune list` shows their dims and
// operands), run by the candidate the dispatch table chose for it. Runs on the device that is current
// when it is constructed. Not thread-safe: one object per thread.
// A candidate to try before the table's rules (Convolution's FirstChoice constructor): JSON text
// {"variant": ..., "config": {...}}, as Convolution::choice() gives it.
struct FirstChoice {
  std::string json;
};

class Convolution {
 public:
  // Validates the problem (unknown family, missing, unknown or out-of-range dim: the error names it;
  // dims with a default may be left out), picks the table's candidate (exact, model, nearest or default rule),
  // and prepares it (kernels are compiled once and cached on disk, see CONVTUNE_CACHE_DIR). When that
  // candidate cannot run here it tries the table's default for the family, then the family's simplest
  // non-library variant. Throws std::runtime_error.
  // tune_unseen: when the table did not measure this shape (rule "model" or "nearest"), also prepares the
  // shortlist (convtune::tuning_shortlist: the model's best candidates and what won or came close on the
  // nearest measured shapes) and,
  // at the first bind, times each on the bound operands and keeps the fastest (rule "tuned"). That
  // first bind then waits for the stream and takes a few runs of each candidate.
  Convolution(const std::string& dispatch_json_path, const std::string& family,
              const std::map<std::string, int64_t>& dims, bool tune_unseen = false);
  // The same, but `first` is prepared first (rule "cached"): e.g. what first-use tuning chose in an earlier
  // process. When it cannot run here (another convtune, another GPU), the table's rules go on as above.
  Convolution(const std::string& dispatch_json_path, const std::string& family,
              const std::map<std::string, int64_t>& dims, const FirstChoice& first);
  ~Convolution();
  Convolution(const Convolution&) = delete;
  Convolution& operator=(const Convolution&) = delete;

  const std::string& family() const;
  const std::map<std::string, int64_t>& dims() const;  // as validated, defaults filled in
  // The family's operands in order: the inputs, then the output (its size is operands().back()).
  const std::vector<Operand>& operands() const;
  // The candidate that runs, as FirstChoice takes it: {"variant": ..., "config": {...}} (JSON text).
  std::string choice() const;
  const std::string& candidate() const;  // e.g. "conv1d.overlap_discard[outputs_per_thread=8,...]"
  // "exact" | "model" | "nearest" | "default" (the table's choice by that rule), "default" also when the choice
  // could not run and the table's default did, "simplest" when only the family's simplest variant could,
  // "tuned" after tune_unseen timed the shortlist, "cached" for a FirstChoice that could run.
  const std::string& rule() const;
  // Which table of the file was used: "single table (<GPU>)", or for a fleet table "exact model (<GPU>)",
  // "same architecture (<GPU it was measured on>)" or "default (...)" (no table of this architecture).
  const std::string& table() const;

  // Binds every operand: `inputs` in operands() order without the output, then the output; each a
  // device array of operands()[i].elements floats. Weight preparation happens here (a filter copied to
  // constant memory, its spectrum...), asynchronously on s. Some candidates read the inputs on every
  // run: keep them alive, and bind again after changing a filter's contents or any pointer.
  void bind(const std::vector<const float*>& inputs, float* output, cudaStream_t s);
  // Computes the output from the bound operands, asynchronously on s. Throws if bind was not called.
  void run(cudaStream_t s);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A convenience for family conv2d: 'same' 2D cross-correlation of an h x w float image with a
// (2r+1)^2 filter, zero ghost cells: out(i, j) = sum_{m,n in [-r, r]} in(i+m, j+n) * f(m+r, n+r),
// all row-major device arrays. Convolution(path, "conv2d", {{"h", h}, {"w", w}, {"r", r}}) beneath.
class Conv2d {
 public:
  Conv2d(const std::string& dispatch_json_path, int h, int w, int r, bool tune_unseen = false);

  const std::string& candidate() const { return conv_.candidate(); }
  const std::string& rule() const { return conv_.rule(); }
  const std::string& table() const { return conv_.table(); }

  // (2r+1)^2 floats on the device. Keep it alive, and call set_filter again after changing it.
  void set_filter(const float* d_filter, cudaStream_t s);
  // h * w floats each; asynchronous on s. Rebinds (redoing the filter's preparation) only when a
  // pointer differs from the last run's. Throws if set_filter was not called.
  void run(const float* d_in, float* d_out, cudaStream_t s);

 private:
  Convolution conv_;
  const float* filter_ = nullptr;
  const float* in_ = nullptr;
  float* out_ = nullptr;
};

// A problem's dims as the constructor validates them, defaults filled in; needs no table and no GPU. Throws
// std::invalid_argument naming the dim and what is allowed (e.g. "problem.r: 40 is out of range ...").
std::map<std::string, int64_t> validate_problem(const std::string& family, const std::map<std::string, int64_t>& dims);

// The variants this library can run (a diagnostic: empty means they were dropped at link time;
// link with $<LINK_LIBRARY:WHOLE_ARCHIVE,convtune_runtime>).
std::vector<std::string> available_variants();

}  // namespace convtune_runtime
