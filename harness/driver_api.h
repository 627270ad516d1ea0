// The few CUDA driver API calls the JIT needs, resolved at run time through the runtime
// (cudaGetDriverEntryPointByVersion) instead of linking libcuda: binaries then start on machines with
// no driver at all, where NVRTC compilation and CPU tests still run.
#pragma once
#include <cuda.h>

namespace convtune {

struct DriverApi {
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuModuleGetGlobal)(CUdeviceptr*, size_t*, CUmodule, const char*);
  CUresult (*cuFuncGetAttribute)(int*, CUfunction_attribute, CUfunction);
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

// Throws CudaError when the driver cannot be reached.
const DriverApi& driver();

}  // namespace convtune
