#include "harness/jit.h"
#include "harness/jit_runtime_source.h"

#include <nvrtc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <atomic>
#include <set>

#include "harness/driver_api.h"
#include "harness/error.h"

namespace convtune {

namespace {
struct RuntimeSource {
  std::string text;
  std::map<std::string, std::string> headers;
};
std::mutex runtime_mutex;
// Entries are never removed or changed, so references into the map stay valid without the lock.
std::map<std::string, RuntimeSource>& runtime_sources() {
  static std::map<std::string, RuntimeSource> sources;
  return sources;
}
const RuntimeSource* find_runtime_source(const std::string& name) {
  std::lock_guard<std::mutex> lock(runtime_mutex);
  auto it = runtime_sources().find(name);
  return it == runtime_sources().end() ? nullptr : &it->second;
}
}  // namespace

void add_runtime_source(const std::string& name, const std::string& text,
                        const std::map<std::string, std::string>& headers) {
  if (embedded_sources().count(name)) throw std::logic_error("runtime source '" + name + "' names an embedded one");
  std::lock_guard<std::mutex> lock(runtime_mutex);
  auto [it, added] = runtime_sources().emplace(name, RuntimeSource{text, headers});
  if (!added && (it->second.text != text || it->second.headers != headers))
    throw std::logic_error("runtime source '" + name + "' added twice with different texts");
}

const std::string& embedded_source(const std::string& name) {
  const auto& all = embedded_sources();
  auto it = all.find(name);
  if (it != all.end()) return it->second;
  if (const RuntimeSource* r = find_runtime_source(name)) return r->text;
  throw std::logic_error("no embedded kernel source named '" + name + "'");
}

std::string JitProgram::describe() const {
  std::string out = source;
  for (const auto& o : options) out += " " + o;
  return out;
}

// The embedded sources `source` #includes, transitively, by scanning the texts.
static std::vector<std::string> find_included_sources(const std::string& source) {
  std::vector<std::string> found, pending = {source};
  while (!pending.empty()) {
    const std::string name = pending.back();
    pending.pop_back();
    std::istringstream text(embedded_source(name));
    for (std::string line; std::getline(text, line);) {
      const auto at = line.find("#include \"");
      if (at == std::string::npos) continue;
      const auto open = at + 10, close = line.find('"', open);
      const std::string inc = line.substr(open, close - open);
      if (embedded_sources().count(inc) && std::find(found.begin(), found.end(), inc) == found.end()) {
        found.push_back(inc);
        pending.push_back(inc);
      }
    }
  }
  return found;
}

// The embedded sources a source #includes ("conv1d_common.cuh"), transitively: NVRTC gets them as headers,
// and the cache key covers their text too. Found once per source: the embedded texts never change.
const std::vector<std::string>& included_sources(const std::string& source) {
  static const std::map<std::string, std::vector<std::string>> by_source = [] {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& entry : embedded_sources()) out[entry.first] = find_included_sources(entry.first);
    return out;
  }();
  return by_source.at(source);
}

// Every header NVRTC gets for `source`, as (include name, text): a runtime source's own files, then the
// embedded sources it or they #include.
static std::vector<std::pair<std::string, std::string>> program_headers(const std::string& source) {
  std::vector<std::pair<std::string, std::string>> out;
  const RuntimeSource* runtime = find_runtime_source(source);
  if (!runtime) {
    for (const auto& h : included_sources(source)) out.emplace_back(h, embedded_source(h));
    return out;
  }
  std::set<std::string> seen;
  for (const auto& [name, text] : runtime->headers) out.emplace_back(name, text), seen.insert(name);
  std::vector<std::string> texts = {runtime->text};
  for (const auto& [name, text] : runtime->headers) texts.push_back(text);
  for (const auto& text : texts) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const auto at = line.find("#include \"");
      if (at == std::string::npos) continue;
      const std::string inc = line.substr(at + 10, line.find('"', at + 10) - at - 10);
      if (!embedded_sources().count(inc)) continue;
      if (seen.insert(inc).second) out.emplace_back(inc, embedded_source(inc));
      for (const auto& deeper : included_sources(inc))
        if (seen.insert(deeper).second) out.emplace_back(deeper, embedded_source(deeper));
    }
  }
  return out;
}

std::string jit_target(const std::string& arch) { return arch == "sm_90" ? "sm_90a" : arch; }

std::vector<char> nvrtc_compile(const JitProgram& program, const std::string& arch, std::string* log_out) {
  const std::string& text = embedded_source(program.source);
  const auto headers = program_headers(program.source);
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, header] : headers) {
    header_texts.push_back(header.c_str());
    header_names.push_back(name.c_str());
  }
  nvrtcProgram prog = nullptr;
  CT_NVRTC(nvrtcCreateProgram(&prog, text.c_str(), program.source.c_str(), int(headers.size()), header_texts.data(),
                              header_names.data()));
  std::vector<std::string> options = {"--gpu-architecture=" + jit_target(arch), "--std=c++17", "-default-device",
                                      "--extra-device-vectorization"};
  options.insert(options.end(), program.options.begin(), program.options.end());
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  const nvrtcResult rc = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(prog, log.data());
  if (log_out) *log_out = log;
  if (rc != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    throw CompileError("NVRTC could not compile " + program.describe() + " for " + arch + ": " +
                           nvrtcGetErrorString(rc),
                       log);
  }
  size_t size = 0;
  CT_NVRTC(nvrtcGetCUBINSize(prog, &size));
  std::vector<char> cubin(size);
  CT_NVRTC(nvrtcGetCUBIN(prog, cubin.data()));
  nvrtcDestroyProgram(&prog);
  return cubin;
}

json KernelAttributes::to_json() const {
  return {{"registers", registers},     {"static_smem_bytes", static_smem_bytes},
          {"dynamic_smem_bytes", dynamic_smem_bytes}, {"local_bytes", local_bytes},
          {"threads", threads},         {"blocks_per_sm", blocks_per_sm},
          {"occupancy", occupancy}};
}

Module::Module(const std::vector<char>& cubin) {
  CT_CUDA(cudaFree(nullptr));  // makes the runtime's primary context current for the driver API
  CT_CU(driver().cuModuleLoadData(&module_, cubin.data()));
}

Module::~Module() {
  if (module_) {
    CUresult r = driver().cuModuleUnload(module_);
    if (r != CUDA_SUCCESS) warn_cuda("driver", driver_error_string(r), "cuModuleUnload", __FILE__, __LINE__);
  }
}

CUfunction Module::function(const std::string& name) const {
  CUfunction fn = nullptr;
  CT_CU(driver().cuModuleGetFunction(&fn, module_, name.c_str()));
  return fn;
}

CUdeviceptr Module::global(const std::string& name, size_t* bytes) const {
  CUdeviceptr ptr = 0;
  size_t size = 0;
  CT_CU(driver().cuModuleGetGlobal(&ptr, &size, module_, name.c_str()));
  if (bytes) *bytes = size;
  return ptr;
}

KernelAttributes kernel_attributes(CUfunction fn, int threads, int dynamic_smem) {
  KernelAttributes a;
  CT_CU(driver().cuFuncGetAttribute(&a.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, fn));
  CT_CU(driver().cuFuncGetAttribute(&a.static_smem_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn));
  CT_CU(driver().cuFuncGetAttribute(&a.local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn));
  // Past 48 KB a block's shared memory, static and dynamic together, needs the opt-in (a kernel of exactly 48 KB
  // dynamic and 128 bytes of static failed its launch without it).
  if (dynamic_smem + a.static_smem_bytes > 48 * 1024)
    CT_CU(driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_smem));
  a.dynamic_smem_bytes = dynamic_smem;
  a.threads = threads;
  CT_CU(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&a.blocks_per_sm, fn, threads, dynamic_smem));
  int dev = 0, max_threads_sm = 0;
  CT_CUDA(cudaGetDevice(&dev));
  CT_CUDA(cudaDeviceGetAttribute(&max_threads_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
  a.occupancy = max_threads_sm ? double(a.blocks_per_sm) * threads / max_threads_sm : 0;
  return a;
}

void launch(CUfunction fn, dim3 grid, dim3 block, unsigned dynamic_smem, cudaStream_t stream, void** args) {
  CT_CU(driver().cuLaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, dynamic_smem,
                       reinterpret_cast<CUstream>(stream), args, nullptr));
}

unsigned persistent_grid_x(const dim3& grid, int64_t resident) {
  const int64_t columns = int64_t(grid.y) * grid.z, fit = resident / columns;
  // Under two items a block, one each: the hardware's own scheduling balanced 1.5 items a block better (an
  // H200's layer GEMM at 1.5 tiles a CTA: 1.2x slower persistent, where the round robin doubled some SMs'
  // work). And persistent blocks must fill the device: where fit * columns leaves over a tenth of it empty
  // (columns alone past a third of it), or none fit beside the columns, the hardware schedules a block an item.
  const bool fills = fit >= 1 && 10 * fit * columns >= 9 * resident;
  return fills && grid.x >= 2 * fit ? unsigned(fit) : grid.x;
}

JitCache::JitCache(std::filesystem::path dir, std::string arch) : dir_(std::move(dir)), arch_(std::move(arch)) {}

std::filesystem::path JitCache::default_dir() {
  if (const char* d = std::getenv("CONVTUNE_CACHE_DIR")) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::filesystem::path(x) / "convtune" / "jit";
  if (const char* h = std::getenv("HOME")) return std::filesystem::path(h) / ".cache" / "convtune" / "jit";
  return std::filesystem::temp_directory_path() / "convtune-jit";
}

std::string JitCache::key(const JitProgram& program) const {
  // FNV-1a over everything that changes the cubin.
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::string material = embedded_source(program.source);
  for (const auto& header : program_headers(program.source)) material += '\0' + header.second;
  material += '\0' + jit_target(arch_) + '\0' + std::to_string(major) + "." + std::to_string(minor);
  for (const auto& o : program.options) material += '\0' + o;
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : material) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return program.source + "-" + arch_ + "-" + buf;
}

std::vector<char> JitCache::cubin(const JitProgram& program) {
  const auto path = dir_ / (key(program) + ".cubin");
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!data.empty()) {
        std::lock_guard<std::mutex> lock(mutex_);
        ++hits_;
        return data;
      }
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<char> data = nvrtc_compile(program, arch_);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++compiles_;
    compile_ms_ += ms;
  }
  // Write then rename, so that a crash or a parallel writer (another thread, or another sweep's process
  // sharing the cache) never leaves half a cubin behind; readers see the old file or the whole new one.
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const auto tmp = path.string() + ".tmp" + std::to_string(getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(&data));
  std::ofstream out(tmp, std::ios::binary);
  if (out && out.write(data.data(), static_cast<std::streamsize>(data.size()))) {
    out.close();
    std::filesystem::rename(tmp, path, ec);
  }
  if (ec) std::filesystem::remove(tmp, ec);
  return data;
}

size_t JitCache::compile_all(const std::vector<JitProgram>& programs, int threads) {
  std::vector<const JitProgram*> unique;
  std::set<std::string> seen;
  for (const auto& p : programs)
    if (seen.insert(p.describe()).second) unique.push_back(&p);
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0}, ok{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < unique.size();) {
        try {
          cubin(*unique[i]);
          ++ok;
        } catch (const std::exception&) {
          // Reported as compile_error when the candidate is prepared.
        }
      }
    });
  for (auto& th : pool) th.join();
  return ok;
}

std::shared_ptr<Module> JitCache::module(const JitProgram& program) {
  const std::string k = key(program);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = loaded_.find(k);
    if (it != loaded_.end()) return it->second;
  }
  auto m = std::make_shared<Module>(cubin(program));
  std::lock_guard<std::mutex> lock(mutex_);
  loaded_[k] = m;
  return m;
}

}  // namespace convtune
