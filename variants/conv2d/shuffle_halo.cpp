// conv2d.shuffle_halo: direct convolution with no shared memory. A thread loads the input rows of its 4
// columns at once, takes the halo columns from neighbouring lanes by shuffles, and stores py output rows
// (kernels/conv2d_shuffle_halo.cuh).
#include "variants/conv2d/jit_conv2d.h"

namespace convtune {
namespace {

// A thread holds 5 (py + 2r) input floats, 4 py sums and (2r + 1)^2 taps (these since the taps left constant
// memory). Past r = 3 that costs occupancy for no gain: measured on the H100 and H200 (8192^2, with the taps in
// constant memory), pipelined is faster from r = 3 on (0.209 against 0.216 ms on the H100). A rolling form that walked 8-64 rows with 2r + 1 accumulator rows lost to these short walks at
// every r (more registers, and its long walks stream worse); it was removed.
constexpr int kShuffleMaxRadius = 3;
// py: more rows a thread read each row fewer times from L2 and cost registers. On an H200 at 8192^2 r = 2 the
// best of each py took 0.1470 (3), 0.1410 (4), 0.1390 (5), 0.1404 (6) and 0.1393 ms (8); 3 and 6 never won.

class Conv2dShuffleHalo : public JitConv2dVariant {
 public:
  std::string name() const override { return "conv2d.shuffle_halo"; }
  std::string summary() const override {
    return "no shared memory: a thread loads the py + 2r input rows of its 4 columns at once, halo columns "
           "from neighbouring lanes by shuffles, py output rows, then exits";
  }
  int complexity() const override { return 3; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("block_x", "threads per block along x (4 columns each)", int_values({32, 64, 128, 256}))
        .add("block_y", "threads per block along y", int_values({1, 2, 4, 8}))
        .add("py", "output rows a thread (it reads py + 2r)", int_values({1, 2, 4, 5, 8}));
  }
  // Each thread reads py + 2r rows of its 4 columns; each warp, 8 edge columns a row.
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv2d p(prob);
    const int64_t bx = cfg_int(c, "block_x"), by = cfg_int(c, "block_y"), py = cfg_int(c, "py");
    const double per_block = double(by * (py + 2 * p.r) * (4 * bx + bx / 4));
    return {prob.direct_flops(), prob.direct_flops(), prob.min_bytes(), tiled_bytes(p, 4 * bx, by * py, per_block)};
  }

 protected:
  std::string source() const override { return "conv2d_shuffle_halo.cuh"; }
  std::vector<std::string> defines(const Conv2d&, const Config& c) const override {
    return {define("BLOCK_X", cfg_int(c, "block_x")), define("BLOCK_Y", cfg_int(c, "block_y")),
            define("PY", cfg_int(c, "py"))};
  }
  // The kernel reads the caller's filter: bind copies nothing (see the kernel's top comment).
  bool constant_filter() const override { return false; }
  LaunchShape launch_shape(const Conv2d& p, const Config& c) const override {
    const int bx = cfg_int(c, "block_x"), by = cfg_int(c, "block_y");
    return {dim3(ceil_div(p.w, 4 * int64_t(bx)), ceil_div(p.h, int64_t(by) * cfg_int(c, "py"))), dim3(bx, by), 0};
  }
  Status constraints(const Conv2d& p, const Config& c, const DeviceInfo&) const override {
    if (p.r > kShuffleMaxRadius)
      return Status::no("radius > " + std::to_string(kShuffleMaxRadius) + " (pipelined is faster there)");
    if (cfg_int(c, "block_x") % 32 != 0) return Status::no("block_x must be a multiple of 32 (whole warps)");
    const int threads = cfg_int(c, "block_x") * cfg_int(c, "block_y");
    if (threads < 64 || threads > 512) return Status::no("block_x * block_y must be 64 to 512 threads");
    return Status::yes();
  }
};

CONVTUNE_REGISTER_VARIANT(Conv2dShuffleHalo);

}  // namespace
}  // namespace convtune
