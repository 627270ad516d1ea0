// What the NVRTC variants of every family build their programs, spaces and launches from: a -D option,
// a config's integer, a list of integer parameter values, a division rounded up.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "harness/params.h"

namespace convtune {

// "-DNAME=value": a compile-time constant of an NVRTC program.
inline std::string define(const char* name, int64_t value) {
  return std::string("-D") + name + "=" + std::to_string(value);
}

// The config's integer parameter `name`.
inline int cfg_int(const Config& c, const char* name) { return c.at(name).get<int>(); }

// Integer values of a parameter space's parameter.
inline std::vector<json> int_values(std::initializer_list<int> v) { return std::vector<json>(v.begin(), v.end()); }

// a / b rounded up, for a >= 0 and b > 0: grid sizes, tile and chunk counts.
inline constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace convtune
