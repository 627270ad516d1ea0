// conv2d.row_bands: a block stages a band of whole image rows and its 2r halo rows in shared memory (on sm_90
// by bulk copies, a row each) and computes the band's outputs from there: for batches of small
// images, which tiled kernels cover mostly with edge tiles (kernels/conv2d_row_bands.cuh).
#include "variants/conv2d/jit_conv2d.h"

namespace convtune {
namespace {

constexpr int kRowBandsMaxRadius = 4;  // the halo within one neighbouring float4
// The kernel's static shared memory: two mbarriers, padded to the 128-byte alignment of the staged rows (the
// compiled kernel reports 128).
constexpr int kStaticSmem = 128;

class Conv2dRowBands : public JitConv2dVariant {
 public:
  std::string name() const override { return "conv2d.row_bands"; }
  std::string summary() const override {
    return "a block stages band whole image rows and their 2r halo rows in shared memory (bulk copies on "
           "sm_90), then 4 columns x py rows a thread: for batches of small images";
  }
  int complexity() const override { return 3; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("band", "image rows a block computes (it stages band + 2r)", int_values({8, 16, 32, 64}))
        .add("py", "output rows a thread (4 columns each)", int_values({1, 2, 4}))
        .add("threads", "threads per block", int_values({64, 128, 256, 512}))
        .add("stages", "1: a block a band (configs made before the parameter); 2: persistent blocks, each "
                       "taking band after band with the next one's copy in flight",
             int_values({1, 2}), 1);
  }
  // Every band stages its rows and 2r halo rows (those outside the image are zeros, not read).
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv2d p(prob);
    const int64_t band = cfg_int(c, "band"), bands = ceil_div(p.h, band);
    const double staged = double(p.b) * double(std::min<int64_t>(p.h + 2 * p.r * (bands - 1), p.h * bands)) * double(p.w);
    return {prob.direct_flops(), prob.direct_flops(), prob.min_bytes(), 4.0 * (staged + double(p.pixels()))};
  }

 protected:
  std::string source() const override { return "conv2d_row_bands.cuh"; }
  static int64_t pitch(const Conv2d& p) { return (p.w + 3) / 4 * 4; }
  // A stage: 4 zeros, then band + 2r rows of pitch floats, each followed by 4 zeros (the kernel's stage_floats).
  static int64_t stage_bytes(const Conv2d& p, const Config& c) {
    return 4 * (4 + (cfg_int(c, "band") + 2 * p.r) * (pitch(p) + 4));
  }
  std::vector<std::string> defines(const Conv2d&, const Config& c) const override {
    return {define("BAND", cfg_int(c, "band")), define("PY", cfg_int(c, "py")), define("THREADS", cfg_int(c, "threads")),
            define("STAGES", cfg_int(c, "stages"))};
  }
  bool constant_filter() const override { return false; }  // taps from the filter argument
  // Persistent: grid.x is every image's bands, of which the plan launches persistent_grid_x (as many blocks as
  // fit where each takes two bands or more, else a block a band).
  LaunchShape launch_shape(const Conv2d& p, const Config& c) const override {
    const int64_t band = cfg_int(c, "band"), bands = ceil_div(p.h, band);
    const bool persistent = cfg_int(c, "stages") == 2;
    LaunchShape s{dim3(unsigned(std::min<int64_t>(persistent ? bands * p.b : bands, 0x7fffffff))),
                  dim3(cfg_int(c, "threads")), int((persistent ? 2 : 1) * stage_bytes(p, c)), kStaticSmem};
    s.persistent = persistent;
    return s;
  }
  Status constraints(const Conv2d& p, const Config& c, const DeviceInfo& dev) const override {
    if (dev.cc_major < 8) return Status::no("row_bands stages rows with cp.async: compute capability 8.0 or later");
    if (p.r > kRowBandsMaxRadius)
      return Status::no("radius > " + std::to_string(kRowBandsMaxRadius) + " (the halo within one neighbouring float4)");
    const int64_t band = cfg_int(c, "band"), py = cfg_int(c, "py");
    if (band % py != 0) return Status::no("band must be a multiple of py");
    if (cfg_int(c, "stages") == 2 && p.b * ceil_div(p.h, band) < 2)
      return Status::no("two stages over one band: nothing to overlap");
    if (band > 2 * p.h && band > 8) return Status::no("band over twice the image's height (a smaller band does the same)");
    // Threads beyond a band's 4-column groups would idle.
    const int64_t work = band / py * (pitch(p) / 4);
    if (cfg_int(c, "threads") > std::max<int64_t>(64, work))
      return Status::no("threads over the band's " + std::to_string(work) + " groups of 4 columns x py rows");
    return Status::yes();
  }
};

CONVTUNE_REGISTER_VARIANT(Conv2dRowBands);

}  // namespace
}  // namespace convtune
