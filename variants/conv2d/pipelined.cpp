// conv2d.pipelined: register_tiled's FMAs fed by a cp.async pipeline that walks a column strip down the
// image, so global loads overlap computation and the vertical halo is read once per strip segment.
#include "variants/conv2d/jit_conv2d.h"

namespace convtune {
namespace {

// Above this many iterations of the unrolled loops over (input row, output row, tap, column),
// (py + 2r) * py * px * (2r + 1), compile time and code size grow past what full unrolling gains (the
// pairs of rows no filter row joins emit nothing); larger filters are spectral_tiled's.
constexpr int64_t kMaxUnrolledIterations = 8000;
constexpr int kPipelinedMaxRadius = 8;

class Conv2dPipelined : public JitConv2dVariant {
 public:
  std::string name() const override { return "conv2d.pipelined"; }
  std::string summary() const override {
    return "a block walks a column strip, staging input rows steps ahead with cp.async; py x px register patch";
  }
  int complexity() const override { return 5; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("block_x", "threads per block along x", int_values({32, 64}))
        .add("block_y", "threads per block along y", int_values({2, 4, 8}))
        .add("px", "outputs per thread along x (float4s of a window)", int_values({4, 8}))
        .add("py", "outputs per thread along y", int_values({2, 4, 8}))
        .add("stages", "steps of input rows in flight, this one included", int_values({2, 3, 4}))
        .add("steps", "steps of block_y * py rows a block walks down its strip", int_values({1, 2, 4, 16, 64}));
  }
  // Each strip stages its rows once (all_steps * ty of them) plus 2r halo rows per segment; the kernel
  // balances the segments, so they may walk fewer steps than configured.
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv2d p(prob);
    const int64_t all_steps = ceil_div(p.h, tile_y(c)), segments = ceil_div(all_steps, cfg_int(c, "steps"));
    const double staged_rows = double(all_steps * tile_y(c) + segments * 2 * p.r);
    const double staged = double(ceil_div(p.w, tile_x(c))) * staged_rows * double(pitch(p, c)) * double(p.b);
    return {prob.direct_flops(), prob.direct_flops(), prob.min_bytes(), 4.0 * (staged + double(p.pixels()))};
  }

 protected:
  std::string source() const override { return "conv2d_pipelined.cuh"; }
  static int64_t tile_x(const Config& c) { return int64_t(cfg_int(c, "block_x")) * cfg_int(c, "px"); }
  static int64_t tile_y(const Config& c) { return int64_t(cfg_int(c, "block_y")) * cfg_int(c, "py"); }
  // The kernel's staged row: from r rounded up to 4 left of the strip to the last thread's window end.
  static int64_t pitch(const Conv2d& p, const Config& c) {
    const int64_t lead = (p.r + 3) / 4 * 4, skew = lead - p.r, px = cfg_int(c, "px");
    const int64_t win = (skew + px + 2 * p.r + 3) / 4 * 4;
    return tile_x(c) - px + win;
  }
  std::vector<std::string> defines(const Conv2d&, const Config& c) const override {
    return {define("BLOCK_X", cfg_int(c, "block_x")), define("BLOCK_Y", cfg_int(c, "block_y")),
            define("PX", cfg_int(c, "px")), define("PY", cfg_int(c, "py")), define("STAGES", cfg_int(c, "stages"))};
  }
  LaunchShape launch_shape(const Conv2d& p, const Config& c) const override {
    const int64_t ty = tile_y(c), ring = cfg_int(c, "stages") * ty + 2 * p.r;
    const int64_t segments = ceil_div(ceil_div(p.h, ty), cfg_int(c, "steps"));
    return {dim3(ceil_div(p.w, tile_x(c)), unsigned(segments)), dim3(cfg_int(c, "block_x"), cfg_int(c, "block_y")),
            int(4 * ring * pitch(p, c) + 8 * cfg_int(c, "stages"))};
  }
  Status constraints(const Conv2d& p, const Config& c, const DeviceInfo& dev) const override {
    if (dev.cc_major < 8) return Status::no("pipelined stages rows with cp.async: compute capability 8.0 or later");
    if (cfg_int(c, "px") % 4 != 0) return Status::no("px must be a multiple of 4 (windows are read as float4s)");
    if (cfg_int(c, "stages") < 2) return Status::no("stages must be 2 or more (this step and one ahead)");
    if (p.r > kPipelinedMaxRadius) return Status::no("radius > " + std::to_string(kPipelinedMaxRadius) + " (spectral_tiled's range)");
    const int64_t py = cfg_int(c, "py");
    if ((py + 2 * p.r) * py * cfg_int(c, "px") * p.fw() > kMaxUnrolledIterations)
      return Status::no("the unrolled patch loops ((py + 2r) * py * px * (2r + 1) iterations) are over " +
                        std::to_string(kMaxUnrolledIterations));
    return Status::yes();
  }
};

CONVTUNE_REGISTER_VARIANT(Conv2dPipelined);

}  // namespace
}  // namespace convtune
