// RAII owners for CUDA resources; destructors report errors instead of throwing.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "harness/error.h"

namespace convtune {

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t count) : count_(count) {
    if (count) CT_CUDA(cudaMalloc(&ptr_, count * sizeof(T)));
  }
  ~DeviceArray() {
    if (ptr_) CT_CUDA_WARN(cudaFree(ptr_));
  }
  DeviceArray(DeviceArray&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      if (ptr_) CT_CUDA_WARN(cudaFree(ptr_));
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

class Stream {
 public:
  Stream() { CT_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { CT_CUDA_WARN(cudaStreamDestroy(s_)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { CT_CUDA(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { CT_CUDA(cudaEventCreate(&e_)); }
  ~Event() { CT_CUDA_WARN(cudaEventDestroy(e_)); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { CT_CUDA(cudaEventRecord(e_, s)); }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace convtune
