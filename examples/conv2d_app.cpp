// What an application that ships a dispatch table does: pick this GPU's table and candidate, run the
// convolution, check sampled outputs against a float64 loop, and time it. Includes nothing of the harness.
// Usage: conv2d_app <dispatch.json> <h> <w> <r> [--tune]  (--tune: first-use tuning on a shape the table
// did not measure, docs/DISPATCH.md)
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "convtune_runtime.h"

namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "conv2d_app: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double reference_at(const std::vector<float>& img, const std::vector<float>& f, int h, int w, int r, int i, int j) {
  double acc = 0;
  for (int m = -r; m <= r; ++m)
    for (int n = -r; n <= r; ++n)
      if (i + m >= 0 && i + m < h && j + n >= 0 && j + n < w)
        acc += double(img[size_t(i + m) * w + j + n]) * double(f[size_t(m + r) * (2 * r + 1) + n + r]);
  return acc;
}

}  // namespace

int main(int argc, char** argv) {
  const bool tune = argc == 6 && std::string(argv[5]) == "--tune";
  if (argc != 5 && !tune) {
    std::fprintf(stderr, "usage: conv2d_app <dispatch.json> <h> <w> <r> [--tune]\n");
    return 2;
  }
  const int h = std::atoi(argv[2]), w = std::atoi(argv[3]), r = std::atoi(argv[4]);
  try {
    convtune_runtime::Conv2d conv(argv[1], h, w, r, tune);
    std::printf("table: %s\ncandidate: %s (%s)\n", conv.table().c_str(), conv.candidate().c_str(), conv.rule().c_str());
    const size_t pixels = size_t(h) * w, taps = size_t(2 * r + 1) * (2 * r + 1);
    std::vector<float> img(pixels), f(taps), out(pixels);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : img) x = u(rng);
    for (auto& x : f) x = u(rng);
    float *d_img, *d_f, *d_out;
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&d_img), pixels * 4), "cudaMalloc");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&d_f), taps * 4), "cudaMalloc");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&d_out), pixels * 4), "cudaMalloc");
    check_cuda(cudaMemcpy(d_img, img.data(), pixels * 4, cudaMemcpyHostToDevice), "copy in");
    check_cuda(cudaMemcpy(d_f, f.data(), taps * 4, cudaMemcpyHostToDevice), "copy in");
    conv.set_filter(d_f, nullptr);
    conv.run(d_img, d_out, nullptr);
    if (conv.rule() == "tuned") std::printf("tuned at the first run: %s\n", conv.candidate().c_str());
    check_cuda(cudaMemcpy(out.data(), d_out, pixels * 4, cudaMemcpyDeviceToHost), "copy out");
    // Sampled outputs, the corners (the zero ghost cells) included, against float64.
    double worst = 0, scale = 0;
    std::uniform_int_distribution<int> row(0, h - 1), col(0, w - 1);
    for (int k = 0; k < 2000; ++k) {
      const int i = k < 4 ? (k & 1) * (h - 1) : row(rng), j = k < 4 ? (k >> 1) * (w - 1) : col(rng);
      const double ref = reference_at(img, f, h, w, r, i, j), got = out[size_t(i) * w + j];
      if (!std::isfinite(got)) worst = INFINITY;
      worst = std::max(worst, std::abs(got - ref));
      scale = std::max(scale, std::abs(ref));
    }
    const double max_rel = worst / scale;
    cudaEvent_t start, stop;
    check_cuda(cudaEventCreate(&start), "event");
    check_cuda(cudaEventCreate(&stop), "event");
    const int reps = 20;
    check_cuda(cudaEventRecord(start), "event");
    for (int k = 0; k < reps; ++k) conv.run(d_img, d_out, nullptr);
    check_cuda(cudaEventRecord(stop), "event");
    check_cuda(cudaEventSynchronize(stop), "event");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "event");
    std::printf("sampled max_rel error %.2e (%s), %.4f ms per run (mean of %d, L2 warm)\n", max_rel,
                max_rel < 1e-3 ? "ok" : "WRONG", ms / reps, reps);
    return max_rel < 1e-3 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "conv2d_app: %s\n", e.what());
    return 1;
  }
}
