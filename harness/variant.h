// The variant interface: one strategy for one family, with its parameter space, constraints, cost
// model and a prepare step that returns a runnable plan. Modelled on CUTLASS's Operation.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.h"
#include "harness/jit.h"
#include "harness/params.h"
#include "harness/problem.h"

namespace convtune {

using json = nlohmann::json;

// Why a candidate cannot run: ok, or a reason that is recorded as "skipped: <reason>".
struct Status {
  bool ok = true;
  std::string reason;
  static Status yes() { return {}; }
  static Status no(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return ok; }
};

// Kernels on Hopper's warpgroup MMA (wgmma, the arch-specific target sm_90a) run on compute capability 9.0
// only: yes there, else the reason, naming this device's.
Status wgmma_supported(const DeviceInfo& dev);

// Math of a variant's "math" config key. "fp32": FMA on fp32 values. "3xtf32": tensor cores on the split
// a = a_big + a_small (three TF32 products), allowed under strict fp32 because the reference check holds it
// to the strict tolerance. "tf32": one TF32 product, which only a problem that allows it may choose.
inline constexpr const char* kMathFp32 = "fp32";
inline constexpr const char* kMath3xTf32 = "3xtf32";
inline constexpr const char* kMathTf32 = "tf32";
// Math by these names: math_name and math_from_name (harness/device.h).

struct Cost {
  double flops = 0;          // direct-equivalent: 2 * taps * outputs
  double flops_variant = 0;  // what this variant actually computes (differs for FFT, im2col...)
  double bytes_min = 0;      // each input read once, the output written once
  double bytes_model = 0;    // this variant's own modelled DRAM/L2 traffic (halo re-reads and so on)
  json to_json() const;
};

// Device pointers to a problem's operands, in Problem::operands() order (inputs, then the output).
struct Operands {
  std::vector<float*> data;
  float* output() const { return data.back(); }
};

class Plan {
 public:
  virtual ~Plan() = default;
  // Called after the inputs change and before run: weight preparation that an application does once
  // per filter (constant-memory upload, the filter's spectrum) happens here, outside the timed region.
  virtual void bind(const Operands& ops, cudaStream_t stream) = 0;
  // The timed operation. Must write every output element.
  virtual void run(cudaStream_t stream) = 0;
  virtual KernelAttributes attributes() const { return {}; }
  virtual size_t workspace_bytes() const { return 0; }
  // Facts about this run worth recording beside the timing, as the record's "details": the math a
  // library or kernel used ("fp32", "3xtf32", "tf32"), whether it is deterministic, the library's own
  // pick ("library_pick": true marks the config a library would choose by itself).
  virtual json details() const { return json::object(); }
};

class Variant {
 public:
  virtual ~Variant() = default;
  virtual std::string name() const = 0;  // "<family>.<strategy>"
  virtual std::string family() const = 0;  // a registered family's name
  virtual std::string summary() const = 0;
  virtual bool library() const { return false; }  // a library baseline (cuDNN, cuFFT)
  // The tunables for this problem on this device (the space may depend on both, e.g. radius limits).
  virtual ParamSpace space(const Problem& p, const DeviceInfo& dev) const = 0;
  virtual Status can_implement(const Problem& p, const Config& c, const DeviceInfo& dev) const = 0;
  // The config as it runs on this problem and device. A tunable may be a rule rather than a value (a split
  // count derived from a number of waves over the SMs, so that one config fits every shape): the variant adds
  // the values its rules give, and keeps those already there (resolving twice changes nothing). cost() and
  // programs() take a resolved config; can_implement() and prepare() resolve for themselves.
  virtual Config resolve(const Problem&, const Config& c, const DeviceInfo&) const { return c; }
  virtual Cost cost(const Problem& p, const Config& c) const = 0;
  // What the dispatch model may know of a config beyond its tunables (harness/dispatch_rules.h): integers
  // derived from it alone. One named after a family's model quantity is the config's tile along it (a GEMM
  // variant's CTA tile along gemm_m and gemm_n), from which the model counts tiles and waves on any shape.
  virtual std::vector<std::pair<std::string, int64_t>> model_traits(const Config&) const { return {}; }
  // The problem matters: the rounding of a long direct sum grows with its length.
  virtual Tolerance tolerance(const Problem&, const Config&) const { return kDirectFp32Tolerance; }
  // The NVRTC programs this config needs (CPU tests compile them all without a GPU).
  virtual std::vector<JitProgram> programs(const Problem&, const Config&) const { return {}; }
  virtual std::unique_ptr<Plan> prepare(const Problem& p, const Config& c, const DeviceInfo& dev,
                                        JitCache& jit) const = 0;
  // Lower is simpler / more general: the tie-break between candidates within noise of each other.
  virtual int complexity() const { return 5; }
  // The arithmetic this config's flops run on, whose ceiling its records are judged against (FP32 FMA unless
  // a variant says otherwise: tensor-core kernels, libraries allowed TF32).
  virtual Math math_of(const Config&) const { return Math::fp32_fma; }
};

class Registry {
 public:
  static Registry& instance();
  void add(std::unique_ptr<Variant> v);
  const Variant* find(const std::string& name) const;
  const Variant& get(const std::string& name) const;  // throws InputError listing the known names
  std::vector<const Variant*> all() const;
  std::vector<const Variant*> of_family(const std::string& family) const;
  // Names matching a glob ("conv2d.*", "*.cudnn"); throws InputError when nothing matches.
  std::vector<const Variant*> match(const std::string& pattern) const;
  std::string names_joined() const;

 private:
  std::vector<std::unique_ptr<Variant>> variants_;  // sorted by name
  std::map<std::string, const Variant*, std::less<>> by_name_;  // find() is on every dispatch lookup's path
};

bool glob_match(const std::string& pattern, const std::string& text);

// One line per variant: CONVTUNE_REGISTER_VARIANT(Conv2dNaive);
#define CONVTUNE_REGISTER_VARIANT(Type)                                   \
  static const bool convtune_registered_##Type = [] {                     \
    ::convtune::Registry::instance().add(std::make_unique<Type>());       \
    return true;                                                          \
  }()

}  // namespace convtune
