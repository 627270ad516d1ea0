// What the GPU tests share: whether a GPU is here, and the measurement they use when they verify rather than
// time (no cold L2, one warm-up, two samples).
#pragma once
#include "harness/device.h"
#include "harness/measure.h"

namespace convtune::test_gpu {

inline bool have_gpu() { return DeviceInfo::count() > 0; }

inline MeasureOptions quick() {
  MeasureOptions m;
  m.cold = false;
  m.warmup = 1;
  m.min_samples = 2;
  m.max_samples = 2;
  return m;
}

}  // namespace convtune::test_gpu
