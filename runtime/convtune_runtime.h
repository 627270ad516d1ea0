// convtune's runtime for applications: runs the candidate that a tuning run chose for a shape.
// Needs only this header and the convtune_runtime library (docs/DISPATCH.md); no harness headers.
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

namespace convtune_runtime {

// 'same' 2D cross-correlation of an h x w float image with a (2r+1)^2 filter, zero ghost cells:
// out(i, j) = sum_{m,n in [-r, r]} in(i+m, j+n) * f(m+r, n+r), all row-major device arrays.
// Runs on the device that is current when it is constructed. Not thread-safe: one object per thread.
class Conv2d {
 public:
  // Loads dispatch.json, picks the candidate for (h, w, r) (exact, nearest or default rule), and
  // compiles it once (kernels are cached on disk, see CONVTUNE_CACHE_DIR). Throws std::runtime_error.
  Conv2d(const std::string& dispatch_json_path, int h, int w, int r);
  ~Conv2d();
  Conv2d(const Conv2d&) = delete;
  Conv2d& operator=(const Conv2d&) = delete;

  const std::string& candidate() const;  // e.g. "conv2d.register_tiled[block_x=32,block_y=8,px=4,py=2]"
  const std::string& rule() const;       // "exact" | "nearest" | "default"

  // (2r+1)^2 floats on the device. Some candidates read it on every run: keep it alive, and call
  // set_filter again after changing its contents (others copy or transform it here).
  void set_filter(const float* d_filter, cudaStream_t s);
  // h * w floats each; asynchronous on s. Throws if set_filter was not called.
  void run(const float* d_in, float* d_out, cudaStream_t s);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The variants this library can run (a diagnostic: empty means they were dropped at link time;
// link with $<LINK_LIBRARY:WHOLE_ARCHIVE,convtune_runtime>).
std::vector<std::string> available_variants();

}  // namespace convtune_runtime
