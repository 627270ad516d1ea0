// Helpers the CPU tests share: error messages, exact values, and compiling many kernels at once.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/error.h"
#include "harness/jit.h"

namespace convtune::test {

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The InputError's message of `f`, or "" (and a failure) when it throws nothing or something else.
template <class F>
std::string input_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InputError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

inline void expect_values(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << what << " [" << i << "]";
}

// Compiles every program for sm_90 on all cores; a failure (with NVRTC's log) per program that does not
// compile, yields a suspiciously small cubin, or whose log names one of `forbidden` (compiler notes).
inline void expect_all_compile(const std::vector<JitProgram>& programs,
                               const std::vector<std::string>& forbidden = {}) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < programs.size();) {
        try {
          std::string log;
          if (nvrtc_compile(programs[i], "sm_90", &log).size() < 256) throw std::runtime_error("suspiciously small cubin");
          for (const std::string& f : forbidden)
            if (log.find(f) != std::string::npos) throw std::runtime_error("compiler note " + f + ":\n" + log);
        } catch (const CompileError& e) {
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back(std::string(e.what()) + "\n" + e.log);
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back(programs[i].describe() + ": " + e.what());
        }
      }
    });
  for (auto& th : pool) th.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
}

}  // namespace convtune::test
