// The spatial conv1d variants (seed 000): direct gather, overlap-discard and overlap-add (K-step or atomic),
// each an NVRTC kernel with its tunables as compile-time defines.
#include <algorithm>

#include "harness/error.h"
#include "variants/conv1d/helpers.h"
#include "variants/conv1d/jit_conv1d.h"
#include "variants/conv1d/kstep.h"

namespace convtune {

Status spatial_work_fits(const Conv1d& p) {
  const double work = double(p.outputs()) * double(p.m);
  if (work > kMaxSpatialMultiplyAdds)
    return Status::no("direct work " + std::to_string(work) + " multiply-adds > 2^41: use a spectral method");
  return Status::yes();
}

Status shared_memory_fits(int64_t bytes, const DeviceInfo& dev) {
  if (bytes > dev.max_smem_per_block_optin)
    return Status::no("shared memory " + std::to_string(bytes) + " B > device limit " +
                      std::to_string(dev.max_smem_per_block_optin) + " B");
  return Status::yes();
}

Conv1dKernelPlan::Conv1dKernelPlan(const Conv1d& p, std::shared_ptr<Module> module, int64_t padded_taps, bool constant)
    : p_(p), module_(std::move(module)), reversed_(size_t(padded_taps)) {
  if (constant) {
    size_t bytes = 0;
    constant_ = module_->global("c_filter", &bytes);
    if (bytes < size_t(padded_taps) * sizeof(float)) throw std::logic_error("c_filter is smaller than the filter");
  }
}

void Conv1dKernelPlan::bind(const Operands& ops, cudaStream_t stream) {
  x_ = ops.data.at(0);
  y_ = ops.output();
  reverse_filter(ops.data.at(1), p_.m, reversed_.get(), int64_t(reversed_.size()), stream);
  if (constant_)
    CT_CUDA(cudaMemcpyAsync(reinterpret_cast<void*>(constant_), reversed_.get(), reversed_.bytes(),
                            cudaMemcpyDeviceToDevice, stream));
}

namespace {

long long shift_of(const Conv1d& p) { return p.full ? -(p.m - 1) : 0; }

// ---- direct -------------------------------------------------------------------------------------------

class DirectPlan : public Conv1dKernelPlan {
 public:
  DirectPlan(const Conv1d& p, std::shared_ptr<Module> m, int threads, int per_thread, bool constant)
      : Conv1dKernelPlan(p, std::move(m), p.m, constant), threads_(threads), per_thread_(per_thread) {
    fn_ = module_->function("conv1d_direct");
    attrs_ = kernel_attributes(fn_, threads, 0);
  }
  void run(cudaStream_t s) override {
    const float* g = reversed_.get();
    long long n = p_.n, outputs = p_.outputs(), shift = shift_of(p_);
    int m = int(p_.m);
    void* args[] = {&x_, &g, &y_, &n, &m, &outputs, &shift};
    launch(fn_, dim3(unsigned(ceil_div(outputs, int64_t(threads_) * per_thread_))), dim3(threads_), 0, s, args);
  }

 private:
  CUfunction fn_;
  int threads_, per_thread_;
};

class Conv1dDirect : public Variant {
 public:
  std::string name() const override { return "conv1d.direct"; }
  std::string family() const override { return kConv1d; }
  std::string summary() const override {
    return "direct gather: outputs_per_thread outputs per thread, `threads` apart; reversed filter in constant or "
           "global memory";
  }
  int complexity() const override { return 1; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("threads", "threads per block", int_values({128, 256, 512}))
        .add("outputs_per_thread", "coarsening: outputs each thread computes", int_values({1, 2, 4, 8}))
        .add("filter", "where the reversed filter lives", {"constant", "global"});
  }
  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    const Conv1d p(prob);
    if (cfg_int(c, "threads") > dev.max_threads_per_block) return Status::no("more threads than the device allows");
    if (c.at("filter") == "constant" && p.m > kMaxConstantTaps)
      return Status::no("m = " + std::to_string(p.m) + " > " + std::to_string(kMaxConstantTaps) +
                        " taps do not fit in constant memory");
    if (ceil_div(p.outputs(), int64_t(cfg_int(c, "threads")) * cfg_int(c, "outputs_per_thread")) > INT32_MAX)
      return Status::no("more than 2^31 blocks");
    return spatial_work_fits(p);
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv1d p(prob);
    // Each block reads its outputs' span plus the m - 1 halo (through L1), once per block.
    const double tile = double(cfg_int(c, "threads")) * cfg_int(c, "outputs_per_thread");
    const double blocks = std::ceil(double(p.outputs()) / tile);
    return {prob.direct_flops(), 2.0 * double(p.outputs()) * double(p.m), prob.min_bytes(),
            4.0 * (blocks * (tile + double(p.m) - 1) + double(p.m) + double(p.outputs()))};
  }
  Tolerance tolerance(const Problem& p, const Config&) const override { return direct_tolerance(p.at("m")); }
  std::vector<JitProgram> programs(const Problem&, const Config& c) const override {
    return {{"conv1d_direct.cuh",
             {define("THREADS", cfg_int(c, "threads")), define("C", cfg_int(c, "outputs_per_thread")),
              define("FILTER_CONSTANT", c.at("filter") == "constant")}}};
  }
  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache& jit) const override {
    return std::make_unique<DirectPlan>(Conv1d(prob), jit.module(programs(prob, c).front()), cfg_int(c, "threads"),
                                        cfg_int(c, "outputs_per_thread"), c.at("filter") == "constant");
  }
};

// ---- tiled overlap methods --------------------------------------------------------------------------

// The tile geometry of conv1d_tiled.cuh.
struct Tile {
  int threads, per_thread, group;
  int64_t m;
  int64_t out() const { return int64_t(threads) * per_thread; }
  int64_t rows() const { return ceil_div(m, 32); }
  int64_t in() const { return out() + 32 * rows(); }
  int64_t smem() const { return 4 * in(); }
  int64_t block_in() const { return out() - (m - 1); }  // overlap-add: inputs per block
};

Tile tile_of(const Problem& p, const Config& c) {
  return {cfg_int(c, "threads"), cfg_int(c, "outputs_per_thread"), cfg_int(c, "tap_group"), p.at("m")};
}

JitProgram tiled_program(const Tile& t) {
  return {"conv1d_tiled.cuh",
          {define("M", t.m), define("THREADS", t.threads), define("P", t.per_thread), define("G", t.group)}};
}

ParamSpace tiled_space() {
  return ParamSpace()
      .add("threads", "threads per block", int_values({128, 256}))
      .add("outputs_per_thread", "register blocking: outputs per thread (32 apart)", int_values({4, 8, 16}))
      .add("tap_group", "32-tap rows per register group", int_values({4, 8}));
}

Status tiled_fits(const Conv1d& p, const Tile& t, const DeviceInfo& dev) {
  if (p.m > kMaxConstantTaps)
    return Status::no("m = " + std::to_string(p.m) + " > " + std::to_string(kMaxConstantTaps) +
                      " taps do not fit in constant memory");
  if (t.threads > dev.max_threads_per_block) return Status::no("more threads than the device allows");
  if (Status s = shared_memory_fits(t.smem(), dev); !s) return s;
  return spatial_work_fits(p);
}

// What the tiled kernels' compute costs beyond the direct count: every thread runs all rows of 32 taps.
double tiled_flops(const Tile& t, double tiles) { return 2.0 * tiles * double(t.out()) * double(t.m); }

class TiledPlan : public Conv1dKernelPlan {
 public:
  TiledPlan(const Conv1d& p, std::shared_ptr<Module> m, const Tile& t, const char* fn)
      : Conv1dKernelPlan(p, std::move(m), 32 * t.rows(), true), t_(t) {
    fn_ = module_->function(fn);
    attrs_ = kernel_attributes(fn_, t.threads, int(t.smem()));
  }

 protected:
  Tile t_;
  CUfunction fn_;
};

class OverlapDiscardPlan : public TiledPlan {
 public:
  OverlapDiscardPlan(const Conv1d& p, std::shared_ptr<Module> m, const Tile& t)
      : TiledPlan(p, std::move(m), t, "conv1d_overlap_discard") {}
  void run(cudaStream_t s) override {
    long long n = p_.n, outputs = p_.outputs(), shift = shift_of(p_);
    void* args[] = {&x_, &y_, &n, &outputs, &shift};
    launch(fn_, dim3(unsigned(ceil_div(outputs, t_.out()))), dim3(t_.threads), unsigned(t_.smem()), s, args);
  }
};

class Conv1dOverlapDiscard : public Variant {
 public:
  std::string name() const override { return "conv1d.overlap_discard"; }
  std::string family() const override { return kConv1d; }
  std::string summary() const override {
    return "spatial overlap-discard: a block stages L + m - 1 inputs in shared memory (coalesced) and computes L "
           "outputs with register blocking; interior blocks skip bounds checks";
  }
  int complexity() const override { return 3; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override { return tiled_space(); }
  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    return tiled_fits(Conv1d(prob), tile_of(prob, c), dev);
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv1d p(prob);
    const Tile t = tile_of(prob, c);
    const double blocks = std::ceil(double(p.outputs()) / double(t.out()));
    // The seed's table: N (1 + (m-1)/L) reads, the outputs written once; plus the filter.
    return {prob.direct_flops(), tiled_flops(t, blocks), prob.min_bytes(),
            4.0 * (blocks * double(t.out() + p.m - 1) + double(p.m) + double(p.outputs()))};
  }
  Tolerance tolerance(const Problem& p, const Config&) const override { return direct_tolerance(p.at("m")); }
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override {
    return {tiled_program(tile_of(p, c))};
  }
  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache& jit) const override {
    return std::make_unique<OverlapDiscardPlan>(Conv1d(prob), jit.module(programs(prob, c).front()), tile_of(prob, c));
  }
};

// "k2".."k4": the K-step schedule; "atomic": one launch adding atomically where blocks meet.
int spatial_steps_of(const Config& c) {
  const std::string s = c.at("schedule");
  return s == "atomic" ? 0 : std::stoi(s.substr(1));
}

class OverlapAddPlan : public TiledPlan {
 public:
  OverlapAddPlan(const Conv1d& p, std::shared_ptr<Module> m, const Tile& t, int k_steps)
      : TiledPlan(p, std::move(m), t, "conv1d_overlap_add"), k_steps_(k_steps), blocks_(ceil_div(p.n, t.block_in())) {
    zero_fn_ = module_->function("conv1d_zero_overlaps");
  }
  void run(cudaStream_t s) override {
    long long n = p_.n, outputs = p_.outputs(), first = p_.first(), blocks = blocks_;
    int k = k_steps_;
    if (k == 0) {
      void* zargs[] = {&y_, &outputs, &first, &blocks};
      launch(zero_fn_, dim3(unsigned(std::min<int64_t>(65536, ceil_div((blocks - 1) * (p_.m - 1), 256) + 1))), dim3(256),
             0, s, zargs);
    }
    for (int step = 0; step < std::max(k, 1); ++step) {
      void* args[] = {&x_, &y_, &n, &outputs, &first, &blocks, &step, &k};
      const int64_t grid = k ? ceil_div(blocks - step, k) : blocks;
      if (grid > 0) launch(fn_, dim3(unsigned(grid)), dim3(t_.threads), unsigned(t_.smem()), s, args);
    }
  }

 private:
  int k_steps_;
  int64_t blocks_;
  CUfunction zero_fn_;
};

class Conv1dOverlapAdd : public Variant {
 public:
  std::string name() const override { return "conv1d.overlap_add"; }
  std::string family() const override { return kConv1d; }
  std::string summary() const override {
    return "spatial overlap-add: disjoint input blocks of L - m + 1, overlapping output blocks of L accumulated by "
           "the K-step schedule (no two overlapping blocks in one launch) or by atomics";
  }
  int complexity() const override { return 4; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return tiled_space().add("schedule", "accumulation of overlapping outputs", {"k2", "k3", "k4", "atomic"});
  }
  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    const Conv1d p(prob);
    const Tile t = tile_of(prob, c);
    if (t.block_in() < 1)
      return Status::no("a block of " + std::to_string(t.out()) + " outputs holds no input block for m = " +
                        std::to_string(p.m) + " (needs threads * outputs_per_thread >= m)");
    const int k = spatial_steps_of(c);
    if (k > 0 && k < conv1d::kstep_min_k(t.block_in(), p.m))
      return Status::no(std::to_string(k) + " steps let overlapping blocks run together; this block length needs " +
                        std::to_string(conv1d::kstep_min_k(t.block_in(), p.m)));
    return tiled_fits(p, t, dev);
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv1d p(prob);
    const Tile t = tile_of(prob, c);
    const double blocks = std::ceil(double(p.n) / double(t.block_in()));
    // The seed's table: N reads; N (1 + (m-1)/L) writes, the overlapping part read back to be added.
    const double overlap = (blocks - 1) * double(p.m - 1);
    return {prob.direct_flops(), tiled_flops(t, blocks), prob.min_bytes(),
            4.0 * (double(p.n) + double(p.m) + blocks * double(t.out()) + overlap)};
  }
  Tolerance tolerance(const Problem& p, const Config&) const override { return direct_tolerance(p.at("m")); }
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override {
    return {tiled_program(tile_of(p, c))};
  }
  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache& jit) const override {
    return std::make_unique<OverlapAddPlan>(Conv1d(prob), jit.module(programs(prob, c).front()), tile_of(prob, c),
                                            spatial_steps_of(c));
  }
};

}  // namespace

CONVTUNE_REGISTER_VARIANT(Conv1dDirect);
CONVTUNE_REGISTER_VARIANT(Conv1dOverlapDiscard);
CONVTUNE_REGISTER_VARIANT(Conv1dOverlapAdd);

}  // namespace convtune
