#include "harness/driver_api.h"

#include <cuda_runtime.h>

#include <string>

#include "harness/error.h"

namespace convtune {

template <typename Fn>
static void resolve(Fn& fn, const char* symbol) {
  void* ptr = nullptr;
  cudaDriverEntryPointQueryResult found{};
  const cudaError_t err = cudaGetDriverEntryPointByVersion(symbol, &ptr, 12000, cudaEnableDefault, &found);
  if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || !ptr) {
    cudaGetLastError();
    throw CudaError(std::string("CUDA driver function ") + symbol + " is not available (" +
                    (err != cudaSuccess ? cudaGetErrorString(err) : "symbol not found") + "): is a driver installed?");
  }
  fn = reinterpret_cast<Fn>(ptr);
}

static DriverApi load() {
  DriverApi d{};
  resolve(d.cuModuleLoadData, "cuModuleLoadData");
  resolve(d.cuModuleUnload, "cuModuleUnload");
  resolve(d.cuModuleGetFunction, "cuModuleGetFunction");
  resolve(d.cuModuleGetGlobal, "cuModuleGetGlobal");
  resolve(d.cuFuncGetAttribute, "cuFuncGetAttribute");
  resolve(d.cuFuncSetAttribute, "cuFuncSetAttribute");
  resolve(d.cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  resolve(d.cuLaunchKernel, "cuLaunchKernel");
  resolve(d.cuGetErrorName, "cuGetErrorName");
  resolve(d.cuGetErrorString, "cuGetErrorString");
  return d;
}

const DriverApi& driver() {
  static const DriverApi api = load();
  return api;
}

}  // namespace convtune
