// The runtime library running a plug-in candidate that a dispatch table names (scripts/gpu_plugins.sh):
//   plugin_runtime_app <dispatch.json> <family> <dim>=<value>... --expect <candidate prefix>
// makes a convtune_runtime::Convolution, checks that it chose a candidate starting with the prefix, runs it on
// random inputs (the output poisoned with NaN) and compares with the family's float64 CPU reference.
// Prints one line; exit 0 when it matches, 1 otherwise, 2 for bad arguments.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "convtune_runtime.h"
#include "harness/family.h"
#include "harness/problem.h"

namespace {

bool check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "plugin_runtime_app: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

}  // namespace

int run(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: plugin_runtime_app <dispatch.json> <family> <dim>=<value>... --expect <prefix>\n");
    return 2;
  }
  std::map<std::string, int64_t> dims;
  std::string expect;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--expect" && i + 1 < argc) expect = argv[++i];
    else if (a.find('=') != std::string::npos) dims[a.substr(0, a.find('='))] = std::stoll(a.substr(a.find('=') + 1));
  }
  convtune_runtime::Convolution conv(argv[1], argv[2], dims);
  std::printf("%s: %s (%s)\n", argv[2], conv.candidate().c_str(), conv.rule().c_str());
  if (conv.candidate().rfind(expect, 0) != 0) {
    std::printf("plugin_runtime_app: expected a candidate starting with %s\n", expect.c_str());
    return 1;
  }
  convtune::Problem p{argv[2], conv.dims()};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<std::vector<float>> inputs;
  std::vector<float*> device;
  for (const auto& o : conv.operands()) {
    float* d = nullptr;
    if (!check(cudaMalloc(&d, size_t(o.elements) * sizeof(float)), "cudaMalloc")) return 1;
    device.push_back(d);
    if (&o == &conv.operands().back()) break;
    inputs.emplace_back(size_t(o.elements));
    for (auto& x : inputs.back()) x = u(rng);
    if (!check(cudaMemcpy(d, inputs.back().data(), inputs.back().size() * sizeof(float), cudaMemcpyHostToDevice), "copy in")) return 1;
  }
  const size_t n_out = size_t(conv.operands().back().elements);
  check(cudaMemset(device.back(), 0xff, n_out * sizeof(float)), "poison");  // NaN until written
  conv.bind(std::vector<const float*>(device.begin(), device.end() - 1), device.back(), nullptr);
  conv.run(nullptr);
  std::vector<float> out(n_out);
  if (!check(cudaMemcpy(out.data(), device.back(), n_out * sizeof(float), cudaMemcpyDeviceToHost), "copy out")) return 1;
  const std::vector<double> ref = convtune::cpu_reference(p, inputs);
  double num = 0, den = 0;
  for (size_t i = 0; i < n_out; ++i) num += (out[i] - ref[i]) * (out[i] - ref[i]), den += ref[i] * ref[i];
  const double rel = std::sqrt(num / den);
  const bool ok = std::isfinite(rel) && rel <= 1e-5;
  std::printf("plugin_runtime_app: rel_l2 %.3g against the float64 CPU reference: %s\n", rel, ok ? "ok" : "WRONG");
  for (float* d : device) cudaFree(d);
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plugin_runtime_app: %s\n", e.what());
    return 1;
  }
}
