// conv2d.wgmma_toeplitz: direct convolution on Hopper's tensor cores at fp32 accuracy. Each patch of
// pw x ph outputs is its input window times the filter's Toeplitz matrix, 64 patches a warpgroup MMA, with
// the 3xTF32 split (kernels/conv2d_wgmma_toeplitz.cuh).
#include <algorithm>

#include "variants/conv2d/jit_conv2d.h"

namespace convtune {
namespace {

// Its K, B and accumulator chains grow with r, and the spectral kernels are faster from r = 5 on
// (PERFORMANCE.md); at r = 8 the 32-output patches already spill.
constexpr int kToeplitzMaxRadius = 8;
// Blocks a launch aims for: each builds B once and walks down its strip. 8192^2 in 64 x 64 tiles walks 16
// (measured on an H200 at r = 4: walks of 4, 16 and 64 tiles took 0.320, 0.290 and 0.281 ms); small images
// walk fewer.
constexpr int64_t kTargetBlocks = 1024;

struct Patch {
  int64_t pw, ph, r;
  int64_t ww() const { return pw + 2 * r; }
  int64_t k() const { return ww() * (ph + 2 * r); }  // the window, the GEMM's K
  int64_t n() const { return pw * ph; }
};

class Conv2dWgmmaToeplitz : public JitConv2dVariant {
 public:
  std::string name() const override { return "conv2d.wgmma_toeplitz"; }
  std::string summary() const override {
    return "tensor cores (Hopper wgmma, 3xTF32 at fp32 accuracy): a patch of pw x ph outputs is its input "
           "window times the filter's Toeplitz matrix, 64 patches a warpgroup MMA";
  }
  int complexity() const override { return 5; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("pw", "patch width (pw + 2r a multiple of 4)", int_values({2, 4, 6, 8}))
        .add("ph", "patch height (pw * ph = 8, 16, 24 or 32: the MMA's N)", int_values({2, 4, 8}))
        .add("warpgroups", "warpgroups a block, side by side (8 patches across each)", int_values({1, 2}))
        .add("batch", "k8 steps gathered while the previous ones multiply", int_values({1, 2}))
        .add("min_blocks", "blocks an SM the registers are capped for", int_values({2, 4}));
  }
  // The tensor core computes 3 K multiply-adds an output; each tile is staged with its halo, whole float4s.
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv2d p(prob);
    const Patch t = patch(p, c);
    const double tensor_flops = 6.0 * double(t.k()) * double(p.pixels());
    return {prob.direct_flops(), tensor_flops, prob.min_bytes(),
            tiled_bytes(p, tile_x(c), tile_y(c), double((tile_y(c) + 2 * p.r) * staged_pitch(p, c)))};
  }

 protected:
  std::string source() const override { return "conv2d_wgmma_toeplitz.cuh"; }
  bool constant_filter() const override { return false; }
  // The math: 3xtf32, or tf32 where a config says so. "math" is never in the space: plain TF32 fails the fp32
  // check, and the GPU tests run it to show that such a candidate is caught.
  static std::string math(const Config& c) { return c.contains("math") ? c.at("math").get<std::string>() : kMath3xTf32; }
  static Patch patch(const Conv2d& p, const Config& c) { return {cfg_int(c, "pw"), cfg_int(c, "ph"), p.r}; }
  static int64_t tile_x(const Config& c) { return 8 * int64_t(cfg_int(c, "pw")) * cfg_int(c, "warpgroups"); }
  static int64_t tile_y(const Config& c) { return 8 * int64_t(cfg_int(c, "ph")); }
  // A staged row: from r rounded up to 4 left of the tile to its right halo, rounded up to whole float4s.
  static int64_t staged_pitch(const Conv2d& p, const Config& c) {
    const int64_t lead = (p.r + 3) / 4 * 4;
    return (lead - p.r + tile_x(c) + 2 * p.r + 3) / 4 * 4;
  }
  // 1024 bytes of alignment slack, B (big and small tiles of N x 32 floats), two staged tiles.
  static int64_t smem_bytes(const Conv2d& p, const Config& c) {
    const Patch t = patch(p, c);
    const int64_t b_bytes = 2 * ((t.k() + 31) / 32) * t.n() * 128;
    return 1024 + b_bytes + 2 * 4 * (tile_y(c) + 2 * p.r) * staged_pitch(p, c);
  }
  std::vector<std::string> defines(const Conv2d&, const Config& c) const override {
    return {define("PW", cfg_int(c, "pw")), define("PH", cfg_int(c, "ph")), define("WGS", cfg_int(c, "warpgroups")),
            define("BATCH", cfg_int(c, "batch")), define("MIN_BLOCKS", cfg_int(c, "min_blocks")),
            define("MATH", math(c) == kMath3xTf32 ? 1 : 2)};
  }
  // Walks of equal length down each column strip, about kTargetBlocks blocks in all (over all images).
  LaunchShape launch_shape(const Conv2d& p, const Config& c) const override {
    const int64_t columns = ceil_div(p.w, tile_x(c)), tiles_y = ceil_div(p.h, tile_y(c));
    const int64_t walk = ceil_div(tiles_y, std::min(tiles_y, std::max<int64_t>(1, kTargetBlocks / (columns * p.b))));
    return {dim3(columns, ceil_div(tiles_y, walk)), dim3(128 * cfg_int(c, "warpgroups")), int(smem_bytes(p, c))};
  }
  Status constraints(const Conv2d& p, const Config& c, const DeviceInfo& dev) const override {
    if (const Status hopper = wgmma_supported(dev); !hopper) return hopper;
    if (p.r > kToeplitzMaxRadius)
      return Status::no("radius > " + std::to_string(kToeplitzMaxRadius) + " (the spectral kernels are faster from r = 5)");
    if (math(c) != kMath3xTf32 && math(c) != kMathTf32)
      return Status::no("math must be " + std::string(kMath3xTf32) + " or " + kMathTf32);
    const Patch t = patch(p, c);
    if (t.ww() % 4 != 0)
      return Status::no("pw + 2r = " + std::to_string(t.ww()) +
                        " must be a multiple of 4 (pw 2 or 6 for odd r, 4 or 8 for even r)");
    if (t.n() % 8 != 0 || t.n() > 32)
      return Status::no("pw * ph = " + std::to_string(t.n()) + " must be 8, 16, 24 or 32 (the MMA's N)");
    const int64_t blocks = cfg_int(c, "min_blocks"), smem = smem_bytes(p, c);
    if (dev.max_smem_per_sm > 0 && blocks * smem > dev.max_smem_per_sm)
      return Status::no("min_blocks = " + std::to_string(blocks) + ": blocks of " + std::to_string(smem) +
                        " B of shared memory do not fit " + std::to_string(blocks) + " to an SM's " +
                        std::to_string(dev.max_smem_per_sm) + " B (the register cap would buy nothing)");
    return Status::yes();
  }
};

CONVTUNE_REGISTER_VARIANT(Conv2dWgmmaToeplitz);

}  // namespace
}  // namespace convtune
