// An application's use of an export: the generated header for lookups, the runtime library to run
// the chosen candidate. It includes nothing of the harness. Usage: export_app <dispatch.json>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "convtune_dispatch.h"
#include "convtune_runtime.h"

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

void print_choice(const char* family, const int64_t* dims, const convtune_dispatch::Choice& c) {
  std::printf("select(%s %lld %lld %lld): %s -> %s (", family, static_cast<long long>(dims[0]),
              static_cast<long long>(dims[1]), static_cast<long long>(dims[2]), c.rule,
              c.entry ? c.entry->variant : "-");
  for (int i = 0; c.entry && i < c.entry->param_count; ++i) {
    const auto& p = c.entry->params[i];
    if (p.str_value)
      std::printf("%s%s=%s", i ? "," : "", p.name, p.str_value);
    else
      std::printf("%s%s=%lld", i ? "," : "", p.name, static_cast<long long>(p.int_value));
  }
  std::printf(")\n");
}

// The generic API refuses a bad problem before it needs a GPU, with an error naming the field.
void check_refused(const std::string& dispatch, const std::string& family, const std::map<std::string, int64_t>& dims,
                   const std::string& names) {
  try {
    convtune_runtime::Convolution c(dispatch, family, dims);
    check(false, family + ": a bad problem is refused (" + names + ")");
  } catch (const std::runtime_error& e) {
    std::printf("refused: %s\n", e.what());
    check(std::string(e.what()).find(names) != std::string::npos, "the error names " + names);
  }
}

// The conv1d family's valid mode (variants/conv1d/conv1d.h): y[i] = sum_j x[i - j] h[j] for i in [m - 1, n).
std::vector<double> conv1d_valid(const std::vector<float>& x, const std::vector<float>& h) {
  const size_t n = x.size(), m = h.size();
  std::vector<double> y(n - m + 1);
  for (size_t i = m - 1; i < n; ++i) {
    double s = 0;
    for (size_t j = 0; j < m; ++j) s += double(x[i - j]) * double(h[j]);
    y[i - (m - 1)] = s;
  }
  return y;
}

// A layer_fwd problem (variants/layer_fwd/layer_fwd.h): n c h w k r s, pad 1, stride 1, bias, ReLU.
struct Layer {
  int64_t n = 2, c = 3, h = 19, w = 23, k = 5, r = 3, s = 3, pad = 1;
  int64_t p() const { return h + 2 * pad - r + 1; }
  int64_t q() const { return w + 2 * pad - s + 1; }
  std::map<std::string, int64_t> dims(int64_t precision) const {
    return {{"n", n}, {"c", c}, {"h", h}, {"w", w}, {"k", k}, {"r", r}, {"s", s}, {"pad_h", pad},
            {"pad_w", pad}, {"u", 1}, {"v", 1}, {"bias", 1}, {"relu", 1}, {"precision", precision}};
  }
};

// y = relu(x correlated with the filter + bias), in double.
std::vector<double> layer_forward(const Layer& l, const std::vector<float>& x, const std::vector<float>& f,
                                  const std::vector<float>& bias) {
  std::vector<double> y;
  for (int64_t ni = 0; ni < l.n; ++ni)
    for (int64_t ki = 0; ki < l.k; ++ki)
      for (int64_t pi = 0; pi < l.p(); ++pi)
        for (int64_t qi = 0; qi < l.q(); ++qi) {
          double acc = bias[size_t(ki)];
          for (int64_t ci = 0; ci < l.c; ++ci)
            for (int64_t i = 0; i < l.r; ++i)
              for (int64_t j = 0; j < l.s; ++j) {
                const int64_t yi = pi - l.pad + i, xi = qi - l.pad + j;
                if (yi < 0 || yi >= l.h || xi < 0 || xi >= l.w) continue;
                acc += double(x[size_t(((ni * l.c + ci) * l.h + yi) * l.w + xi)]) *
                       double(f[size_t(((ki * l.c + ci) * l.r + i) * l.s + j)]);
              }
          y.push_back(acc < 0 ? 0.0 : acc);
        }
  return y;
}

// The largest |y - ref| of `conv` run on host inputs, relative to max |ref|; NaN when it wrote nothing.
double layer_error(convtune_runtime::Convolution& conv, const std::vector<std::vector<float>>& inputs,
                   const std::vector<double>& ref, cudaStream_t s) {
  std::vector<float*> d_in;
  for (const auto& in : inputs) {
    float* d = nullptr;
    cudaMalloc(&d, in.size() * sizeof(float));
    cudaMemcpy(d, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice);
    d_in.push_back(d);
  }
  float* d_y = nullptr;
  cudaMalloc(&d_y, ref.size() * sizeof(float));
  cudaMemset(d_y, 0xff, ref.size() * sizeof(float));  // NaN
  conv.bind(std::vector<const float*>(d_in.begin(), d_in.end()), d_y, s);
  conv.run(s);
  std::vector<float> y(ref.size());
  cudaStreamSynchronize(s);
  cudaMemcpy(y.data(), d_y, y.size() * sizeof(float), cudaMemcpyDeviceToHost);
  for (float* d : d_in) cudaFree(d);
  cudaFree(d_y);
  double err = 0, top = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double e = std::fabs(double(y[i]) - ref[i]);
    if (!(e <= err)) err = e;  // NaN sticks
    top = std::fmax(top, std::fabs(ref[i]));
  }
  return err / top;
}

// A table measured where TF32 was allowed: its entry (precision 1) and its default (TF32 math) must never
// serve a strict problem. The strict problem falls through to the simplest variant; the TF32 one runs its
// entry. Both through the generic runtime, against the CPU float64 layer.
void check_layer_runtime(std::mt19937& rng, cudaStream_t s) {
  const Layer l;
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> inputs = {std::vector<float>(size_t(l.n * l.c * l.h * l.w)),
                                            std::vector<float>(size_t(l.k * l.c * l.r * l.s)),
                                            std::vector<float>(size_t(l.k))};
  for (auto& in : inputs)
    for (auto& v : in) v = dist(rng);
  const std::vector<double> ref = layer_forward(l, inputs[0], inputs[1], inputs[2]);
  const auto table = std::filesystem::temp_directory_path() / "export_app_layer_table.json";
  const std::string tf32 = R"({"variant": "layer_fwd.implicit_gemm", "config": {"math": "tf32", "tile": "64x64x16", "stages": 2}})";
  std::string problem = R"({"family": "layer_fwd")";
  for (const auto& [name, value] : l.dims(1)) problem += ", \"" + name + "\": " + std::to_string(value);
  std::ofstream(table) << R"({"schema": 1, "entries": [{"family": "layer_fwd", "problem": )" << problem
                       << "}, " << tf32.substr(1) << R"(], "fallback": {"defaults": {"layer_fwd": )" << tf32 << "}}}";

  convtune_runtime::Convolution strict(table.string(), "layer_fwd", l.dims(0));
  std::printf("runtime layer_fwd strict: %s (%s)\n", strict.candidate().c_str(), strict.rule().c_str());
  check(strict.rule() == "simplest" && strict.candidate().rfind("layer_fwd.direct_tiled[", 0) == 0,
        "a strict-fp32 layer takes neither the TF32 entry nor the TF32 default");
  const double strict_error = layer_error(strict, inputs, ref, s);
  std::printf("  max error %.3g of max |ref|\n", strict_error);
  check(strict_error <= 1e-5, strict.candidate() + ": matches the CPU float64 layer (fp32)");

  convtune_runtime::Convolution allowed(table.string(), "layer_fwd", l.dims(1));
  std::printf("runtime layer_fwd tf32: %s (%s)\n", allowed.candidate().c_str(), allowed.rule().c_str());
  check(allowed.rule() == "exact" && allowed.candidate().find("math=tf32") != std::string::npos,
        "a TF32-allowed layer takes its exact entry");
  const double tf32_error = layer_error(allowed, inputs, ref, s);
  std::printf("  max error %.3g of max |ref|\n", tf32_error);
  check(tf32_error <= 3e-2, allowed.candidate() + ": matches the CPU float64 layer (TF32 tolerance)");
  std::filesystem::remove(table);
}

#define CUDA_OK(call)                                                                     \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::printf("FAIL: %s: %s\n", #call, cudaGetErrorString(e_));                       \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::printf("usage: export_app <dispatch.json>\n");
    return 2;
  }
  const std::string dispatch = argv[1];
  const int h = 67, w = 45, r = 2;

  // The header alone: the fixture has conv2d h = w in {1024, 4096}, r in {1, 3, 7}; conv1d n = 2^20, m = 63 valid.
  std::printf("dispatch table for %s (%s): %d entries\n", convtune_dispatch::kDevice, convtune_dispatch::kArch,
              convtune_dispatch::kEntryCount);
  const int64_t exact[3] = {4096, 4096, 3}, small[3] = {h, w, r}, wide[3] = {3000, 5000, 7};
  const auto c_exact = convtune_dispatch::select("conv2d", exact, 3);
  const auto c_small = convtune_dispatch::select("conv2d", small, 3);
  const auto c_wide = convtune_dispatch::select("conv2d", wide, 3);
  print_choice("conv2d", exact, c_exact);
  print_choice("conv2d", small, c_small);
  print_choice("conv2d", wide, c_wide);
  check(std::strcmp(c_exact.rule, "exact") == 0 && c_exact.entry->dims[2] == 3, "exact match");
  check(std::strcmp(c_small.rule, "nearest") == 0 && c_small.entry->dims[2] == 3, "r=2 takes the nearest radius (3)");
  check(std::strcmp(c_wide.rule, "nearest") == 0 && c_wide.entry->dims[2] == 7, "r=7 stays r=7");
  const int64_t n1 = 10007, m1 = 63, sig[3] = {n1, m1, 0};  // conv1d: n, m, mode (0: valid)
  const auto c_sig = convtune_dispatch::select("conv1d", sig, 3);
  print_choice("conv1d", sig, c_sig);
  check(std::strcmp(c_sig.rule, "nearest") == 0 && c_sig.entry->dims[1] == m1, "conv1d: nearest with the same m");
  const int64_t parts[4] = {100, 100, 0, 199};
  check(std::strcmp(convtune_dispatch::select("conv1d_parts", parts, 4).rule, "none") == 0, "unknown family: none");

  // The generic runtime checks the problem first (no GPU needed).
  check_refused(dispatch, "conv1d", {{"n", n1}, {"m", 0}}, "problem.m");
  check_refused(dispatch, "conv1d", {{"n", 10}, {"m", 11}, {"mode", 0}}, "problem.m");
  check_refused(dispatch, "conv1d", {{"n", n1}, {"m", m1}, {"k", 3}}, "problem.k");
  check_refused(dispatch, "conv1d", {{"m", m1}}, "problem.n");
  check_refused(dispatch, "conv3d", {{"n", n1}}, "allowed: ");  // names the registered families
  // A family the table does not cover: without a GPU the error names those it does; with one, the family's
  // simplest kernel runs.
  int devices = 0;
  const bool have_gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  if (!have_gpu) check_refused(dispatch, "conv1d_parts", {{"n", 100}, {"m", 100}, {"start", 0}, {"end", 199}}, "covers: ");
  if (have_gpu) {
    convtune_runtime::Convolution parts(dispatch, "conv1d_parts", {{"n", 100}, {"m", 100}, {"start", 0}, {"end", 199}});
    check(parts.rule() == "simplest", "a family the table does not cover: its simplest kernel (" + parts.rule() + ")");
  }

  // The runtime reads a table file once a process, but again once the file changes: a table rewritten as
  // broken JSON is refused, not served from what was read before.
  {
    const auto copy = std::filesystem::temp_directory_path() / "export_app_reread.json";
    std::filesystem::copy_file(dispatch, copy, std::filesystem::copy_options::overwrite_existing);
    const std::map<std::string, int64_t> dims = {{"n", 100}, {"m", 100}, {"start", 0}, {"end", 199}};
    try {
      convtune_runtime::Convolution first(copy.string(), "conv1d_parts", dims);
    } catch (const std::runtime_error&) {  // no GPU: refused after the table was read
    }
    std::ofstream(copy) << "{ \"entries\": [";
    try {
      convtune_runtime::Convolution second(copy.string(), "conv1d_parts", dims);
      check(false, "a table rewritten as broken JSON is read again and refused");
    } catch (const std::runtime_error& e) {
      check(std::string(e.what()).find("not valid JSON") != std::string::npos,
            std::string("a table rewritten as broken JSON is read again: ") + e.what());
    }
    std::filesystem::remove(copy);
  }

  // A bad CONVTUNE_TUNE_TOP is an error naming it, with or without a GPU (never a silent fallback).
  setenv("CONVTUNE_TUNE_TOP", "0", 1);
  check_refused(dispatch, "conv1d", {{"n", n1}, {"m", m1}}, "CONVTUNE_TUNE_TOP: '0'");
  unsetenv("CONVTUNE_TUNE_TOP");

  // The static library must bring every variant (linked whole): as many as the sources register (counted
  // by CMake), among them every variant the table may choose.
  const auto variants = convtune_runtime::available_variants();
  std::printf("runtime: %zu variants\n", variants.size());
  check(variants.size() == CONVTUNE_REGISTERED_VARIANTS,
        "all " + std::to_string(CONVTUNE_REGISTERED_VARIANTS) + " variants registered (link convtune_runtime whole)");
  for (const char* chosen : {"conv1d.overlap_discard", "conv2d.constant", "conv2d.cudnn", "conv2d.register_tiled"})
    check(std::find(variants.begin(), variants.end(), chosen) != variants.end(),
          std::string(chosen) + " (named by the fixture table) is available");

  if (!have_gpu) {
    std::printf("no GPU: lookups and refusals only\n");
    return failures ? 1 : 0;
  }

  // The runtime on a small image, against a CPU loop.
  const int fw = 2 * r + 1;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> in(size_t(h) * w), filter(size_t(fw) * fw), out(in.size()), ref(in.size());
  for (auto& v : in) v = dist(rng);
  for (auto& v : filter) v = dist(rng);
  double max_ref = 0;
  for (int i = 0; i < h; ++i)
    for (int j = 0; j < w; ++j) {
      double s = 0;
      for (int m = -r; m <= r; ++m)
        for (int n = -r; n <= r; ++n)
          if (i + m >= 0 && i + m < h && j + n >= 0 && j + n < w)
            s += double(in[size_t(i + m) * w + (j + n)]) * filter[size_t(m + r) * fw + (n + r)];
      ref[size_t(i) * w + j] = float(s);
      max_ref = std::fmax(max_ref, std::fabs(s));
    }

  float *d_in = nullptr, *d_filter = nullptr, *d_out = nullptr, *d_out2 = nullptr;
  CUDA_OK(cudaMalloc(&d_in, in.size() * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_filter, filter.size() * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_out, out.size() * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_out2, out.size() * sizeof(float)));
  CUDA_OK(cudaMemcpy(d_in, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_filter, filter.data(), filter.size() * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreate(&s));

  // Runs twice into one output (no rebind), then into another (rebinds), and checks both.
  auto verify = [&](convtune_runtime::Conv2d& conv, double tol) {
    std::printf("runtime: %s (%s)\n", conv.candidate().c_str(), conv.rule().c_str());
    cudaMemsetAsync(d_out, 0xff, out.size() * sizeof(float), s);  // NaN: a run that writes nothing fails
    cudaMemsetAsync(d_out2, 0xff, out.size() * sizeof(float), s);
    conv.set_filter(d_filter, s);
    conv.run(d_in, d_out, s);
    conv.run(d_in, d_out, s);
    conv.run(d_in, d_out2, s);
    for (float* d : {d_out, d_out2}) {
      if (cudaStreamSynchronize(s) != cudaSuccess ||
          cudaMemcpy(out.data(), d, out.size() * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
        check(false, "CUDA error");
        return;
      }
      double max_err = 0;
      for (size_t k = 0; k < out.size(); ++k) {
        const double e = std::fabs(double(out[k]) - ref[k]);
        if (!(e <= max_err)) max_err = e;  // NaN sticks
      }
      std::printf("  max error %.3g (max |ref| %.3g)\n", max_err, max_ref);
      check(max_err <= tol * max_ref, conv.candidate() + ": result matches the CPU loop");
    }
  };

  convtune_runtime::Conv2d conv(dispatch, h, w, r);
  check(conv.rule() == c_small.rule, "runtime and header agree on the rule");
  check(conv.candidate() == c_small.entry->candidate, "runtime and header agree on the candidate");
  verify(conv, 1e-4);

  // Tables of one exact entry (library variants too), whose default is conv2d.constant: an entry that
  // cannot run here (an unknown cuDNN algo) gives way to the default.
  const auto table = std::filesystem::temp_directory_path() / "export_app_table.json";
  const char* cases[][3] = {{"conv2d.fft", R"({"size_policy": "smooth"})", "exact"},
                            {"conv2d.cudnn", R"({"algo": "implicit_precomp_gemm"})", "exact"},
                            {"conv2d.cudnn", R"({"algo": "no_such_algo"})", "default"}};
  for (const auto& c : cases) {
    std::ofstream(table) << R"({"schema": 1, "entries": [{"family": "conv2d", "problem": {"family": "conv2d", "h": )"
                         << h << R"(, "w": )" << w << R"(, "r": )" << r << R"(}, "variant": ")" << c[0]
                         << R"(", "config": )" << c[1] << R"(}], "fallback": {"defaults": {"conv2d": {"variant":
                         "conv2d.constant", "config": {"block_x": 32, "block_y": 8}}}}})";
    convtune_runtime::Conv2d t(table.string(), h, w, r);
    check(t.rule() == c[2], std::string(c[0]) + c[1] + ": rule " + t.rule());
    verify(t, 1e-3);
  }
  // tune_unseen: a table that measured only a larger image. Its choice, its alternates and a candidate
  // that cannot run here (an unknown cuDNN algo) make the shortlist; the first run times those that can
  // and keeps one, which must still compute the right result.
  std::ofstream(table) << R"({"schema": 1, "entries": [{"family": "conv2d", "problem": {"family": "conv2d", "h": )"
                       << 4 * h << R"(, "w": )" << 4 * w << R"(, "r": )" << r << R"(}, "variant": "conv2d.naive",
                       "config": {"block_x": 32, "block_y": 8}, "alternates": [
                       {"variant": "conv2d.constant", "config": {"block_x": 32, "block_y": 8}},
                       {"variant": "conv2d.cudnn", "config": {"algo": "no_such_algo"}},
                       {"variant": "conv2d.constant", "config": {"block_x": 16, "block_y": 4}},
                       {"variant": "conv2d.constant", "config": {"block_x": 64, "block_y": 4}}]}],
                       "fallback": {"defaults": {}}})";
  convtune_runtime::Conv2d tuned(table.string(), h, w, r, true);
  check(tuned.rule() == "nearest" && tuned.candidate() == "conv2d.naive[block_x=32,block_y=8]",
        "tune_unseen: the nearest entry's choice before the first run, got " + tuned.candidate());
  verify(tuned, 1e-3);
  check(tuned.rule() == "tuned", "tune_unseen: rule tuned after the first run, got " + tuned.rule());
  // The shortlist takes an entry's choice and its first kShortlistPerEntry - 1 = 3 alternates: never the fourth.
  check(tuned.candidate() == "conv2d.naive[block_x=32,block_y=8]" ||
            tuned.candidate() == "conv2d.constant[block_x=32,block_y=8]" ||
            tuned.candidate() == "conv2d.constant[block_x=16,block_y=4]",
        "tune_unseen keeps a shortlisted candidate, got " + tuned.candidate());
  convtune_runtime::Conv2d untuned(table.string(), h, w, r);
  verify(untuned, 1e-3);
  check(untuned.rule() == "nearest", "without tune_unseen the nearest rule stays, got " + untuned.rule());
  std::filesystem::remove(table);

  // r = 20 is past every direct kernel's limit: the rules pass over the entries that cannot run it and take
  // one that can (the fixture's cuDNN entry), never a choice that fails.
  {
    convtune_runtime::Conv2d wide_r(dispatch, 256, 256, 20);
    check(wide_r.candidate().rfind("conv2d.cudnn[", 0) == 0, "r=20 takes the table's entry that can run it, got " +
                                                                 wide_r.candidate());
  }
  // When nothing can run (a table of one direct kernel, r = 20: past it and the simplest kernel), a clear error.
  const auto direct_only = std::filesystem::temp_directory_path() / "export_app_direct_only.json";
  std::ofstream(direct_only) << R"({"schema": 1, "entries": [{"family": "conv2d", "problem": {"family": "conv2d", "h": 256,
                                 "w": 256, "r": 3}, "variant": "conv2d.constant", "config": {"block_x": 32, "block_y": 8}}]})";
  try {
    convtune_runtime::Conv2d none(direct_only.string(), 256, 256, 20);
    check(false, "r=20 on a direct-only table throws, got " + none.candidate());
  } catch (const std::runtime_error& e) {
    std::printf("r=20: %s\n", e.what());
    check(std::string(e.what()).find("cannot run") != std::string::npos, "the error says what cannot run");
  }
  std::filesystem::remove(direct_only);

  // conv1d through the generic API: operands in the family's order (signal, filter), then the output.
  {
    std::vector<float> x(n1), taps(m1);
    for (auto& v : x) v = dist(rng);
    for (auto& v : taps) v = dist(rng);
    const std::vector<double> y_ref = conv1d_valid(x, taps);
    double y_max = 0;
    for (double v : y_ref) y_max = std::fmax(y_max, std::fabs(v));
    float *d_x = nullptr, *d_h = nullptr, *d_y = nullptr, *d_y2 = nullptr;
    const size_t y_bytes = y_ref.size() * sizeof(float);
    CUDA_OK(cudaMalloc(&d_x, x.size() * sizeof(float)));
    CUDA_OK(cudaMalloc(&d_h, taps.size() * sizeof(float)));
    CUDA_OK(cudaMalloc(&d_y, y_bytes));
    CUDA_OK(cudaMalloc(&d_y2, y_bytes));
    CUDA_OK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_h, taps.data(), taps.size() * sizeof(float), cudaMemcpyHostToDevice));

    // Binds, runs twice, rebinds to another output, runs, and checks both outputs.
    auto verify1d = [&](convtune_runtime::Convolution& conv) {
      std::printf("runtime conv1d: %s (%s)\n", conv.candidate().c_str(), conv.rule().c_str());
      const auto& ops = conv.operands();
      check(ops.size() == 3 && ops[0].elements == n1 && ops[1].elements == m1 &&
                ops.back().elements == int64_t(y_ref.size()),
            "conv1d operands: signal n, filter m, output n - m + 1");
      try {
        conv.run(s);
        check(false, "run before bind throws");
      } catch (const std::runtime_error&) {
      }
      try {
        conv.bind({d_x}, d_y, s);
        check(false, "bind with a missing input throws");
      } catch (const std::runtime_error& e) {
        std::printf("  %s\n", e.what());
      }
      cudaMemsetAsync(d_y, 0xff, y_bytes, s);  // NaN: a run that writes nothing fails
      cudaMemsetAsync(d_y2, 0xff, y_bytes, s);
      conv.bind({d_x, d_h}, d_y, s);
      conv.run(s);
      conv.run(s);
      conv.bind({d_x, d_h}, d_y2, s);
      conv.run(s);
      std::vector<float> y(y_ref.size());
      for (float* d : {d_y, d_y2}) {
        if (cudaStreamSynchronize(s) != cudaSuccess ||
            cudaMemcpy(y.data(), d, y_bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
          check(false, "CUDA error");
          return;
        }
        double max_err = 0;
        for (size_t k = 0; k < y.size(); ++k) {
          const double e = std::fabs(double(y[k]) - y_ref[k]);
          if (!(e <= max_err)) max_err = e;  // NaN sticks
        }
        std::printf("  max error %.3g (max |ref| %.3g)\n", max_err, y_max);
        check(max_err <= 1e-4 * y_max, conv.candidate() + ": result matches the CPU float64 convolution");
      }
    };

    convtune_runtime::Convolution conv1d(dispatch, "conv1d", {{"n", n1}, {"m", m1}, {"mode", 0}});
    check(conv1d.rule() == c_sig.rule && conv1d.candidate() == c_sig.entry->candidate,
          "conv1d: runtime and header agree");
    verify1d(conv1d);

    // A table whose choice cannot run (a parameter this variant does not have) and no default for the
    // family: the family's simplest non-library variant runs instead.
    std::ofstream(table) << R"({"schema": 1, "entries": [{"family": "conv1d", "problem": {"family": "conv1d", "n": )"
                         << n1 << R"(, "m": )" << m1 << R"(, "mode": 0}, "variant": "conv1d.overlap_discard",
                         "config": {"threads": 128, "outputs_per_thread": 8, "tap_group": 4, "no_such_param": 1}}],
                         "fallback": {}})";
    convtune_runtime::Convolution simplest(table.string(), "conv1d", {{"n", n1}, {"m", m1}, {"mode", 0}});
    check(simplest.rule() == "simplest" && simplest.candidate().rfind("conv1d.direct[", 0) == 0,
          "an unknown parameter falls back to the simplest variant: " + simplest.candidate());
    verify1d(simplest);
    std::filesystem::remove(table);

    cudaFree(d_x);
    cudaFree(d_h);
    cudaFree(d_y);
    cudaFree(d_y2);
  }

  check_layer_runtime(rng, s);

  cudaStreamDestroy(s);
  cudaFree(d_in);
  cudaFree(d_filter);
  cudaFree(d_out);
  cudaFree(d_out2);
  return failures ? 1 : 0;
}
