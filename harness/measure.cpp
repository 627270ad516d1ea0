#include "harness/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "harness/error.h"
#include "harness/nvtx.h"

namespace convtune {

json MeasureOptions::to_json() const {
  return {{"cold", cold},
          {"warmup", warmup},
          {"min_samples", min_samples},
          {"max_samples", max_samples},
          {"max_rel_stderr", max_rel_stderr},
          {"time_cap_s", time_cap_s}};
}

MeasureOptions MeasureOptions::from_json(const json& j, const std::string& where) {
  MeasureOptions o;
  if (!j.is_object()) throw InputError(where + ": must be an object");
  const std::string allowed = "cold, warmup, min_samples, max_samples, max_rel_stderr, time_cap_s";
  for (const auto& [k, v] : j.items()) {
    if (k == "cold") {
      if (!v.is_boolean()) throw InputError(where + ".cold: must be true or false");
      o.cold = v.get<bool>();
    } else if (k == "warmup" || k == "min_samples" || k == "max_samples") {
      if (!v.is_number_integer() || v.get<int64_t>() < (k == "warmup" ? 0 : 1) || v.get<int64_t>() > 100000)
        throw InputError(where + "." + k + ": " + v.dump() + " is not allowed; allowed: an integer in " +
                         (k == "warmup" ? "0" : "1") + "..100000");
      (k == "warmup" ? o.warmup : k == "min_samples" ? o.min_samples : o.max_samples) = v.get<int>();
    } else if (k == "max_rel_stderr" || k == "time_cap_s") {
      const bool stderr_bound = k == "max_rel_stderr";  // a relative error: 1 is 100%
      if (!v.is_number() || v.get<double>() <= 0 || v.get<double>() > (stderr_bound ? 1 : 3600))
        throw InputError(where + "." + k + ": " + v.dump() + " is not allowed; allowed: a number in " +
                         (stderr_bound ? "(0, 1] (a fraction of the mean)" : "(0, 3600]"));
      (k == "max_rel_stderr" ? o.max_rel_stderr : o.time_cap_s) = v.get<double>();
    } else {
      throw InputError(where + "." + k + ": unknown option; allowed: " + allowed);
    }
  }
  if (o.max_samples < o.min_samples) throw InputError(where + ".max_samples: must be at least min_samples");
  return o;
}

json Timing::to_json() const {
  return {{"median_ms", median_ms}, {"min_ms", min_ms},         {"mean_ms", mean_ms}, {"stdev_ms", stdev_ms},
          {"samples", samples},     {"rel_stderr", rel_stderr}, {"converged", converged}};
}

Timing Timing::from_samples(std::vector<double> ms) {
  Timing t;
  t.samples = static_cast<int>(ms.size());
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  t.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  t.min_ms = ms.front();
  t.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / double(n);
  double var = 0;
  for (double x : ms) var += (x - t.mean_ms) * (x - t.mean_ms);
  t.stdev_ms = n > 1 ? std::sqrt(var / double(n - 1)) : 0;
  t.rel_stderr = t.mean_ms > 0 && n > 1 ? t.stdev_ms / std::sqrt(double(n)) / t.mean_ms : 1.0;
  return t;
}

L2Flusher::L2Flusher(int l2_bytes) : buffer_(static_cast<size_t>(std::max(l2_bytes, 1 << 20)) * 2) {}

void L2Flusher::flush(cudaStream_t s) { CT_CUDA(cudaMemsetAsync(buffer_.get(), 0, buffer_.bytes(), s)); }

Timer::Timer(int l2_bytes, MeasureOptions options) : options_(options), flusher_(options.cold ? l2_bytes : 0) {}

Timing Timer::measure(const std::function<void(cudaStream_t)>& work, cudaStream_t stream) {
  for (int i = 0; i < options_.warmup; ++i) work(stream);
  CT_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> samples;
  const NvtxRange timed(kNvtxTimed);
  const auto t0 = std::chrono::steady_clock::now();
  bool converged = false;
  while (static_cast<int>(samples.size()) < options_.max_samples) {
    if (options_.cold) flusher_.flush(stream);
    start_.record(stream);
    work(stream);
    stop_.record(stream);
    CT_CUDA(cudaEventSynchronize(stop_.get()));
    float ms = 0;
    CT_CUDA(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
    samples.push_back(ms);
    const int n = static_cast<int>(samples.size());
    if (n >= options_.min_samples && Timing::from_samples(samples).rel_stderr <= options_.max_rel_stderr) {
      converged = true;
      break;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (n >= options_.min_samples && elapsed > options_.time_cap_s) break;
    if (n >= 3 && elapsed > options_.time_cap_s) break;  // a slow candidate: three samples are enough to rank it
  }
  Timing t = Timing::from_samples(std::move(samples));
  t.converged = converged;
  return t;
}

}  // namespace convtune
