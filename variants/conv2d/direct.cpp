// The direct conv2d variants: the seeds' five strategies and a register-tiled one beyond them.
#include <algorithm>

#include "variants/conv2d/jit_conv2d.h"

namespace convtune {
namespace {

double outputs(const Conv2d& p) { return double(p.pixels()); }
double taps(const Conv2d& p) { return double(p.fw() * p.fw()); }

Cost direct_cost(const Problem& prob, double bytes_model) {
  return {prob.direct_flops(), prob.direct_flops(), prob.min_bytes(), bytes_model};
}

// One thread per output, filter in global memory.
class Conv2dNaive : public JitConv2dVariant {
 public:
  std::string name() const override { return "conv2d.naive"; }
  std::string summary() const override { return "one thread per output; image and filter from global memory"; }
  int complexity() const override { return 0; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("block_x", "threads per block along x", int_values({16, 32, 64, 128}))
        .add("block_y", "threads per block along y", int_values({1, 2, 4, 8, 16}));
  }
  Cost cost(const Problem& prob, const Config&) const override {
    const Conv2d p(prob);  // every tap loads an input and a filter value
    return direct_cost(prob, 4.0 * outputs(p) * (2.0 * taps(p) + 1.0));
  }

 protected:
  std::string source() const override { return "conv2d_naive.cuh"; }
  bool constant_filter() const override { return false; }
  std::vector<std::string> defines(const Conv2d&, const Config& c) const override {
    return {define("BLOCK_X", cfg_int(c, "block_x")), define("BLOCK_Y", cfg_int(c, "block_y"))};
  }
  LaunchShape launch_shape(const Conv2d& p, const Config& c) const override {
    const int bx = cfg_int(c, "block_x"), by = cfg_int(c, "block_y");
    return {dim3(ceil_div(p.w, bx), ceil_div(p.h, by)), dim3(bx, by)};
  }
};

// One thread per output, filter in constant memory.
class Conv2dConstant : public Conv2dNaive {
 public:
  std::string name() const override { return "conv2d.constant"; }
  std::string summary() const override { return "one thread per output; filter in constant memory"; }
  int complexity() const override { return 1; }
  Cost cost(const Problem& prob, const Config&) const override {
    const Conv2d p(prob);
    return direct_cost(prob, 4.0 * outputs(p) * (taps(p) + 1.0));
  }

 protected:
  std::string source() const override { return "conv2d_constant.cuh"; }
  bool constant_filter() const override { return true; }
};

// Constant-memory filter and thread coarsening along x or y.
class Conv2dCoarsened : public JitConv2dVariant {
 public:
  std::string name() const override { return "conv2d.coarsened"; }
  std::string summary() const override {
    return "constant-memory filter; each thread computes `coarsen` consecutive outputs along `direction`";
  }
  int complexity() const override { return 2; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("block_x", "threads per block along x", int_values({32, 64, 128}))
        .add("block_y", "threads per block along y", int_values({1, 2, 4, 8}))
        .add("coarsen", "outputs per thread", int_values({2, 4, 8}))
        .add("direction", "axis of a thread's consecutive outputs", {"x", "y"});
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv2d p(prob);
    const double k = cfg_int(c, "coarsen");
    // Per thread: FW rows of (k + 2r) inputs along x, or (k + 2r) rows of FW inputs along y.
    const double loads_per_thread = double(p.fw()) * (k + 2.0 * double(p.r));
    return direct_cost(prob, 4.0 * (outputs(p) / k * loads_per_thread + outputs(p)));
  }

 protected:
  std::string source() const override { return "conv2d_coarsened.cuh"; }
  std::vector<std::string> defines(const Conv2d&, const Config& c) const override {
    return {define("BLOCK_X", cfg_int(c, "block_x")), define("BLOCK_Y", cfg_int(c, "block_y")),
            define("COARSEN", cfg_int(c, "coarsen")), define("DIR_Y", c.at("direction") == "y")};
  }
  LaunchShape launch_shape(const Conv2d& p, const Config& c) const override {
    const int bx = cfg_int(c, "block_x"), by = cfg_int(c, "block_y"), k = cfg_int(c, "coarsen");
    const bool y = c.at("direction") == "y";
    return {dim3(ceil_div(p.w, int64_t(bx) * (y ? 1 : k)), ceil_div(p.h, int64_t(by) * (y ? k : 1))), dim3(bx, by)};
  }
};

// Shared-memory tiles, block = input tile.
class Conv2dTiledIn : public JitConv2dVariant {
 public:
  std::string name() const override { return "conv2d.tiled_in"; }
  std::string summary() const override {
    return "shared-memory tile; block = input tile (halo loaded by extra threads that compute nothing)";
  }
  int complexity() const override { return 3; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("out_x", "output tile width", int_values({4, 8, 16, 24, 28}))
        .add("out_y", "output tile height", int_values({4, 8, 16, 24, 28}));
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv2d p(prob);  // the seeds' formula: each block loads its whole input tile once
    const int64_t ox = cfg_int(c, "out_x"), oy = cfg_int(c, "out_y");
    return direct_cost(prob, tiled_bytes(p, ox, oy, double((ox + 2 * p.r) * (oy + 2 * p.r))));
  }

 protected:
  std::string source() const override { return "conv2d_tiled_in.cuh"; }
  std::vector<std::string> defines(const Conv2d&, const Config& c) const override {
    return {define("OUT_X", cfg_int(c, "out_x")), define("OUT_Y", cfg_int(c, "out_y"))};
  }
  LaunchShape launch_shape(const Conv2d& p, const Config& c) const override {
    const int64_t ox = cfg_int(c, "out_x"), oy = cfg_int(c, "out_y");
    const int64_t ix = ox + 2 * p.r, iy = oy + 2 * p.r;
    return {dim3(ceil_div(p.w, ox), ceil_div(p.h, oy)), dim3(unsigned(ix), unsigned(iy)), 0, int(4 * ix * iy)};
  }
};

// Shared-memory tiles, block = output tile, halo from global memory (L2).
class Conv2dTiledHalo : public JitConv2dVariant {
 public:
  std::string name() const override { return "conv2d.tiled_halo_l2"; }
  std::string summary() const override {
    return "shared-memory tile; block = output tile; halo cells read from global memory (L2 hits)";
  }
  int complexity() const override { return 3; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("tile_x", "tile (and block) width", int_values({16, 32, 64}))
        .add("tile_y", "tile (and block) height", int_values({4, 8, 16, 32}));
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv2d p(prob);
    const int64_t tx = cfg_int(c, "tile_x"), ty = cfg_int(c, "tile_y");
    // Per block: the tile once, plus every (output, tap) pair whose input lies outside the tile.
    const double halo = taps(p) * double(tx * ty) - double(taps_inside_tile(tx, p.r) * taps_inside_tile(ty, p.r));
    return direct_cost(prob, tiled_bytes(p, tx, ty, double(tx * ty) + halo));
  }

 protected:
  std::string source() const override { return "conv2d_tiled_halo.cuh"; }
  std::vector<std::string> defines(const Conv2d&, const Config& c) const override {
    return {define("TILE_X", cfg_int(c, "tile_x")), define("TILE_Y", cfg_int(c, "tile_y"))};
  }
  LaunchShape launch_shape(const Conv2d& p, const Config& c) const override {
    const int tx = cfg_int(c, "tile_x"), ty = cfg_int(c, "tile_y");
    return {dim3(ceil_div(p.w, tx), ceil_div(p.h, ty)), dim3(tx, ty), 0, 4 * tx * ty};
  }
};

// Shared-memory input tile + register blocking (PY x PX outputs per thread).
class Conv2dRegisterTiled : public JitConv2dVariant {
 public:
  std::string name() const override { return "conv2d.register_tiled"; }
  std::string summary() const override {
    return "shared-memory input tile loaded coalesced; each thread computes a py x px patch from registers";
  }
  int complexity() const override { return 4; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("block_x", "threads per block along x", int_values({16, 32, 64}))
        .add("block_y", "threads per block along y", int_values({2, 4, 8, 16}))
        .add("px", "outputs per thread along x (vector width of shared loads)", int_values({1, 2, 4}))
        .add("py", "outputs per thread along y", int_values({1, 2, 4, 8}))
        .add("order", "outer loop: input rows (each serves py outputs) or filter rows (taps in registers)",
             {"input_rows", "filter_rows"});
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv2d p(prob);
    const int64_t tx = int64_t(cfg_int(c, "block_x")) * cfg_int(c, "px");
    const int64_t ty = int64_t(cfg_int(c, "block_y")) * cfg_int(c, "py");
    return direct_cost(prob, tiled_bytes(p, tx, ty, double(in_y(p, c) * pitch(p, c))));
  }

 protected:
  std::string source() const override { return "conv2d_register_tiled.cuh"; }
  static int64_t pitch(const Conv2d& p, const Config& c) {
    const int64_t px = cfg_int(c, "px"), tx = cfg_int(c, "block_x") * px;
    const int64_t win = (px + 2 * p.r + px - 1) / px * px;
    return (tx - px + win + 3) / 4 * 4;
  }
  static int64_t in_y(const Conv2d& p, const Config& c) { return int64_t(cfg_int(c, "block_y")) * cfg_int(c, "py") + 2 * p.r; }
  std::vector<std::string> defines(const Conv2d& p, const Config& c) const override {
    const int64_t px = cfg_int(c, "px"), py = cfg_int(c, "py");
    // Fully unrolled row loops grow the code with py * px * FW^2; past this it stops paying.
    const bool unroll_rows = (py + 2 * p.r) * py * px * p.fw() <= 6000;
    return {define("BLOCK_X", cfg_int(c, "block_x")), define("BLOCK_Y", cfg_int(c, "block_y")), define("PX", px),
            define("PY", py), define("FILTER_ROWS", c.at("order") == "filter_rows"), define("UNROLL_ROWS", unroll_rows)};
  }
  LaunchShape launch_shape(const Conv2d& p, const Config& c) const override {
    const int bx = cfg_int(c, "block_x"), by = cfg_int(c, "block_y");
    const int64_t tx = int64_t(bx) * cfg_int(c, "px"), ty = int64_t(by) * cfg_int(c, "py");
    return {dim3(ceil_div(p.w, tx), ceil_div(p.h, ty)), dim3(bx, by), int(4 * in_y(p, c) * pitch(p, c))};
  }
  Status constraints(const Conv2d&, const Config& c, const DeviceInfo&) const override {
    const int px = cfg_int(c, "px");
    if (px != 1 && px != 2 && px != 4) return Status::no("px must be 1, 2 or 4 (the vector width of shared loads)");
    return Status::yes();
  }
};

CONVTUNE_REGISTER_VARIANT(Conv2dNaive);
CONVTUNE_REGISTER_VARIANT(Conv2dConstant);
CONVTUNE_REGISTER_VARIANT(Conv2dCoarsened);
CONVTUNE_REGISTER_VARIANT(Conv2dTiledIn);
CONVTUNE_REGISTER_VARIANT(Conv2dTiledHalo);
CONVTUNE_REGISTER_VARIANT(Conv2dRegisterTiled);

}  // namespace
}  // namespace convtune
