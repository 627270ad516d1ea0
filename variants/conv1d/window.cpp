// conv1d.window: overlap-discard for short filters (m <= 64), each thread a sliding window over its P consecutive
// outputs, so that shared-memory reads fall from one per multiply-add to about (P + m - 1) / P per output.
#include "variants/conv1d/jit_conv1d.h"

namespace convtune {
namespace {

constexpr int64_t kMaxWindowTaps = 64;  // the unrolled window: P * m multiply-adds of straight-line code

struct WindowTile {
  int threads, per_thread;
  int64_t m;
  bool async;
  int64_t out() const { return int64_t(threads) * per_thread; }
  int64_t in() const { return out() + m - 1; }
  int64_t smem() const { return 4 * (in() + 8); }  // + the aligned span of cp.async staging
};

WindowTile window_tile_of(const Problem& p, const Config& c) {
  return {cfg_int(c, "threads"), cfg_int(c, "outputs_per_thread"), p.at("m"), c.at("staging") == "async"};
}

class WindowPlan : public Conv1dKernelPlan {
 public:
  WindowPlan(const Conv1d& p, std::shared_ptr<Module> m, const WindowTile& t)
      : Conv1dKernelPlan(p, std::move(m), p.m, true), t_(t) {
    fn_ = module_->function("conv1d_window");
    attrs_ = kernel_attributes(fn_, t.threads, int(t.smem()));
  }
  void run(cudaStream_t s) override {
    long long n = p_.n, outputs = p_.outputs(), shift = p_.full ? -(p_.m - 1) : 0;
    void* args[] = {&x_, &y_, &n, &outputs, &shift};
    launch(fn_, dim3(unsigned(ceil_div(outputs, t_.out()))), dim3(t_.threads), unsigned(t_.smem()), s, args);
  }

 private:
  WindowTile t_;
  CUfunction fn_;
};

class Conv1dWindow : public Variant {
 public:
  std::string name() const override { return "conv1d.window"; }
  std::string family() const override { return kConv1d; }
  std::string summary() const override {
    return "overlap-discard for short filters (m <= 64): a block stages its inputs in shared memory, each thread "
           "slides a window over outputs_per_thread consecutive outputs (odd: conflict-free), outputs staged back "
           "for coalesced stores";
  }
  int complexity() const override { return 3; }
  ParamSpace space(const Problem&, const DeviceInfo&) const override {
    return ParamSpace()
        .add("threads", "threads per block", int_values({128, 256}))
        .add("outputs_per_thread", "consecutive outputs per thread (odd, so that a warp's reads hit 32 banks)",
             int_values({7, 11, 15, 23, 31}))
        .add("staging", "inputs into shared memory through registers, or by cp.async (sm_80+: each thread's copies "
             "all in flight at once)", {"registers", "async"}, "registers");
  }
  Status can_implement(const Problem& prob, const Config& c, const DeviceInfo& dev) const override {
    const Conv1d p(prob);
    const WindowTile t = window_tile_of(prob, c);
    if (p.m > kMaxWindowTaps)
      return Status::no("m = " + std::to_string(p.m) + " > " + std::to_string(kMaxWindowTaps) +
                        " (the window is unrolled: the tiled and FFT variants take longer filters)");
    if (t.per_thread < 1 || t.per_thread % 2 == 0)
      return Status::no("outputs_per_thread " + std::to_string(t.per_thread) + " must be odd (bank conflicts)");
    if (t.async && dev.cc_major < 8) return Status::no("staging async needs cp.async (sm_80 or newer)");
    if (t.threads > dev.max_threads_per_block) return Status::no("more threads than the device allows");
    if (ceil_div(p.outputs(), t.out()) > INT32_MAX) return Status::no("more than 2^31 blocks");
    if (Status s = shared_memory_fits(t.smem(), dev); !s) return s;
    return spatial_work_fits(p);
  }
  Cost cost(const Problem& prob, const Config& c) const override {
    const Conv1d p(prob);
    const WindowTile t = window_tile_of(prob, c);
    const double blocks = std::ceil(double(p.outputs()) / double(t.out()));
    // Each block reads its outputs' span plus the m - 1 halo once and writes its outputs; plus the filter.
    return {prob.direct_flops(), 2.0 * blocks * double(t.out()) * double(p.m), prob.min_bytes(),
            4.0 * (blocks * double(t.in()) + double(p.m) + double(p.outputs()))};
  }
  Tolerance tolerance(const Problem& p, const Config&) const override { return direct_tolerance(p.at("m")); }
  std::vector<JitProgram> programs(const Problem& p, const Config& c) const override {
    const WindowTile t = window_tile_of(p, c);
    return {{"conv1d_window.cuh", {define("M", t.m), define("THREADS", t.threads), define("P", t.per_thread),
                                     define("ASYNC", t.async)}}};
  }
  std::unique_ptr<Plan> prepare(const Problem& prob, const Config& c, const DeviceInfo&, JitCache& jit) const override {
    return std::make_unique<WindowPlan>(Conv1d(prob), jit.module(programs(prob, c).front()), window_tile_of(prob, c));
  }
};

CONVTUNE_REGISTER_VARIANT(Conv1dWindow);

}  // namespace
}  // namespace convtune
