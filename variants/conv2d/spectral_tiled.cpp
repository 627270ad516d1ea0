// Beyond the direct floor for large filters: tiled 2D overlap-save fused into one kernel
// (kernels/conv2d_spectral_tiled.cuh). The filter's N x N spectrum is computed in float64 on the GPU in
// bind (spectral.h), so the timed kernel reads the image once (tiles overlap by 2r, re-reads come from
// L2), transforms in shared memory and writes each output once.
#include <algorithm>
#include <cmath>

#include "variants/conv2d/jit_conv2d.h"
#include "variants/conv2d/spectral.h"

namespace convtune {
namespace {

struct SpectralShape {
  int n, p, threads;
  int v_or_1(const Conv2d& c) const { return std::max(1, spectral_valid(n, c.r)); }  // for the grid of any config
  int smem_bytes() const { return (n * spectral_pitch(n) + n) * 8; }  // the tile and the twiddles
  dim3 grid(const Conv2d& c) const {
    return dim3(spectral_tile_pairs(n, c.r, c.w), ceil_div(c.h, v_or_1(c)), unsigned(c.b));
  }
};

SpectralShape shape_of(const Config& c) { return {cfg_int(c, "n"), cfg_int(c, "p"), cfg_int(c, "threads")}; }

class Conv2dSpectralTiled : public Variant {
 public:
  std::string name() const override { return "conv2d.spectral_tiled"; }
  std::string family() const override { return kConv2d; }
  std::string summary() const override {
    return "fused tiled overlap-save: two N x N tiles per block as one complex FFT in shared memory, times the "
           "filter's spectrum, inverse FFT, V = N - 2r valid outputs per tile side";
  }
  int complexity() const override { return 4; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("n", "FFT tile side (valid outputs per side: n - 2r)", int_values({32, 64, 128}))
        .add("p", "points per thread in a line FFT's first step (n / p threads per line)", int_values({8, 16}))
        .add("threads", "threads per block", int_values({128, 256, 512}));  // 1024 caps registers at 64: n = 128 spilled and ran 3x slower
  }

  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    if (prob.family != kConv2d) return Status::no("not a conv2d problem");
    const Conv2d p(prob);
    const SpectralShape s = shape_of(c);
    const int g = s.n / s.p;
    if (s.p < g) return Status::no("p = " + std::to_string(s.p) + " < n / p: the second step needs p >= n / p");
    if (s.threads % g != 0 || s.n % (s.threads / g) != 0 || s.threads / g > s.n)
      return Status::no("threads / (n / p) = " + std::to_string(s.threads / g) + " lines at once must divide n = " +
                        std::to_string(s.n));
    if (spectral_valid(s.n, p.r) < 1)
      return Status::no("tile side n = " + std::to_string(s.n) + " leaves no valid output at r = " + std::to_string(p.r));
    if (s.threads > dev.max_threads_per_block)
      return Status::no("block of " + std::to_string(s.threads) + " threads > device limit " +
                        std::to_string(dev.max_threads_per_block));
    if (s.smem_bytes() > dev.max_smem_per_block_optin)
      return Status::no("shared memory " + std::to_string(s.smem_bytes()) + " B > device limit " +
                        std::to_string(dev.max_smem_per_block_optin) + " B");
    if (s.grid(p).y > 65535) return Status::no("grid.y of " + std::to_string(s.grid(p).y) + " blocks > 65535");
    return Status::yes();
  }

  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv2d p(prob);
    const SpectralShape s = shape_of(c);
    const dim3 g = s.grid(p);
    const double blocks = double(g.x) * g.y * g.z, n = s.n, lines = 3.0 * n + s.v_or_1(p);  // row, column, column, row passes
    const double flops_variant = blocks * (lines * 5.0 * n * std::log2(n) + 6.0 * n * n);
    // Per block: two n x n tiles read (mostly from L2: tiles overlap by 2r) and the spectrum; outputs once.
    const double bytes_model = blocks * (2.0 * 4.0 * n * n + 8.0 * n * n) + 4.0 * double(p.pixels());
    return {prob.direct_flops(), flops_variant, prob.min_bytes(), bytes_model};
  }

  Tolerance tolerance(const Problem&, const Config&) const override { return kSpectralFp32Tolerance; }

  std::vector<JitProgram> programs(const Problem& prob, const Config& c) const override {
    const SpectralShape s = shape_of(c);
    return {{"conv2d_spectral_tiled.cuh",
             {define("RADIUS", Conv2d(prob).r), define("N", s.n), define("P", s.p), define("THREADS", s.threads)}}};
  }

  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache& jit) const override {
    const Conv2d p(prob);
    const SpectralShape s = shape_of(c);
    // The 2D FFT(g) of spectral.h, scaled by 1/N^2 (the inverse transform is unnormalised), row-major in
    // (u, v) = (y frequency, x frequency) as the kernel's column pass reads it.
    return std::make_unique<SpectrumPlan>(jit.module(programs(prob, c).front()), "conv2d_spectral_kernel", s.grid(p),
                                          s.threads, s.smem_bytes(), p.h, p.w, p.r, s.n, true,
                                          1.0 / (double(s.n) * s.n));
  }
};

CONVTUNE_REGISTER_VARIANT(Conv2dSpectralTiled);

}  // namespace
}  // namespace convtune
