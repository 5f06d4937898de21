// Owned device memory: long-lived (cudaMalloc) and per-call scratch
// (stream-ordered cudaMallocAsync, cheap after the pool has warmed up).
#pragma once

#include <memory>

#include "common.cuh"

namespace ragcore::gpu {

class DeviceBuffer {
 public:
  DeviceBuffer(int device, size_t bytes) : device_(device), bytes_(bytes) {
    if (bytes_) RAGCORE_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  ~DeviceBuffer() {
    if (!ptr_) return;
    int current = 0;
    cudaGetDevice(&current);
    cudaSetDevice(device_);
    cudaFree(ptr_);  // errors cannot be reported from a destructor
    cudaSetDevice(current);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  int device_;
  size_t bytes_;
  void* ptr_ = nullptr;
};

class Scratch {
 public:
  Scratch(size_t bytes, cudaStream_t stream) : stream_(stream) {
    if (bytes) RAGCORE_CUDA_CHECK(cudaMallocAsync(&ptr_, bytes, stream_));
  }
  ~Scratch() {
    if (ptr_) cudaFreeAsync(ptr_, stream_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <class T> T* as() const { return static_cast<T*>(ptr_); }

 private:
  cudaStream_t stream_;
  void* ptr_ = nullptr;
};

class DeviceGuard {  // makes `device` current for the scope
 public:
  explicit DeviceGuard(int device) {
    RAGCORE_CUDA_CHECK(cudaGetDevice(&previous_));
    RAGCORE_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

inline std::shared_ptr<DeviceBuffer> upload(int device, const void* host, size_t bytes) {
  auto buf = std::make_shared<DeviceBuffer>(device, bytes);
  if (bytes) RAGCORE_CUDA_CHECK(cudaMemcpy(buf->as<void>(), host, bytes, cudaMemcpyHostToDevice));
  return buf;
}

}  // namespace ragcore::gpu
