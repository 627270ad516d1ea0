// Timing with CUDA events: warm-up, then samples until the relative standard error of the mean is
// small enough or a time cap is reached. Cold by default: L2 is flushed before every sample.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "harness/cuda_raii.h"

namespace convtune {

using json = nlohmann::json;

struct MeasureOptions {
  bool cold = true;
  int warmup = 2;
  int min_samples = 10;
  int max_samples = 2000;
  double max_rel_stderr = 0.01;  // stop once stderr(mean) / mean is at most this
  double time_cap_s = 2.0;       // per candidate, excluding the warm-up
  json to_json() const;
  static MeasureOptions from_json(const json& j, const std::string& where);  // validates
};

struct Timing {
  double median_ms = 0, min_ms = 0, mean_ms = 0, stdev_ms = 0, rel_stderr = 0;
  int samples = 0;
  bool converged = false;  // reached max_rel_stderr before the caps
  json to_json() const;
  static Timing from_samples(std::vector<double> ms);
};

// Writes over a buffer twice the size of L2, evicting what the previous sample left there.
class L2Flusher {
 public:
  explicit L2Flusher(int l2_bytes);
  void flush(cudaStream_t s);

 private:
  DeviceArray<char> buffer_;
};

class Timer {
 public:
  Timer(int l2_bytes, MeasureOptions options);
  Timing measure(const std::function<void(cudaStream_t)>& work, cudaStream_t stream);
  const MeasureOptions& options() const { return options_; }

 private:
  MeasureOptions options_;
  L2Flusher flusher_;
  Event start_, stop_;
};

}  // namespace convtune
