// Run-time compilation of the embedded kernel sources with NVRTC, for the device's exact arch, with a
// disk cache of cubins keyed by (source hash, options, arch, NVRTC version).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convtune {

using json = nlohmann::json;

const std::map<std::string, std::string>& embedded_sources();  // generated at build time
const std::string& embedded_source(const std::string& name);   // throws if unknown

// One compilation unit: an embedded source and its options (defines such as "-DRADIUS=3").
struct JitProgram {
  std::string source;
  std::vector<std::string> options;
  std::string describe() const;
};

// The embedded sources that `source` #includes by name, transitively (NVRTC gets them as headers).
const std::vector<std::string>& included_sources(const std::string& source);

// The target NVRTC compiles `arch` for: "sm_90" becomes the arch-specific "sm_90a", whose cubin runs on
// compute capability 9.0 only (as a JIT's cubin does anyway) and admits wgmma; other archs are unchanged.
std::string jit_target(const std::string& arch);
// Compiles to a cubin for jit_target(arch); throws CompileError with NVRTC's log. Needs no GPU. `log`, when
// given, receives the log of a successful compile too (ptxas notes: spills, serialized wgmma).
std::vector<char> nvrtc_compile(const JitProgram& program, const std::string& arch, std::string* log = nullptr);

struct KernelAttributes {
  int registers = 0;
  int static_smem_bytes = 0;
  int dynamic_smem_bytes = 0;
  int local_bytes = 0;  // per thread: spills and local arrays
  int threads = 0;
  int blocks_per_sm = 0;
  double occupancy = 0;  // resident threads / max threads per SM
  json to_json() const;
};

class Module {
 public:
  explicit Module(const std::vector<char>& cubin);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  CUfunction function(const std::string& name) const;
  CUdeviceptr global(const std::string& name, size_t* bytes = nullptr) const;

 private:
  CUmodule module_ = nullptr;
};

// Reads registers, memory use and occupancy of `fn` for a launch of `threads` with `dynamic_smem`;
// raises the function's dynamic shared memory limit when the launch needs more than 48 KB.
KernelAttributes kernel_attributes(CUfunction fn, int threads, int dynamic_smem);

void launch(CUfunction fn, dim3 grid, dim3 block, unsigned dynamic_smem, cudaStream_t stream, void** args);

// A persistent launch's blocks along x, where grid.x counts work items that the kernel strides over by
// gridDim.x and `resident` blocks fit on the device at once: as many as fit beside grid.y * grid.z where that
// gives each two items or more and fills nine tenths of the device, else grid.x (a block an item).
unsigned persistent_grid_x(const dim3& grid, int64_t resident);

class JitCache {
 public:
  JitCache(std::filesystem::path dir, std::string arch);
  static std::filesystem::path default_dir();

  const std::string& arch() const { return arch_; }
  std::vector<char> cubin(const JitProgram& program);          // disk cache, else compile
  std::shared_ptr<Module> module(const JitProgram& program);   // also keeps loaded modules in memory

  // Compiles (or finds on disk) every program on `threads` threads (0: one per core); failures are
  // left for the candidate to report when it is prepared. Returns how many were compiled or found.
  size_t compile_all(const std::vector<JitProgram>& programs, int threads = 0);

  int hits() const { return hits_; }
  int compiles() const { return compiles_; }
  double compile_ms() const { return compile_ms_; }

 private:
  std::string key(const JitProgram& program) const;
  std::filesystem::path dir_;
  std::string arch_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Module>> loaded_;
  int hits_ = 0, compiles_ = 0;
  double compile_ms_ = 0;
};

}  // namespace convtune
