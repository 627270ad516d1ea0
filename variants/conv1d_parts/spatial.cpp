// conv1d_parts.spatial: convolution in parts computed directly. The parts schedule (schedule.h) as in
// conv1d_parts.spectral; one CUDA block per interval sums its block pairs' linear convolutions in registers
// (kernels/conv1d_parts_spatial.cuh) into an interval buffer, and the gather sums the divisions into the slice.
// The baseline the seed compares the spectral version against: l_a * l_b multiply-adds per pair.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "harness/jit_options.h"
#include "harness/variant.h"
#include "variants/conv1d_parts/parts.h"
#include "variants/conv1d_parts/parts_kernels.h"

namespace convtune {
namespace {

using parts::PartsCounts;

constexpr int64_t kSpatialMinBlock = 64, kSpatialMaxBlock = 4096;
constexpr int64_t kSpatialMaxPairs = int64_t(1) << 26;
constexpr double kMaxDirectWork = double(int64_t(1) << 42);  // multiply-adds: ~1 s at the measured rate
constexpr double kMaxIntervalBytes = 2.0 * (int64_t(1) << 30);

struct SpatialConfig {
  int64_t l_a, l_b;
  int threads, coarsen;
  explicit SpatialConfig(const Config& c)
      : l_a(c.at("l_a").get<int64_t>()), l_b(c.at("l_b").get<int64_t>()), threads(c.at("threads").get<int>()),
        coarsen(c.at("coarsen").get<int>()) {}
  int64_t interval() const { return l_a + l_b - 1; }  // values one block computes
  int64_t stride() const { return l_a + l_b; }        // floats between intervals in the buffer
  int64_t passes() const { return (interval() + int64_t(threads) * coarsen - 1) / (int64_t(threads) * coarsen); }
  // The kernel's static shared memory (its A_LEN and skewed B_LEN), in bytes.
  int64_t smem_bytes() const {
    const int64_t b_len = l_b + 2 * (32 * coarsen + coarsen);
    return 4 * ((l_a + coarsen) + (b_len + b_len / 32 + 1));
  }
};

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
std::vector<json> ints(const std::vector<int64_t>& v) { return std::vector<json>(v.begin(), v.end()); }

class SpatialPlan : public Plan {
 public:
  SpatialPlan(std::shared_ptr<Module> module, const Conv1dParts& p, const SpatialConfig& c)
      : module_(std::move(module)), n_(p.n), m_(p.m), start_(p.start), outputs_(p.outputs()), stride_(c.stride()),
        threads_(c.threads) {
    const parts::PartsSchedule s = parts::make_parts_schedule(p.n, p.m, c.l_a, c.l_b, p.start, p.end);
    intervals_ = parts::upload_intervals(s, s.pair_a, s.pair_b);  // the kernel indexes blocks directly
    values_ = DeviceArray<float>(size_t(intervals_.intervals * stride_));
    fn_ = module_->function("conv1d_parts_spatial");
    attrs_ = kernel_attributes(fn_, threads_, 0);
  }

  void bind(const Operands& ops, cudaStream_t) override {
    a_ = ops.data.at(0);
    b_ = ops.data.at(1);
    out_ = ops.output();
  }

  void run(cudaStream_t stream) override {
    const void* offsets = intervals_.pair_offset.get();  // int64_t: the kernel's long long
    const void* pair_a = intervals_.pair_a.get();
    const void* pair_b = intervals_.pair_b.get();
    void* values = values_.get();
    long long n = n_, m = m_;
    void* args[] = {&a_, &n, &b_, &m, &offsets, &pair_a, &pair_b, &values};
    launch(fn_, dim3(unsigned(intervals_.intervals)), dim3(unsigned(threads_)), 0, stream, args);
    parts::gather_intervals(intervals_, values_.get(), stride_, start_, outputs_, 1.0f, out_, stream);
  }

  KernelAttributes attributes() const override { return attrs_; }
  size_t workspace_bytes() const override { return intervals_.bytes() + values_.bytes(); }

 private:
  std::shared_ptr<Module> module_;
  CUfunction fn_ = nullptr;
  KernelAttributes attrs_;
  int64_t n_, m_, start_, outputs_, stride_;
  int threads_;
  parts::DeviceIntervals intervals_;
  DeviceArray<float> values_;
  const float* a_ = nullptr;
  const float* b_ = nullptr;
  float* out_ = nullptr;
};

class Conv1dPartsSpatial : public Variant {
 public:
  std::string name() const override { return "conv1d_parts.spatial"; }
  std::string family() const override { return kConv1dParts; }
  std::string summary() const override {
    return "convolution in parts, direct: one CUDA block per interval sums its block pairs' convolutions from "
           "shared memory into registers; divisions gathered into the slice";
  }
  int complexity() const override { return 3; }

  ParamSpace space(const Problem& prob, const DeviceInfo&) const override {
    const Conv1dParts p(prob);
    return ParamSpace()
        .add("l_a", "block length of a (a power of two; one of l_a, l_b divides the other)",
             ints(parts::block_lengths(kSpatialMinBlock, kSpatialMaxBlock, p.n)))
        .add("l_b", "block length of b", ints(parts::block_lengths(kSpatialMinBlock, kSpatialMaxBlock, p.m)))
        .add("threads", "threads per block (one block per interval)", {64, 128, 256, 512})
        .add("coarsen", "consecutive outputs per thread, accumulated in registers", {2, 4, 8, 16});
  }

  Status can_implement(const Problem& prob, const Config& cfg, const DeviceInfo& dev) const override {
    if (prob.family != kConv1dParts) return Status::no("not a conv1d_parts problem");
    const Conv1dParts p(prob);
    const SpatialConfig c(cfg);
    for (const std::string& why : {parts::block_length_problem("l_a", c.l_a, kSpatialMinBlock, kSpatialMaxBlock, p.n),
                                   parts::block_length_problem("l_b", c.l_b, kSpatialMinBlock, kSpatialMaxBlock, p.m)})
      if (!why.empty()) return Status::no(why);
    if (c.threads % 32 != 0 || c.threads < 32 || c.threads > dev.max_threads_per_block)
      return Status::no("threads=" + std::to_string(c.threads) + " must be a multiple of 32 in [32, " +
                        std::to_string(dev.max_threads_per_block) + "]");
    if (!power_of_two(c.coarsen) || c.coarsen > 32)
      return Status::no("coarsen=" + std::to_string(c.coarsen) + " must be a power of two <= 32");
    if (int64_t(c.threads) * c.coarsen > 2 * c.stride())
      return Status::no("threads x coarsen = " + std::to_string(c.threads * c.coarsen) + " outputs per pass is over twice the " +
                        std::to_string(c.interval()) + " of an interval: most threads would idle");
    if (c.smem_bytes() > dev.max_smem_per_block)
      return Status::no("shared memory " + std::to_string(c.smem_bytes()) + " B > device limit " +
                        std::to_string(dev.max_smem_per_block) + " B");
    const PartsCounts k = parts::count_parts(p.n, p.m, c.l_a, c.l_b, p.start, p.end);
    if (k.pairs > kSpatialMaxPairs)
      return Status::no(std::to_string(k.pairs) + " block pairs > 2^26: longer blocks cut the schedule");
    if (direct_work(k, c) > kMaxDirectWork)
      return Status::no("direct work of " + std::to_string(k.pairs) + " pairs x " + std::to_string(c.l_a) + " x " +
                        std::to_string(c.l_b) + " multiply-adds > 2^42");
    const double interval_bytes = 4.0 * double(k.intervals) * double(c.stride());
    if (interval_bytes > kMaxIntervalBytes)
      return Status::no("the interval buffer (" + std::to_string(k.intervals) + " intervals x " +
                        std::to_string(c.stride()) + " floats) is over 2 GiB");
    if (dev.global_mem_bytes > 0 && interval_bytes + 8.0 * double(k.pairs) > 0.5 * double(dev.global_mem_bytes))
      return Status::no("the interval buffer and pair lists need over half the device memory");
    return Status::yes();
  }

  // Loads: each pass over an interval's outputs reloads every pair's two blocks; writes: whole intervals;
  // then the gather reads the intervals' values inside the slice and writes the slice.
  Cost cost(const Problem& prob, const Config& cfg) const override {
    const SpatialConfig c(cfg);
    const Conv1dParts p(prob);
    const PartsCounts k = parts::count_parts(p.n, p.m, c.l_a, c.l_b, p.start, p.end);
    const double loads = 4.0 * double(c.passes()) * double(k.pairs) * double(c.l_a + c.l_b);
    const double interval_writes = 4.0 * double(k.intervals) * double(c.interval());
    const double gather = 4.0 * double(k.covered) + 4.0 * double(p.outputs());
    return {prob.direct_flops(), 2.0 * direct_work(k, c), prob.min_bytes(), loads + interval_writes + gather};
  }

  // A direct fp32 sum: rounding grows like sqrt(terms) (random signs), so the bound does too (the bound of
  // conv1d's direct variants, with the slice's longest sum as the length).
  Tolerance tolerance(const Problem& prob, const Config&) const override {
    const double rel = std::max(1e-5, 2e-7 * std::sqrt(double(Conv1dParts(prob).longest_sum())));
    return {rel, 10 * rel};
  }

  std::vector<JitProgram> programs(const Problem&, const Config& cfg) const override {
    const SpatialConfig c(cfg);
    return {{"conv1d_parts_spatial.cuh",
             {define("L_A", c.l_a), define("L_B", c.l_b), define("THREADS", c.threads), define("COARSEN", c.coarsen)}}};
  }

  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& cfg, const DeviceInfo&,
                                JitCache& jit) const override {
    auto module = jit.module(programs(prob, cfg).front());
    return std::make_unique<SpatialPlan>(std::move(module), Conv1dParts(prob), SpatialConfig(cfg));
  }

 private:
  static double direct_work(const PartsCounts& k, const SpatialConfig& c) {
    return double(k.pairs) * double(c.l_a) * double(c.l_b);
  }
};

CONVTUNE_REGISTER_VARIANT(Conv1dPartsSpatial);

}  // namespace
}  // namespace convtune
