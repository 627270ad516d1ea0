// convtune._convtune: the Python binding of the runtime library (runtime/convtune_runtime.h), kept thin.
// Arrays, shapes, dtypes and streams are checked in Python (convtune/_arrays.py); here only pointers and
// stream handles cross, so that a call costs a few hundred nanoseconds over the C++ one
// (`python -m convtune.bench --overhead` measures it against issue_loop, the same calls made here).
#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "convtune_runtime.h"

namespace nb = nanobind;
using convtune_runtime::Convolution;

namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Makes `device` current for a scope and restores the caller's: Python frameworks keep their own notion
// of the current device, and a Convolution runs on the device it was made on.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceScope() {
    int now = previous_;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

// A Convolution and the device it belongs to.
struct BoundConvolution {
  int device;
  std::unique_ptr<Convolution> conv;

  BoundConvolution(const std::string& table, const std::string& family, const std::map<std::string, int64_t>& dims,
                   int device_, bool tune_unseen, const std::string& first_choice)
      : device(device_) {
    DeviceScope scope(device);
    conv = first_choice.empty()
               ? std::make_unique<Convolution>(table, family, dims, tune_unseen)
               : std::make_unique<Convolution>(table, family, dims, convtune_runtime::FirstChoice{first_choice});
  }

  // Binds every operand and runs, asynchronously on `stream` (a cudaStream_t as an integer).
  void bind_run(const std::vector<uintptr_t>& inputs, uintptr_t output, uintptr_t stream) {
    const std::vector<const float*> in = pointers(inputs);
    const auto s = reinterpret_cast<cudaStream_t>(stream);
    nb::gil_scoped_release unlocked;
    DeviceScope scope(device);
    conv->bind(in, reinterpret_cast<float*>(output), s);
    conv->run(s);
  }

  // The C++ side of `python -m convtune.bench --overhead`: what an application of the runtime library does
  // for n calls (bind then run, or with rebind false one bind then n runs), timed on the host from the first
  // call until the last is issued, without waiting for the GPU. Returns seconds.
  double issue_loop(const std::vector<uintptr_t>& inputs, uintptr_t output, uintptr_t stream, int64_t n,
                    bool rebind) {
    if (n < 1) throw std::invalid_argument("n: " + std::to_string(n) + "; allowed: 1 or more calls");
    const std::vector<const float*> in = pointers(inputs);
    const auto s = reinterpret_cast<cudaStream_t>(stream);
    float* out = reinterpret_cast<float*>(output);
    nb::gil_scoped_release unlocked;
    DeviceScope scope(device);  // an application's device is current already: outside the timed loop
    if (!rebind) conv->bind(in, out, s);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; ++i) {
      if (rebind) conv->bind(in, out, s);
      conv->run(s);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  static std::vector<const float*> pointers(const std::vector<uintptr_t>& inputs) {
    std::vector<const float*> in;
    in.reserve(inputs.size());
    for (uintptr_t p : inputs) in.push_back(reinterpret_cast<const float*>(p));
    return in;
  }

  std::vector<std::pair<std::string, int64_t>> operands() const {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& o : conv->operands()) out.emplace_back(o.name, o.elements);
    return out;
  }
};

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or no GPU: not an error to keep
    return 0;
  }
  return n;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  return prop.name;
}

// Waits for a stream's work (JAX hands over no stream: its calls run on the legacy stream, then wait).
void synchronize(int device, uintptr_t stream) {
  nb::gil_scoped_release unlocked;
  DeviceScope scope(device);
  check_cuda(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

}  // namespace

NB_MODULE(_convtune, m) {
  m.doc() = "convtune's runtime library: the dispatch table's candidate for a problem of any family";
  nb::class_<BoundConvolution>(m, "Convolution")
      .def(nb::init<const std::string&, const std::string&, const std::map<std::string, int64_t>&, int, bool,
                    const std::string&>(),
           nb::arg("table"), nb::arg("family"), nb::arg("dims"), nb::arg("device"), nb::arg("tune_unseen") = false,
           nb::arg("first_choice") = "")
      .def("bind_run", &BoundConvolution::bind_run, nb::arg("inputs"), nb::arg("output"), nb::arg("stream"))
      .def("issue_loop", &BoundConvolution::issue_loop, nb::arg("inputs"), nb::arg("output"), nb::arg("stream"),
           nb::arg("n"), nb::arg("rebind") = true)
      .def_prop_ro("device", [](const BoundConvolution& b) { return b.device; })
      .def_prop_ro("family", [](const BoundConvolution& b) { return b.conv->family(); })
      .def_prop_ro("dims", [](const BoundConvolution& b) { return b.conv->dims(); })
      .def_prop_ro("operands", &BoundConvolution::operands)
      .def_prop_ro("candidate", [](const BoundConvolution& b) { return b.conv->candidate(); })
      .def_prop_ro("choice", [](const BoundConvolution& b) { return b.conv->choice(); })
      .def_prop_ro("rule", [](const BoundConvolution& b) { return b.conv->rule(); })
      .def_prop_ro("table", [](const BoundConvolution& b) { return b.conv->table(); });
  m.def("validate_problem", &convtune_runtime::validate_problem, nb::arg("family"), nb::arg("dims"));
  m.def("available_variants", &convtune_runtime::available_variants);
  m.def("device_count", &device_count);
  m.def("device_name", &device_name, nb::arg("device"));
  m.def("synchronize", &synchronize, nb::arg("device"), nb::arg("stream"));
}
