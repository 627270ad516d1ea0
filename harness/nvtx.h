// NVTX ranges in the "convtune" domain, so that Nsight Systems and Nsight Compute users find each
// candidate's verification and timed samples ("<candidate> @ <problem_key>", then "verify" / "timed"
// inside it). nvtx3 is header-only: with no tool attached each push and pop is a branch on a null
// pointer.
#pragma once
#include <nvtx3/nvToolsExt.h>

#include <string>

namespace convtune {

constexpr const char* kNvtxDomain = "convtune";
// The range that holds exactly the timed samples; `convtune profile` filters Nsight Compute to it.
constexpr const char* kNvtxTimed = "timed";
constexpr const char* kNvtxVerify = "verify";

inline nvtxDomainHandle_t nvtx_domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA(kNvtxDomain);
  return domain;
}

class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name) {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name.c_str();
    nvtxDomainRangePushEx(nvtx_domain(), &a);
  }
  ~NvtxRange() { nvtxDomainRangePop(nvtx_domain()); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// The name of a candidate's outer range, also how profile records find their kernels.
inline std::string nvtx_candidate_range(const std::string& candidate, const std::string& problem_key) {
  return candidate + " @ " + problem_key;
}

}  // namespace convtune
