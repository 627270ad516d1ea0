// Library baseline: whole-image FFT convolution with cuFFT. The image is zero-padded to ph x pw, transformed
// (R2C), multiplied by the filter's spectrum (computed once in bind), transformed back (C2R), then cropped
// to h x w and scaled by 1/(ph*pw) (cuFFT's transforms are unnormalised).
//
// Why this gives the problem's cross-correlation out(i,j) = sum_{m,n in [-r,r]} in(i+m, j+n) f(m+r, n+r):
// Let a be the padded image (a(y,x) = in(y,x) for y < h, x < w, else 0) and b the padded filter. The
// inverse transform of A*B is the circular convolution c(i) = sum_k a(k) b((i - k) mod ph) (one axis shown;
// the other is the same). Writing k = i + m, c(i) = sum_m a((i + m) mod ph) b((-m) mod ph). So placing
// b((-m) mod ph) = f(m+r) for m in [-r, r] (zero elsewhere) makes c(i) = sum_m a((i+m) mod ph) f(m+r), a
// circular cross-correlation. The 2r+1 positions (-m) mod ph are distinct when ph >= 2r+1.
// It equals the linear one (zero ghost cells) on the cropped output when ph >= h + r: for i in [0, h) and
// m in [-r, r], i+m lies in [-r, h+r-1]; indices in [h, h+r-1] are < ph and are padding zeros, and
// negative ones wrap to [ph-r, ph-1], which is >= h and so padding zeros too. No wrapped value reaches a
// real pixel, so ph >= max(h + r, 2r + 1) suffices ('same' output needs only one r of padding, not the
// 2r of a full linear convolution).
#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#include <cufft.h>

#include "harness/cuda_raii.h"
#include "harness/cufft.h"
#include "harness/error.h"
#include "harness/variant.h"
#include "variants/conv2d/conv2d.h"
#include "variants/conv2d/fft_kernels.h"

namespace convtune {
namespace {

constexpr int64_t kMaxFftRadius = 64;

struct Extents {
  int64_t ph, pw;
  int64_t real() const { return ph * pw; }                // elements of a padded real buffer
  int64_t complex() const { return ph * (pw / 2 + 1); }  // elements of its R2C spectrum (Hermitian half)
};

bool known_policy(const std::string& s) { return s == "pow2" || s == "smooth"; }

// Smallest padding that keeps the cropped result linear (see the top of the file), rounded up by the policy.
Extents extents(const Conv2d& p, const Config& c) {
  const bool pow2 = c.at("size_policy").get<std::string>() == "pow2";
  auto grow = [&](int64_t n) { return pow2 ? next_pow2(n) : next_smooth(n); };
  return {grow(std::max(p.h + p.r, 2 * p.r + 1)), grow(std::max(p.w + p.r, 2 * p.r + 1))};
}

class FftPlan : public Plan {
 public:
  ~FftPlan() override {
    if (filter_made_) CT_CUFFT_WARN(cufftDestroy(filter_));
    if (inv_made_) CT_CUFFT_WARN(cufftDestroy(inv_));
    if (fwd_made_) CT_CUFFT_WARN(cufftDestroy(fwd_));
  }

  // Separate from the constructor so that the destructor frees what was made when a step throws.
  void init(const Conv2d& p, Extents e) {
    h_ = p.h;
    w_ = p.w;
    r_ = p.r;
    b_ = p.b;
    e_ = e;
    pad_ = DeviceArray<float>(size_t(e.real() * b_));
    spec_ = DeviceArray<cufftComplex>(size_t(e.complex() * b_));
    filter_spec_ = DeviceArray<cufftComplex>(size_t(e.complex()));
    int extents[2] = {int(e.ph), int(e.pw)};  // b transforms of contiguous ph x pw images
    // Plans without their own work area: both share one buffer (they run in turn on one stream), and
    // workspace_bytes() can report it.
    size_t ws_fwd = 0, ws_inv = 0;
    CT_CUFFT(cufftCreate(&fwd_));
    fwd_made_ = true;
    CT_CUFFT(cufftSetAutoAllocation(fwd_, 0));
    CT_CUFFT(cufftMakePlanMany(fwd_, 2, extents, nullptr, 1, 0, nullptr, 1, 0, CUFFT_R2C, int(b_), &ws_fwd));
    CT_CUFFT(cufftCreate(&inv_));
    inv_made_ = true;
    CT_CUFFT(cufftSetAutoAllocation(inv_, 0));
    CT_CUFFT(cufftMakePlanMany(inv_, 2, extents, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2R, int(b_), &ws_inv));
    size_t ws_filter = 0;  // a batch's filter: one transform of its own, not b
    if (b_ > 1) {
      CT_CUFFT(cufftCreate(&filter_));
      filter_made_ = true;
      CT_CUFFT(cufftSetAutoAllocation(filter_, 0));
      CT_CUFFT(cufftMakePlan2d(filter_, int(e.ph), int(e.pw), CUFFT_R2C, &ws_filter));
    }
    work_ = DeviceArray<char>(std::max({ws_fwd, ws_inv, ws_filter}));
    if (work_.get()) {
      CT_CUFFT(cufftSetWorkArea(fwd_, work_.get()));
      CT_CUFFT(cufftSetWorkArea(inv_, work_.get()));
      if (filter_made_) CT_CUFFT(cufftSetWorkArea(filter_, work_.get()));
    }
  }

  // The filter's spectrum, once per filter (untimed, as an application with a fixed filter would).
  void bind(const Operands& ops, cudaStream_t stream) override {
    in_ = ops.data.at(0);
    out_ = ops.output();
    const cufftHandle plan = filter_made_ ? filter_ : fwd_;
    fft_place_filter(ops.data.at(1), pad_.get(), r_, e_.ph, e_.pw, stream);
    CT_CUFFT(cufftSetStream(plan, stream));
    CT_CUFFT(cufftExecR2C(plan, pad_.get(), filter_spec_.get()));
  }

  void run(cudaStream_t stream) override {
    CT_CUFFT(cufftSetStream(fwd_, stream));
    CT_CUFFT(cufftSetStream(inv_, stream));
    fft_pad_image(in_, pad_.get(), h_, w_, e_.ph, e_.pw, b_, stream);
    CT_CUFFT(cufftExecR2C(fwd_, pad_.get(), spec_.get()));
    fft_multiply(spec_.get(), filter_spec_.get(), e_.complex(), b_, stream);
    CT_CUFFT(cufftExecC2R(inv_, spec_.get(), pad_.get()));  // may overwrite spec_: not needed after
    fft_crop(pad_.get(), out_, h_, w_, e_.ph, e_.pw, b_, float(1.0 / double(e_.real())), stream);
  }

  size_t workspace_bytes() const override {
    return pad_.bytes() + spec_.bytes() + filter_spec_.bytes() + work_.bytes();
  }

 private:
  int64_t h_ = 0, w_ = 0, r_ = 0, b_ = 1;
  Extents e_{0, 0};
  cufftHandle fwd_ = 0, inv_ = 0, filter_ = 0;  // filter_: only for a batch (b > 1)
  bool fwd_made_ = false, inv_made_ = false, filter_made_ = false;
  DeviceArray<float> pad_;
  DeviceArray<cufftComplex> spec_, filter_spec_;
  DeviceArray<char> work_;
  const float* in_ = nullptr;
  float* out_ = nullptr;
};

class Conv2dFft : public Variant {
 public:
  std::string name() const override { return "conv2d.fft"; }
  std::string family() const override { return kConv2d; }
  std::string summary() const override {
    return "whole-image cuFFT: zero-pad, R2C, multiply by the filter's spectrum (from bind), C2R, crop";
  }
  bool library() const override { return true; }
  int complexity() const override { return 2; }

  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace().add("size_policy",
                            "padded extents: next power of two, or next 7-smooth integer (factors 2,3,5,7)",
                            {"pow2", "smooth"});
  }

  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    if (prob.family != kConv2d) return Status::no("not a conv2d problem");
    const Conv2d p(prob);
    if (p.r > kMaxFftRadius)
      return Status::no("radius " + std::to_string(p.r) + " > " + std::to_string(kMaxFftRadius));
    const std::string policy = c.at("size_policy").get<std::string>();
    if (!known_policy(policy)) return Status::no("unknown size_policy '" + policy + "' (pow2 or smooth)");
    const Extents e = extents(p, c);
    const std::string dims = std::to_string(e.ph) + "x" + std::to_string(e.pw);
    // cufftMakePlanMany takes int extents; past 2^31 elements it needs the 64-bit plan API.
    if (e.real() * p.b > INT_MAX)
      return Status::no("padded size " + dims + " times " + std::to_string(p.b) + " images has more than 2^31 elements");
    // Padded real buffers, the spectra, and about as much again for cuFFT's work area (an estimate: the real
    // size is known only once the plan is made); the filter's spectrum.
    const double bytes = double(p.b) * (4.0 * double(e.real()) + 2.0 * 8.0 * double(e.complex())) + 8.0 * double(e.complex());
    if (dev.global_mem_bytes > 0 && bytes > 0.5 * double(dev.global_mem_bytes))
      return Status::no("padded size " + dims + " needs about " + std::to_string(int64_t(bytes / (1 << 20))) +
                        " MiB of buffers, over half the device memory");
    return Status::yes();
  }

  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv2d p(prob);
    const Extents e = extents(p, c);
    const double n = double(e.real()) * double(p.b), nc = double(e.complex()) * double(p.b), hw = double(p.pixels());
    // Approximate: a real transform of n points costs half a complex one, 2.5 n log2 n; the timed path
    // runs two (image R2C, C2R; the filter's R2C is in bind, untimed), plus 6 flops per complex product.
    const double fft_flops = 2.5 * n * std::log2(double(e.real()));  // b transforms of e.real() points
    const double flops_variant = 2.0 * fft_flops + 6.0 * nc;
    // Passes over the padded buffers, each 2D transform counted as one read + one write (a lower bound:
    // cuFFT makes more than one pass over large 2D sizes): image read + pad write, R2C, multiply (two
    // spectra read, one written), C2R, crop read + output write.
    const double bytes_model = (4.0 * hw + 4.0 * n) + (4.0 * n + 8.0 * nc) + 3.0 * 8.0 * nc + (8.0 * nc + 4.0 * n) +
                               (4.0 * hw + 4.0 * hw);
    return {prob.direct_flops(), flops_variant, prob.min_bytes(), bytes_model};
  }

  Tolerance tolerance(const Problem&, const Config&) const override { return kSpectralFp32Tolerance; }

  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache&) const override {
    const Conv2d p(prob);
    auto plan = std::make_unique<FftPlan>();
    plan->init(p, extents(p, c));
    return plan;
  }
};

CONVTUNE_REGISTER_VARIANT(Conv2dFft);

}  // namespace
}  // namespace convtune
