// Shared machinery of the conv2d variants whose kernels are compiled with NVRTC: the radius and the
// config become compile-time defines, the kernel is always `conv2d_kernel(in, filter, out, h, w)` (a kernel
// may declare the batch as a sixth `int`: the launch passes it, and a kernel of five never reads it),
// and bind() copies the filter to the kernel's `c_filter` in constant memory unless the variant's
// constant_filter() says its kernel reads the filter argument instead.
#pragma once
#include <string>
#include <vector>

#include "harness/jit_options.h"
#include "harness/variant.h"
#include "variants/conv2d/conv2d.h"

namespace convtune {

constexpr int kMaxDirectRadius = 16;

struct LaunchShape {
  dim3 grid, block;
  int dynamic_smem = 0;
  int static_smem = 0;  // what the kernel declares, for can_implement (counted before compiling)
  // Persistent blocks: grid.x work items (of all images), grid.z 1, the kernel striding over the items; the
  // plan launches persistent_grid_x of them (harness/jit.h). Else grid.z is the batch.
  bool persistent = false;
};

class JitConv2dVariant : public Variant {
 public:
  std::string family() const override { return kConv2d; }
  Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const override;
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override;
  std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo& dev,
                                JitCache& jit) const override;

 protected:
  virtual std::string source() const = 0;
  // -D options beyond RADIUS, from the config (and the problem where a define depends on it).
  virtual std::vector<std::string> defines(const Conv2d& p, const Config& c) const = 0;
  virtual LaunchShape launch_shape(const Conv2d& p, const Config& c) const = 0;
  virtual bool constant_filter() const { return true; }
  virtual Status constraints(const Conv2d&, const Config&, const DeviceInfo&) const { return Status::yes(); }
};


// Global loads + stores a tiled kernel issues: per block, `tile_loads` input elements, plus the outputs.
double tiled_bytes(const Conv2d& p, int64_t tile_x, int64_t tile_y, double loads_per_block);
// Over a tile of b threads in one dimension, how many (thread, tap) pairs land inside the tile.
int64_t taps_inside_tile(int64_t b, int64_t r);

}  // namespace convtune
