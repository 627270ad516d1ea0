// conv1d_parts.spectral: the seed's spectral convolution in parts. a is cut into blocks of l_a, b into blocks
// of l_b (one length divides the other); the schedule (schedule.h) keeps the block pairs that touch the slice
// and groups them into intervals, l_a + l_b - 1 long, such that the intervals of one division are disjoint.
// run(): every used block, zero-padded to P >= l_a + l_b - 1, is transformed once (one batched R2C for a's
// and b's blocks); each interval sums A_i * B_j over its pairs in the frequency domain and is inverted once
// (one batched C2R over all intervals; the transform is linear, and P covers a pair's whole linear
// convolution, so no wrap-around); the gather then writes each output as the sum over divisions of the one
// interval covering it, scaled by 1/P (cuFFT's transforms are unnormalised). That gather is the seed's
// "one privatised buffer per division, reduced at the end", fused: no zeroing, no atomics.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <cufft.h>

#include "harness/cufft.h"
#include "harness/variant.h"
#include "variants/conv1d_parts/parts.h"
#include "variants/conv1d_parts/parts_kernels.h"

namespace convtune {
namespace {

using parts::PartsCounts;

constexpr int64_t kFftMinBlock = 64, kFftMaxBlock = 65536;
constexpr int64_t kFftMaxPairs = int64_t(1) << 26;
constexpr double kMaxIntervalSpectraBytes = 2.0 * (int64_t(1) << 30);

// Sizes of one config on one problem, from the schedule's counts (no schedule built).
struct SpectralShape {
  int64_t l_a, l_b, padded, bins;  // transform length P and its P/2 + 1 complex bins
  PartsCounts counts;
  int64_t rows() const { return counts.used_a + counts.used_b; }  // blocks transformed
  double block_spectra_bytes() const { return 8.0 * double(rows()) * double(bins); }
  double interval_spectra_bytes() const { return 8.0 * double(counts.intervals) * double(bins); }
  // Padded blocks, their spectra, interval spectra, interval values, the pair lists, and about one more
  // spectrum buffer of the larger batch for cuFFT's work area (an estimate: its size is known once the plans
  // are made).
  double workspace_bytes() const {
    const double real = 4.0 * double(padded) * double(rows() + counts.intervals);
    const double spectra = block_spectra_bytes() + interval_spectra_bytes();
    return real + spectra + 8.0 * double(counts.pairs) + std::max(block_spectra_bytes(), interval_spectra_bytes());
  }
};

SpectralShape shape(const Problem& prob, const Config& c) {
  const Conv1dParts p(prob);
  SpectralShape s;
  s.l_a = c.at("l_a").get<int64_t>();
  s.l_b = c.at("l_b").get<int64_t>();
  s.padded = parts::fft_length(c.at("fft_size").get<std::string>(), s.l_a + s.l_b - 1);
  s.bins = s.padded / 2 + 1;
  s.counts = parts::count_parts(p.n, p.m, s.l_a, s.l_b, p.start, p.end);
  return s;
}

std::string mib(double bytes) { return std::to_string(int64_t(bytes / double(1 << 20))) + " MiB"; }

class SpectralPlan : public Plan {
 public:
  SpectralPlan(const Conv1dParts& p, int64_t l_a, int64_t l_b, int64_t padded)
      : n_(p.n), m_(p.m), start_(p.start), outputs_(p.outputs()), l_a_(l_a), l_b_(l_b), padded_(padded),
        bins_(padded / 2 + 1) {
    const parts::PartsSchedule s = parts::make_parts_schedule(p.n, p.m, l_a, l_b, p.start, p.end);
    upload_schedule(s);
    const int64_t rows = used_a_ + used_b_;
    blocks_ = DeviceArray<float>(size_t(rows * padded_));
    block_spectra_ = DeviceArray<cufftComplex>(size_t(rows * bins_));
    interval_spectra_ = DeviceArray<cufftComplex>(size_t(intervals_.intervals * bins_));
    interval_values_ = DeviceArray<float>(size_t(intervals_.intervals * padded_));
    // Both plans share one work area: they run in turn on one stream.
    const size_t work = std::max(parts::make_real_batch_plan(forward_.get(), CUFFT_R2C, padded_, rows),
                                 parts::make_real_batch_plan(inverse_.get(), CUFFT_C2R, padded_, intervals_.intervals));
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
    parts::pack_blocks(a_, n_, l_a_, used_blocks_a_.get(), used_a_, padded_, blocks_.get(), stream);
    parts::pack_blocks(b_, m_, l_b_, used_blocks_b_.get(), used_b_, padded_, blocks_.get() + used_a_ * padded_, stream);
    CT_CUFFT(cufftExecR2C(forward_.get(), blocks_.get(), block_spectra_.get()));
    parts::accumulate_pairs(block_spectra_.get(), bins_, intervals_, interval_spectra_.get(), stream);
    // May overwrite interval_spectra_ (out-of-place C2R does): not needed after.
    CT_CUFFT(cufftExecC2R(inverse_.get(), interval_spectra_.get(), interval_values_.get()));
    parts::gather_intervals(intervals_, interval_values_.get(), padded_, start_, outputs_,
                            float(1.0 / double(padded_)), out_, stream);
  }

  size_t workspace_bytes() const override {
    return intervals_.bytes() + used_blocks_a_.bytes() + used_blocks_b_.bytes() + blocks_.bytes() +
           block_spectra_.bytes() + interval_spectra_.bytes() + interval_values_.bytes() + work_.bytes();
  }

 private:
  // The blocks that appear in the schedule, in order, and each pair's rows in the batch: a's blocks first
  // (rows 0 .. used_a-1), then b's.
  void upload_schedule(const parts::PartsSchedule& s) {
    std::vector<int32_t> row_of_a(size_t(s.blocks_a), -1), row_of_b(size_t(s.blocks_b), -1);
    for (int32_t i : s.pair_a) row_of_a[size_t(i)] = 0;
    for (int32_t j : s.pair_b) row_of_b[size_t(j)] = 0;
    const std::vector<int32_t> blocks_a = number_used(row_of_a, 0), blocks_b = number_used(row_of_b, int32_t(blocks_a.size()));
    std::vector<int32_t> pair_row_a(s.pairs()), pair_row_b(s.pairs());
    for (size_t p = 0; p < s.pairs(); ++p) {
      pair_row_a[p] = row_of_a[size_t(s.pair_a[p])];
      pair_row_b[p] = row_of_b[size_t(s.pair_b[p])];
    }
    used_a_ = int64_t(blocks_a.size());
    used_b_ = int64_t(blocks_b.size());
    used_blocks_a_ = to_device(blocks_a);
    used_blocks_b_ = to_device(blocks_b);
    intervals_ = parts::upload_intervals(s, pair_row_a, pair_row_b);
  }

  // Marked entries (>= 0) get consecutive rows from first_row on; returns the marked indices in order.
  static std::vector<int32_t> number_used(std::vector<int32_t>& row_of, int32_t first_row) {
    std::vector<int32_t> used;
    for (size_t i = 0; i < row_of.size(); ++i)
      if (row_of[i] >= 0) {
        row_of[i] = first_row + int32_t(used.size());
        used.push_back(int32_t(i));
      }
    return used;
  }

  static DeviceArray<int32_t> to_device(const std::vector<int32_t>& host) {
    DeviceArray<int32_t> d(host.size());
    if (!host.empty()) CT_CUDA(cudaMemcpy(d.get(), host.data(), d.bytes(), cudaMemcpyHostToDevice));
    return d;
  }

  int64_t n_, m_, start_, outputs_, l_a_, l_b_, padded_, bins_;
  int64_t used_a_ = 0, used_b_ = 0;
  parts::DeviceIntervals intervals_;
  DeviceArray<int32_t> used_blocks_a_, used_blocks_b_;
  DeviceArray<float> blocks_, interval_values_;
  DeviceArray<cufftComplex> block_spectra_, interval_spectra_;
  DeviceArray<char> work_;           // declared before the plans that use it, so destroyed after them
  CufftHandle forward_, inverse_;
  const float* a_ = nullptr;
  const float* b_ = nullptr;
  float* out_ = nullptr;
};

class Conv1dPartsSpectral : public Variant {
 public:
  std::string name() const override { return "conv1d_parts.spectral"; }
  std::string family() const override { return kConv1dParts; }
  std::string summary() const override {
    return "convolution in parts: used blocks of a and b R2C'd once, pairs summed per interval in the frequency "
           "domain, one C2R per interval, divisions gathered into the slice";
  }
  int complexity() const override { return 4; }

  ParamSpace space(const Problem& prob, const DeviceInfo&) const override {
    const Conv1dParts p(prob);
    return ParamSpace()
        .add("l_a", "block length of a (a power of two; one of l_a, l_b divides the other)",
             lengths(parts::block_lengths(kFftMinBlock, kFftMaxBlock, p.n)))
        .add("l_b", "block length of b", lengths(parts::block_lengths(kFftMinBlock, kFftMaxBlock, p.m)))
        .add("fft_size", "transform length P >= l_a + l_b - 1: next power of two, or next 7-smooth integer",
             {"pow2", "smooth"});
  }

  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    if (prob.family != kConv1dParts) return Status::no("not a conv1d_parts problem");
    const Conv1dParts p(prob);
    const std::string policy = c.at("fft_size").get<std::string>();
    if (!parts::known_fft_policy(policy)) return Status::no("unknown fft_size '" + policy + "' (pow2 or smooth)");
    for (const std::string& why : {parts::block_length_problem("l_a", c.at("l_a").get<int64_t>(), kFftMinBlock, kFftMaxBlock, p.n),
                                   parts::block_length_problem("l_b", c.at("l_b").get<int64_t>(), kFftMinBlock, kFftMaxBlock, p.m)})
      if (!why.empty()) return Status::no(why);
    const SpectralShape s = shape(prob, c);
    if (s.counts.pairs > kFftMaxPairs)
      return Status::no(std::to_string(s.counts.pairs) + " block pairs > 2^26: longer blocks cut the schedule");
    if (s.interval_spectra_bytes() > kMaxIntervalSpectraBytes)
      return Status::no("interval spectra need " + mib(s.interval_spectra_bytes()) + " > 2 GiB (" +
                        std::to_string(s.counts.intervals) + " intervals x " + std::to_string(s.bins) + " bins)");
    if (dev.global_mem_bytes > 0 && s.workspace_bytes() > 0.5 * double(dev.global_mem_bytes))
      return Status::no("buffers need about " + mib(s.workspace_bytes()) + ", over half the device memory");
    return Status::yes();
  }

  // Every term is one pass of one step over its buffers (see the comments); a batched 1D transform is
  // counted as one read and one write of its data.
  Cost cost(const Problem& prob, const Config& c) const override {
    const SpectralShape s = shape(prob, c);
    const PartsCounts& k = s.counts;
    const double P = double(s.padded), F = double(s.bins), rows = double(s.rows()), I = double(k.intervals);
    const double pairs = double(k.pairs), outputs = double(Conv1dParts(prob).outputs());
    const double flops_variant = parts::real_fft_flops(s.padded) * (rows + I)  // R2C per block, C2R per interval
                                 + 8.0 * pairs * F;                            // complex multiply-add per pair, bin
    const double pack = 4.0 * (double(k.used_a * s.l_a) + double(k.used_b * s.l_b)) + 4.0 * rows * P;
    const double forward = 4.0 * rows * P + 8.0 * rows * F;
    const double accumulate = 2.0 * 8.0 * pairs * F + 8.0 * I * F;  // both spectra per pair; one sum per interval
    const double inverse = 8.0 * I * F + 4.0 * I * P;
    const double gather = 4.0 * double(k.covered) + 4.0 * outputs;
    return {prob.direct_flops(), flops_variant, prob.min_bytes(), pack + forward + accumulate + inverse + gather};
  }

  Tolerance tolerance(const Problem&, const Config&) const override { return kSpectralFp32Tolerance; }

  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache&) const override {
    const SpectralShape s = shape(prob, c);
    return std::make_unique<SpectralPlan>(Conv1dParts(prob), s.l_a, s.l_b, s.padded);
  }

 private:
  static std::vector<json> lengths(const std::vector<int64_t>& v) { return std::vector<json>(v.begin(), v.end()); }
};

CONVTUNE_REGISTER_VARIANT(Conv1dPartsSpectral);

}  // namespace
}  // namespace convtune
