// conv1d_parts.fft, the library baseline and the seed's "no hassle" approach: zero-pad a and b to
// P >= n + m - 1 (so the circular convolution of the padded sequences is their linear one), R2C both in one
// batch, multiply the spectra, C2R, and copy the slice [start, end) scaled by 1/P (cuFFT is unnormalised).
// It transforms everything whatever the slice: the reference the parts variants must beat on short slices.
#include <algorithm>
#include <memory>
#include <string>

#include <cufft.h>

#include "harness/cufft.h"
#include "harness/variant.h"
#include "variants/conv1d_parts/parts.h"
#include "variants/conv1d_parts/parts_kernels.h"

namespace convtune {
namespace {

constexpr int64_t kMinLength = 16;  // keeps cuFFT away from degenerate one- or two-point transforms
constexpr int64_t kMaxLength = int64_t(1) << 30;

int64_t padded_length(const Conv1dParts& p, const Config& c) {
  return parts::fft_length(c.at("size_policy").get<std::string>(), std::max(p.n + p.m - 1, kMinLength));
}

// Padded a and b, their spectra, and about one spectrum pair more for cuFFT's work area (an estimate).
double buffer_bytes(int64_t padded) { return 4.0 * 2.0 * double(padded) + 2.0 * 8.0 * 2.0 * double(padded / 2 + 1); }

class FftPlan : public Plan {
 public:
  FftPlan(const Conv1dParts& p, int64_t padded)
      : n_(p.n), m_(p.m), start_(p.start), outputs_(p.outputs()), padded_(padded), bins_(padded / 2 + 1),
        signals_(size_t(2 * padded)), spectra_(size_t(2 * bins_)) {
    const size_t work = std::max(parts::make_real_batch_plan(forward_.get(), CUFFT_R2C, padded_, 2),
                                 parts::make_real_batch_plan(inverse_.get(), CUFFT_C2R, padded_, 1));
    work_ = DeviceArray<char>(work);
    if (work_.get()) {
      CT_CUFFT(cufftSetWorkArea(forward_.get(), work_.get()));
      CT_CUFFT(cufftSetWorkArea(inverse_.get(), work_.get()));
    }
  }

  void bind(const Operands& ops, cudaStream_t) override {
    a_ = ops.data.at(0);
    b_ = ops.data.at(1);
    out_ = ops.output();
  }

  void run(cudaStream_t stream) override {
    CT_CUFFT(cufftSetStream(forward_.get(), stream));
    CT_CUFFT(cufftSetStream(inverse_.get(), stream));
    // Each sequence is one "block" as long as itself: row 0 = a, row 1 = b, zero-padded to P.
    parts::pack_blocks(a_, n_, n_, nullptr, 1, padded_, signals_.get(), stream);
    parts::pack_blocks(b_, m_, m_, nullptr, 1, padded_, signals_.get() + padded_, stream);
    CT_CUFFT(cufftExecR2C(forward_.get(), signals_.get(), spectra_.get()));
    parts::multiply_spectra(spectra_.get(), spectra_.get() + bins_, bins_, stream);
    CT_CUFFT(cufftExecC2R(inverse_.get(), spectra_.get(), signals_.get()));
    parts::copy_scaled(signals_.get() + start_, out_, outputs_, float(1.0 / double(padded_)), stream);
  }

  size_t workspace_bytes() const override { return signals_.bytes() + spectra_.bytes() + work_.bytes(); }

 private:
  int64_t n_, m_, start_, outputs_, padded_, bins_;
  DeviceArray<float> signals_;
  DeviceArray<cufftComplex> spectra_;
  DeviceArray<char> work_;  // declared before the plans that use it, so destroyed after them
  CufftHandle forward_, inverse_;
  const float* a_ = nullptr;
  const float* b_ = nullptr;
  float* out_ = nullptr;
};

class Conv1dPartsFft : public Variant {
 public:
  std::string name() const override { return "conv1d_parts.fft"; }
  std::string family() const override { return kConv1dParts; }
  std::string summary() const override {
    return "whole-sequence cuFFT: zero-pad a and b to P >= n+m-1, R2C both, multiply, C2R, copy the slice";
  }
  bool library() const override { return true; }
  int complexity() const override { return 1; }

  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace().add("size_policy", "transform length P >= n + m - 1: next power of two, or next 7-smooth integer",
                            {"pow2", "smooth"});
  }

  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    if (prob.family != kConv1dParts) return Status::no("not a conv1d_parts problem");
    const std::string policy = c.at("size_policy").get<std::string>();
    if (!parts::known_fft_policy(policy)) return Status::no("unknown size_policy '" + policy + "' (pow2 or smooth)");
    const int64_t padded = padded_length(Conv1dParts(prob), c);
    if (padded > kMaxLength) return Status::no("transform length " + std::to_string(padded) + " > 2^30");
    if (dev.global_mem_bytes > 0 && buffer_bytes(padded) > 0.5 * double(dev.global_mem_bytes))
      return Status::no("transform length " + std::to_string(padded) + " needs about " +
                        std::to_string(int64_t(buffer_bytes(padded)) >> 20) + " MiB, over half the device memory");
    return Status::yes();
  }

  // Two forward transforms and one inverse; each step one pass over its buffers (a transform counted as one
  // read and one write).
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv1dParts p(prob);
    const int64_t padded = padded_length(p, c);
    const double P = double(padded), F = double(padded / 2 + 1), outputs = double(p.outputs());
    const double flops_variant = 3.0 * parts::real_fft_flops(padded) + 6.0 * F;  // + one complex product per bin
    const double pack = 4.0 * double(p.n + p.m) + 4.0 * 2.0 * P;
    const double forward = 4.0 * 2.0 * P + 8.0 * 2.0 * F;
    const double multiply = 8.0 * 2.0 * F + 8.0 * F;
    const double inverse = 8.0 * F + 4.0 * P;
    const double copy = 4.0 * outputs + 4.0 * outputs;
    return {prob.direct_flops(), flops_variant, prob.min_bytes(), pack + forward + multiply + inverse + copy};
  }

  Tolerance tolerance(const Problem&, const Config&) const override { return kSpectralFp32Tolerance; }

  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache&) const override {
    const Conv1dParts p(prob);
    return std::make_unique<FftPlan>(p, padded_length(p, c));
  }
};

CONVTUNE_REGISTER_VARIANT(Conv1dPartsFft);

}  // namespace
}  // namespace convtune
