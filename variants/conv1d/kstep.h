// K-step schedule of overlap-add: step s runs blocks b with b % k == s. Block b of length l convolved with a
// filter of length m writes [b*l, b*l + l + m - 1), so blocks of one step (k*l apart) never share an output
// when k*l >= l + m - 1: each step can run all its blocks concurrently and accumulate without atomics.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace convtune::conv1d {

// Smallest k >= 2 with k*l >= l+m-1 (k = 2 whenever the filter is no longer than a block plus one).
inline int64_t kstep_min_k(int64_t l, int64_t m) {
  if (l < 1 || m < 1)
    throw std::invalid_argument("kstep_min_k: l and m must be >= 1, got l=" + std::to_string(l) +
                                " m=" + std::to_string(m));
  const int64_t k = 1 + (m - 1 + l - 1) / l;  // 1 + ceil((m-1)/l)
  return k < 2 ? 2 : k;
}

// Step s lists blocks s, s+k, s+2k, ... below `blocks`; there are always k steps (some empty when blocks < k).
inline std::vector<std::vector<int64_t>> kstep_schedule(int64_t blocks, int k) {
  if (blocks < 0 || k < 1)
    throw std::invalid_argument("kstep_schedule: need blocks >= 0 and k >= 1, got blocks=" +
                                std::to_string(blocks) + " k=" + std::to_string(k));
  std::vector<std::vector<int64_t>> steps(static_cast<size_t>(k));
  for (int64_t b = 0; b < blocks; ++b) steps[static_cast<size_t>(b % k)].push_back(b);
  return steps;
}

}  // namespace convtune::conv1d
