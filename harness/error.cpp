#include "harness/error.h"

#include "harness/driver_api.h"

#include <cstdio>

namespace convtune {

void throw_cuda(const char* api, const std::string& err, const char* call, const char* file, int line) {
  throw CudaError(std::string(api) + " error '" + err + "' in " + call + " at " + file + ":" + std::to_string(line));
}

static bool g_context_lost = false;
void mark_context_lost() { g_context_lost = true; }

void warn_cuda(const char* api, const std::string& err, const char* call, const char* file, int line) {
  if (g_context_lost) return;
  std::fprintf(stderr, "convtune: warning: %s error '%s' in %s at %s:%d\n", api, err.c_str(), call, file, line);
}

std::string driver_error_string(CUresult r) {
  const char* name = nullptr;
  const char* desc = nullptr;
  try {
    driver().cuGetErrorName(r, &name);
    driver().cuGetErrorString(r, &desc);
  } catch (const CudaError&) {
  }
  return std::string(name ? name : "CUDA_ERROR_UNKNOWN") + ": " + (desc ? desc : "");
}

}  // namespace convtune
