#include "harness/work_claims.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace convtune {

namespace fs = std::filesystem;

namespace {

const std::string kUnitPrefix = "unit-";

// The GPU a claim file names, or -1 for anything else (the link sources, foreign files).
int claim_owner(const fs::directory_entry& entry) {
  if (entry.path().filename().string().rfind(kUnitPrefix, 0) != 0) return -1;
  int gpu = -1;
  std::ifstream(entry.path()) >> gpu;
  return gpu;
}

}  // namespace

WorkClaims::WorkClaims(const fs::path& folder, int gpu, size_t units) : dir_(dir(folder)), gpu_(gpu), units_(units) {
  static std::atomic<int> instances{0};
  fs::create_directories(dir_);
  // Unique per process and object, so that claimers in threads of one process (tests) do not collide.
  source_ = dir_ / ("claimant-gpu" + std::to_string(gpu) + "-" + std::to_string(getpid()) + "-" +
                    std::to_string(instances++));
  std::ofstream out(source_);
  if (!(out << gpu << "\n") || !out.flush()) throw std::runtime_error("cannot write " + source_.string());
}

WorkClaims::~WorkClaims() {
  std::error_code ec;
  fs::remove(source_, ec);
}

std::vector<size_t> WorkClaims::held() const {
  std::vector<size_t> units;
  for (const auto& entry : fs::directory_iterator(dir_))
    if (claim_owner(entry) == gpu_) units.push_back(std::stoul(entry.path().filename().string().substr(kUnitPrefix.size())));
  std::sort(units.begin(), units.end());
  return units;
}

bool WorkClaims::try_claim(size_t unit) {
  const fs::path claim = dir_ / (kUnitPrefix + std::to_string(unit));
  if (link(source_.c_str(), claim.c_str()) == 0) return true;
  if (errno == EEXIST) return false;
  throw std::runtime_error("cannot claim " + claim.string() + ": " + std::strerror(errno));
}

std::optional<size_t> WorkClaims::claim_next() {
  for (;;) {
    while (cursor_ < units_)
      if (try_claim(cursor_++)) {
        rescanned_ = false;
        return cursor_ - 1;
      }
    if (rescanned_) return std::nullopt;
    rescanned_ = true;
    cursor_ = 0;
  }
}

size_t WorkClaims::release(const fs::path& folder, int gpu) {
  size_t released = 0;
  std::error_code ec;
  if (!fs::is_directory(dir(folder), ec)) return 0;
  for (const auto& entry : fs::directory_iterator(dir(folder)))
    if (claim_owner(entry) == gpu && fs::remove(entry.path(), ec)) ++released;
  return released;
}

void WorkClaims::clear(const fs::path& folder) {
  std::error_code ec;
  fs::remove_all(dir(folder), ec);
}

}  // namespace convtune
