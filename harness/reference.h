// Float64 references. The GPU one checks full outputs at real sizes; the CPU one (slow, simple) checks
// the GPU one in tests.
#pragma once
#include <cuda_runtime.h>

#include <vector>

#include "harness/problem.h"

namespace convtune {

// inputs in Problem::operands() order; returns the output in float64.
std::vector<double> cpu_reference(const Problem& p, const std::vector<std::vector<float>>& inputs);

// Whether the GPU reference covers this family yet.
bool has_gpu_reference(Family f);
// Device pointers to the inputs; writes the float64 output to `out`.
void gpu_reference(const Problem& p, const std::vector<const float*>& inputs, double* out, cudaStream_t s);

}  // namespace convtune
