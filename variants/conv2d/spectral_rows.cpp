// Fewer multiply-adds than direct for mid-size filters: FFTs along x, a direct sum along y in the
// frequency domain (kernels/conv2d_spectral_rows.cuh). The filter rows' spectra are computed in float64 on the
// GPU in bind (spectral.h). Per output: 2 (2r + 1) N / VX multiply-adds and two N-point line FFTs'
// share, against the direct (2r + 1)^2; each input row is transformed once per strip segment.
#include <algorithm>
#include <cmath>

#include "variants/conv2d/jit_conv2d.h"
#include "variants/conv2d/spectral.h"

namespace convtune {
namespace {

// Alternatives measured on the H100 (8192^2 r = 2-8, 2048^2 r = 5) and removed, each slower everywhere:
// lines of 128 points, or 16 points a thread (twice the registers, 1.5-3x slower); a thread summing 4 rows
// of two bins instead of 8 rows of one (up to 1.8x slower at r >= 5); loading a step's rows when it
// starts instead of during the previous step's sums (the kernel's prefetch in its step loop).
constexpr int kLineFft = 64, kPointsPerThread = 8, kRowsPerThread = 8;
constexpr int kRowsMaxRadius = 16;  // a thread holds its bin's 2r + 1 complex taps in registers

// The launch of a config: ty rows a step, `steps` steps a segment at most, about `regs` registers.
struct RowsShape {
  int ty, steps, regs;
  int threads() const { return ty * (kLineFft / kPointsPerThread); }
  int ring(const Conv2d& c) const { return ty + 2 * int(c.r); }
  int smem_bytes(const Conv2d& c) const { return ((ring(c) + ty) * spectral_pitch(kLineFft) + kLineFft) * 8; }  // ring, sums, twiddles
  int all_steps(const Conv2d& c) const { return int(ceil_div(c.h, ty)); }
  dim3 grid(const Conv2d& c) const {
    return dim3(spectral_tile_pairs(kLineFft, c.r, c.w), ceil_div(all_steps(c), std::min(steps, all_steps(c))),
                unsigned(c.b));
  }
};

RowsShape rows_shape_of(const Config& c) {
  return {cfg_int(c, "ty"), cfg_int(c, "steps"), cfg_int(c, "regs")};
}

class Conv2dSpectralRows : public Variant {
 public:
  std::string name() const override { return "conv2d.spectral_rows"; }
  std::string family() const override { return kConv2d; }
  std::string summary() const override {
    return "FFTs along x, direct along y: each row of a two-tile strip transformed once (64 points), output "
           "spectra summed over the filter's 2r + 1 row spectra per bin, inverse row FFTs, up to 64 - 2r valid "
           "outputs a tile";
  }
  int complexity() const override { return 4; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("ty", "rows a step (the block: ty lines of 8 threads)", int_values({8, 16}))
        .add("steps", "steps a block walks down its strip (each segment re-transforms 2r rows above it)",
             int_values({4, 8, 16}))
        .add("regs", "registers a thread may use, about (fewer: more blocks an SM)", int_values({80, 128}));
  }

  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    if (prob.family != kConv2d) return Status::no("not a conv2d problem");
    const Conv2d p(prob);
    const RowsShape s = rows_shape_of(c);
    // Off-grid values a spec may give: the kernel needs whole 8-row groups, a segment at least a step long.
    if (s.ty < kRowsPerThread || s.ty % kRowsPerThread != 0)
      return Status::no("ty = " + std::to_string(s.ty) + ": must be a positive multiple of 8 (8 rows a thread)");
    if (s.steps < 1) return Status::no("steps = " + std::to_string(s.steps) + ": must be at least 1");
    if (s.regs < 32) return Status::no("regs = " + std::to_string(s.regs) + ": must be at least 32");
    if (p.r > kRowsMaxRadius)
      return Status::no("r = " + std::to_string(p.r) + " > " + std::to_string(kRowsMaxRadius) +
                        ": a thread holds 2r + 1 complex taps in registers");
    if (s.threads() > dev.max_threads_per_block)
      return Status::no("ty = " + std::to_string(s.ty) + ": 8 ty = " + std::to_string(s.threads()) +
                        " threads > device limit " + std::to_string(dev.max_threads_per_block));
    if (s.smem_bytes(p) > dev.max_smem_per_block_optin)
      return Status::no("shared memory " + std::to_string(s.smem_bytes(p)) + " B > device limit " +
                        std::to_string(dev.max_smem_per_block_optin) + " B");
    if (s.grid(p).y > 65535) return Status::no("grid.y of " + std::to_string(s.grid(p).y) + " blocks > 65535");
    return Status::yes();
  }

  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv2d p(prob);
    const RowsShape s = rows_shape_of(c);
    const dim3 g = s.grid(p);
    // Per column of blocks: every step's ty output lines once (the kernel spreads the steps evenly over the
    // grid.y segments), and each segment transforms the 2r rows above it too.
    const double n = kLineFft, out_lines = double(s.all_steps(p)) * s.ty;
    const double in_lines = out_lines + double(g.y) * 2.0 * double(p.r);
    const double fft = 5.0 * n * std::log2(n);
    const double columns = double(g.x) * double(g.z);  // of every image
    const double flops_variant = columns * ((in_lines + out_lines) * fft + out_lines * n * double(p.fw()) * 8.0);
    // Two tiles a line read (tiles overlap by 2r along x: re-reads from L2), each block's taps, the outputs once.
    const double bytes_model = columns * (in_lines * 2.0 * n * 4.0 + double(g.y) * double(p.fw()) * n * 8.0) +
                               4.0 * double(p.pixels());
    return {prob.direct_flops(), flops_variant, prob.min_bytes(), bytes_model};
  }

  // The direct fp32 tolerance (the default), not the spectral one: 64-point transforms round little
  // (rel_l2 1.3-1.6e-7 at 8192^2 r = 2-8 on the H100, the direct kernels' 1-3e-7).

  std::vector<JitProgram> programs(const Problem& prob, const Config& c) const override {
    const RowsShape s = rows_shape_of(c);
    return {{"conv2d_spectral_rows.cuh",
             {define("RADIUS", Conv2d(prob).r), define("N", kLineFft), define("P", kPointsPerThread),
              define("TY", s.ty), define("PY", kRowsPerThread), define("REGS", s.regs)}}};
  }

  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache& jit) const override {
    const Conv2d p(prob);
    const RowsShape s = rows_shape_of(c);
    // W_m of the kernel's top comment: filter row m's spectrum scaled by 1/N, [m * n + v].
    return std::make_unique<SpectrumPlan>(jit.module(programs(prob, c).front()), "conv2d_spectral_rows_kernel",
                                          s.grid(p), s.threads(), s.smem_bytes(p), p.h, p.w, p.r, kLineFft, false,
                                          1.0 / kLineFft);
  }
};

CONVTUNE_REGISTER_VARIANT(Conv2dSpectralRows);

}  // namespace
}  // namespace convtune
