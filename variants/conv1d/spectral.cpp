// The spectral conv1d variants (seed 000, the overlap methods with the DFT): the fused kernel (one kernel per
// pair of windows, FFT in shared memory), unfused overlap-discard and overlap-add over cuFFT's batched
// transforms, and the whole-signal cuFFT baseline. The filter's spectrum is made once per filter in bind.
#include <algorithm>
#include <cmath>

#include "harness/cufft.h"
#include "harness/error.h"
#include "variants/conv1d/helpers.h"
#include "variants/conv1d/jit_conv1d.h"
#include "variants/conv1d/kstep.h"

namespace convtune {
namespace {

// An N-point complex FFT: ~5 N log2 N flops; a real one half that.
double fft_flops(double n) { return 5.0 * n * std::log2(n); }

// The smooth sizes (2, 3, 5, 7 factors) cuFFT's batched overlap methods try: not only powers of two.
std::vector<json> batched_sizes() {
  return int_values({512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 10240, 12288, 16384, 24576, 32768, 65536});
}

// Windows of `size` must keep at least a quarter of their outputs: below that the transforms are mostly halo.
Status enough_valid(const Conv1d& p, int64_t size) {
  if (size - (p.m - 1) < std::max<int64_t>(1, size / 4))
    return Status::no("FFT size " + std::to_string(size) + " leaves " + std::to_string(std::max<int64_t>(size - p.m + 1, 0)) +
                      " valid outputs per block for m = " + std::to_string(p.m) + " (fewer than a quarter)");
  return Status::yes();
}

// ---- fused ----------------------------------------------------------------------------------------------

struct Fused {
  int64_t size;
  int threads, radix;
  bool persistent;
  int64_t smem() const { return 8 * (size + size / 32); }  // complex points, padded every 32
};

class FusedPlan : public Plan {
 public:
  FusedPlan(const Conv1d& p, std::shared_ptr<Module> module, const Fused& f, int sms)
      : p_(p), f_(f), module_(std::move(module)), spectrum_(size_t(f.size)),
        pairs_(ceil_div(ceil_div(p.outputs(), f.size - (p.m - 1)), 2)) {
    fn_ = module_->function("conv1d_fused_fft");
    attrs_ = kernel_attributes(fn_, f.threads, int(f.smem()));
    grid_ = f.persistent ? std::min<int64_t>(pairs_, int64_t(sms) * std::max(1, attrs_.blocks_per_sm)) : pairs_;
    size_t work = 0;
    CT_CUFFT(cufftMakePlan1d(fft_.get(), int(f.size), CUFFT_C2C, 1, &work));
  }
  void bind(const Operands& ops, cudaStream_t s) override {
    x_ = ops.data.at(0);
    y_ = ops.output();
    filter_as_complex(ops.data.at(1), p_.m, spectrum_.get(), f_.size, s);
    CT_CUFFT(cufftSetStream(fft_.get(), s));
    CT_CUFFT(cufftExecC2C(fft_.get(), spectrum_.get(), spectrum_.get(), CUFFT_FORWARD));
  }
  void run(cudaStream_t s) override {
    const cufftComplex* h = spectrum_.get();
    long long n = p_.n, outputs = p_.outputs(), shift = p_.full ? -(p_.m - 1) : 0, pairs = pairs_;
    void* args[] = {&x_, &h, &y_, &n, &outputs, &shift, &pairs};
    launch(fn_, dim3(unsigned(grid_)), dim3(f_.threads), unsigned(f_.smem()), s, args);
  }
  KernelAttributes attributes() const override { return attrs_; }

 private:
  Conv1d p_;
  Fused f_;
  std::shared_ptr<Module> module_;
  CUfunction fn_;
  KernelAttributes attrs_;
  DeviceArray<cufftComplex> spectrum_;
  CufftHandle fft_;
  int64_t pairs_, grid_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
};

Fused fused_of(const Config& c) {
  return {cfg_int(c, "fft_size"), cfg_int(c, "threads"), cfg_int(c, "radix"), c.at("grid") == "persistent"};
}

class Conv1dFusedFft : public Variant {
 public:
  std::string name() const override { return "conv1d.fused_fft"; }
  std::string family() const override { return kConv1d; }
  std::string summary() const override {
    return "fused spectral overlap-discard: per pair of windows one kernel loads, FFTs in shared memory (two real "
           "windows as one complex sequence), multiplies by the filter spectrum, inverse FFTs, writes the valid part";
  }
  int complexity() const override { return 6; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("fft_size", "points per window (power of two)", int_values({512, 1024, 2048, 4096, 8192, 16384}))
        .add("threads", "threads per block", int_values({128, 256, 512, 1024}))
        .add("radix", "largest Stockham pass radix (16: fewer passes; 8: fewer live registers)", int_values({8, 16}))
        .add("grid", "one block per pair of windows, or persistent blocks that prefetch their next pair into L2",
             {"per_pair", "persistent"});
  }
  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    const Conv1d p(prob);
    const Fused f = fused_of(c);
    if (f.threads > dev.max_threads_per_block) return Status::no("more threads than the device allows");
    if (f.threads > f.size / 8) return Status::no("more threads than radix-8 butterflies");
    if (f.size / f.threads > 32) return Status::no("more than 32 points per thread would spill registers");
    if (Status s = enough_valid(p, f.size); !s) return s;
    return shared_memory_fits(f.smem(), dev);
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv1d p(prob);
    const Fused f = fused_of(c);
    const double windows = std::ceil(double(p.outputs()) / double(f.size - p.m + 1)), blocks = std::ceil(windows / 2);
    // Per block: two complex FFTs and the product; reads: each window's N inputs and the spectrum (from L2).
    return {prob.direct_flops(), blocks * (2 * fft_flops(double(f.size)) + 6.0 * double(f.size)), prob.min_bytes(),
            4.0 * (windows * double(f.size) + double(p.outputs())) + 8.0 * blocks * double(f.size)};
  }
  Tolerance tolerance(const Problem&, const Config&) const override { return kSpectralFp32Tolerance; }
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override {
    return {{"conv1d_fused_fft.cuh",
             {define("N", cfg_int(c, "fft_size")), define("THREADS", cfg_int(c, "threads")), define("M", p.at("m")),
              define("RADIX", cfg_int(c, "radix")), define("PERSISTENT", c.at("grid") == "persistent")}}};
  }
  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo& dev, JitCache& jit) const override {
    return std::make_unique<FusedPlan>(Conv1d(prob), jit.module(programs(prob, c).front()), fused_of(c), dev.sms);
  }
};

// ---- unfused batched overlap methods over cuFFT ---------------------------------------------------------

// Real-to-complex and back over `batch` windows of `size` points, one shared work area; and the filter's
// spectrum (R2C of h zero-padded to size), made in bind.
class BatchedFft {
 public:
  BatchedFft(int64_t size, int64_t batch) : size_(size), batch_(batch), bins_(size / 2 + 1) {
    size_t ws_f = 0, ws_i = 0, ws_h = 0;
    long long n = size, idist = size, odist = bins_;
    for (cufftHandle h : {fwd_.get(), inv_.get(), filter_.get()}) CT_CUFFT(cufftSetAutoAllocation(h, 0));
    CT_CUFFT(cufftMakePlanMany64(fwd_.get(), 1, &n, nullptr, 1, idist, nullptr, 1, odist, CUFFT_R2C, batch, &ws_f));
    CT_CUFFT(cufftMakePlanMany64(inv_.get(), 1, &n, nullptr, 1, odist, nullptr, 1, idist, CUFFT_C2R, batch, &ws_i));
    CT_CUFFT(cufftMakePlanMany64(filter_.get(), 1, &n, nullptr, 1, idist, nullptr, 1, odist, CUFFT_R2C, 1, &ws_h));
    work_ = DeviceArray<char>(std::max({ws_f, ws_i, ws_h}));
    for (cufftHandle h : {fwd_.get(), inv_.get(), filter_.get()}) CT_CUFFT(cufftSetWorkArea(h, work_.get()));
    real_ = DeviceArray<float>(size_t(size * batch));
    spectra_ = DeviceArray<cufftComplex>(size_t(bins_ * batch));
    filter_real_ = DeviceArray<float>(size_t(size));
    filter_spectrum_ = DeviceArray<cufftComplex>(size_t(bins_));
  }
  void set_filter(const float* h, int64_t m, cudaStream_t s) {
    CT_CUDA(cudaMemsetAsync(filter_real_.get(), 0, filter_real_.bytes(), s));
    CT_CUDA(cudaMemcpyAsync(filter_real_.get(), h, size_t(m) * sizeof(float), cudaMemcpyDeviceToDevice, s));
    CT_CUFFT(cufftSetStream(filter_.get(), s));
    CT_CUFFT(cufftExecR2C(filter_.get(), filter_real_.get(), filter_spectrum_.get()));
  }
  // real_ -> spectra -> times the filter -> real_ (unnormalised: the caller scales by 1/size).
  void convolve_batch(cudaStream_t s) {
    CT_CUFFT(cufftSetStream(fwd_.get(), s));
    CT_CUFFT(cufftSetStream(inv_.get(), s));
    CT_CUFFT(cufftExecR2C(fwd_.get(), real_.get(), spectra_.get()));
    multiply_spectra(spectra_.get(), filter_spectrum_.get(), bins_, batch_, s);
    CT_CUFFT(cufftExecC2R(inv_.get(), spectra_.get(), real_.get()));
  }
  float* real() const { return real_.get(); }
  size_t workspace_bytes() const { return work_.bytes() + real_.bytes() + spectra_.bytes(); }

 private:
  int64_t size_, batch_, bins_;
  CufftHandle fwd_, inv_, filter_;
  DeviceArray<char> work_;
  DeviceArray<float> real_, filter_real_;
  DeviceArray<cufftComplex> spectra_, filter_spectrum_;
};

// Bytes of the unfused pipeline: pack (read inputs, write the batch), R2C, product, C2R (each a read and a
// write of the batch, complex about as large as real), then the unpack's read of the batch and write.
double batched_bytes(const Conv1d& p, double batch_floats, double read_inputs) {
  return 4.0 * (read_inputs + batch_floats + 6 * batch_floats + batch_floats + double(p.outputs()));
}

class BatchedVariant : public Variant {
 public:
  std::string family() const override { return kConv1d; }
  Tolerance tolerance(const Problem&, const Config&) const override { return kSpectralFp32Tolerance; }
  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo&) const override {
    const Conv1d p(prob);
    const int64_t size = cfg_int(c, "fft_size");
    if (!is_smooth(size)) return Status::no("FFT size " + std::to_string(size) + " has a prime factor above 7");
    return enough_valid(p, size);
  }
};

class OverlapDiscardFftPlan : public Plan {
 public:
  OverlapDiscardFftPlan(const Conv1d& p, int64_t size)
      : p_(p), size_(size), valid_(size - (p.m - 1)), windows_(ceil_div(p.outputs(), valid_)), fft_(size, windows_) {}
  void bind(const Operands& ops, cudaStream_t s) override {
    x_ = ops.data.at(0);
    y_ = ops.output();
    fft_.set_filter(ops.data.at(1), p_.m, s);
  }
  void run(cudaStream_t s) override {
    pack_overlapping(x_, p_.n, p_.full ? -(p_.m - 1) : 0, valid_, size_, windows_, fft_.real(), s);
    fft_.convolve_batch(s);
    unpack_valid(fft_.real(), size_, p_.m - 1, valid_, p_.outputs(), 1.0f / float(size_), y_, s);
  }
  size_t workspace_bytes() const override { return fft_.workspace_bytes(); }

 private:
  Conv1d p_;
  int64_t size_, valid_, windows_;
  BatchedFft fft_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
};

class Conv1dOverlapDiscardFft : public BatchedVariant {
 public:
  std::string name() const override { return "conv1d.overlap_discard_fft"; }
  std::string summary() const override {
    return "spectral overlap-discard, unfused: pack overlapping windows, one batched cuFFT R2C, product with the "
           "filter spectrum, one batched C2R, keep each window's last N - m + 1 outputs";
  }
  int complexity() const override { return 4; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace().add("fft_size", "points per window (2,3,5,7-smooth)", batched_sizes());
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv1d p(prob);
    const double size = cfg_int(c, "fft_size"), windows = std::ceil(double(p.outputs()) / (size - double(p.m) + 1));
    return {prob.direct_flops(), windows * (fft_flops(size) + 6.0 * size), prob.min_bytes(),
            batched_bytes(p, windows * size, windows * size)};
  }
  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache&) const override {
    return std::make_unique<OverlapDiscardFftPlan>(Conv1d(prob), cfg_int(c, "fft_size"));
  }
};

class OverlapAddFftPlan : public Plan {
 public:
  OverlapAddFftPlan(const Conv1d& p, int64_t size, int k_steps)
      : p_(p), size_(size), block_(size - (p.m - 1)), blocks_(ceil_div(p.n, block_)), k_steps_(k_steps),
        fft_(size, blocks_) {}
  void bind(const Operands& ops, cudaStream_t s) override {
    x_ = ops.data.at(0);
    y_ = ops.output();
    fft_.set_filter(ops.data.at(1), p_.m, s);
  }
  void run(cudaStream_t s) override {
    pack_disjoint(x_, p_.n, block_, size_, blocks_, fft_.real(), s);
    fft_.convolve_batch(s);
    const int64_t span = block_ + p_.m - 1;
    if (k_steps_ == 0) zero_overlaps(y_, block_, span, blocks_, p_.first(), p_.outputs(), s);
    for (int step = 0; step < std::max(k_steps_, 1); ++step)
      scatter_overlapping(fft_.real(), size_, block_, span, blocks_, p_.first(), p_.outputs(), step, k_steps_,
                          1.0f / float(size_), y_, s);
  }
  size_t workspace_bytes() const override { return fft_.workspace_bytes(); }

 private:
  Conv1d p_;
  int64_t size_, block_, blocks_;
  int k_steps_;
  BatchedFft fft_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
};

int fft_steps_of(const Config& c) {
  const std::string s = c.at("schedule");
  return s == "atomic" ? 0 : std::stoi(s.substr(1));
}

class Conv1dOverlapAddFft : public BatchedVariant {
 public:
  std::string name() const override { return "conv1d.overlap_add_fft"; }
  std::string summary() const override {
    return "spectral overlap-add, unfused: disjoint blocks of N - m + 1 inputs zero-padded to N, batched cuFFT "
           "R2C / product / C2R, overlapping outputs accumulated by the K-step schedule or by atomics";
  }
  int complexity() const override { return 5; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("fft_size", "points per block (2,3,5,7-smooth)", batched_sizes())
        .add("schedule", "accumulation of overlapping outputs", {"k2", "k3", "k4", "atomic"});
  }
  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    if (Status s = BatchedVariant::can_implement(prob, c, dev); !s) return s;
    const Conv1d p(prob);
    const int64_t block = cfg_int(c, "fft_size") - (p.m - 1);
    const int k = fft_steps_of(c);
    if (k > 0 && k < conv1d::kstep_min_k(block, p.m))
      return Status::no(std::to_string(k) + " steps let overlapping blocks run together; needs " +
                        std::to_string(conv1d::kstep_min_k(block, p.m)));
    return Status::yes();
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv1d p(prob);
    const double size = cfg_int(c, "fft_size"), block = size - double(p.m) + 1, blocks = std::ceil(double(p.n) / block);
    // Unpack: every block's span written, the overlapping part read back to be added.
    return {prob.direct_flops(), blocks * (fft_flops(size) + 6.0 * size), prob.min_bytes(),
            batched_bytes(p, blocks * size, double(p.n)) + 4.0 * (blocks * (double(p.m) - 1))};
  }
  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache&) const override {
    return std::make_unique<OverlapAddFftPlan>(Conv1d(prob), cfg_int(c, "fft_size"), fft_steps_of(c));
  }
};

// ---- whole-signal cuFFT -----------------------------------------------------------------------------

class WholeFftPlan : public Plan {
 public:
  WholeFftPlan(const Conv1d& p, int64_t size) : p_(p), size_(size), fft_(size, 1) {}
  void bind(const Operands& ops, cudaStream_t s) override {
    x_ = ops.data.at(0);
    y_ = ops.output();
    fft_.set_filter(ops.data.at(1), p_.m, s);
  }
  void run(cudaStream_t s) override {
    pack_overlapping(x_, p_.n, 0, size_, size_, 1, fft_.real(), s);  // x zero-padded to size
    fft_.convolve_batch(s);
    unpack_valid(fft_.real() + p_.first(), size_, 0, size_, p_.outputs(), 1.0f / float(size_), y_, s);
  }
  size_t workspace_bytes() const override { return fft_.workspace_bytes(); }

 private:
  Conv1d p_;
  int64_t size_;
  BatchedFft fft_;
  const float* x_ = nullptr;
  float* y_ = nullptr;
};

class Conv1dFft : public Variant {
 public:
  std::string name() const override { return "conv1d.fft"; }
  std::string family() const override { return kConv1d; }
  std::string summary() const override {
    return "cuFFT whole-signal convolution: x and h zero-padded to one transform length, R2C, product, C2R";
  }
  bool library() const override { return true; }
  int complexity() const override { return 2; }
  Tolerance tolerance(const Problem&, const Config&) const override { return kSpectralFp32Tolerance; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace().add("size_policy", "transform length: next power of two or next 2,3,5,7-smooth",
                            {"pow2", "smooth"});
  }
  // Valid mode needs no wrap-around only for the kept outputs: size >= n suffices; full needs n + m - 1.
  static int64_t size_of(const Conv1d& p, const Config& c) {
    const int64_t need = p.full ? p.n + p.m - 1 : p.n;
    return c.at("size_policy") == "pow2" ? next_pow2(need) : next_smooth(need);
  }
  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    const int64_t size = size_of(Conv1d(prob), c);
    if (16.0 * double(size) > 0.5 * double(dev.global_mem_bytes))
      return Status::no("transform of " + std::to_string(size) + " points needs more than half the device memory");
    return Status::yes();
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv1d p(prob);
    const double size = double(size_of(p, c));
    return {prob.direct_flops(), fft_flops(size) + 6.0 * size, prob.min_bytes(), batched_bytes(p, size, double(p.n))};
  }
  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache&) const override {
    return std::make_unique<WholeFftPlan>(Conv1d(prob), size_of(Conv1d(prob), c));
  }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(Conv1dFusedFft);
CONVTUNE_REGISTER_VARIANT(Conv1dOverlapDiscardFft);
CONVTUNE_REGISTER_VARIANT(Conv1dOverlapAddFft);
CONVTUNE_REGISTER_VARIANT(Conv1dFft);

}  // namespace convtune
