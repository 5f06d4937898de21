// The CUDA runtime calls the BM25 plans make, on host memory (see emu.h), and
// the device facts they ask for: one device, 4 multiprocessors, 1 GiB free.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>

#include "device_limits.h"
#include "gpu_flat.h"

cudaError_t cudaMalloc(void** p, size_t n) { *p = n ? std::malloc(n) : nullptr; return cudaSuccess; }
cudaError_t cudaFree(void* p) { std::free(p); return cudaSuccess; }
cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t) { return cudaMalloc(p, n); }
cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind) {
  if (n) std::memcpy(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, n, kind);
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t) {
  if (n) std::memset(p, value, n);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char* cudaGetErrorString(cudaError_t) { return "emulated CUDA error"; }
cudaError_t cudaGetDevice(int* device) { *device = 0; return cudaSuccess; }
cudaError_t cudaSetDevice(int) { return cudaSuccess; }

namespace ragcore::gpu {
int device_count() { return 1; }
DeviceLimits device_limits(int) {
  DeviceLimits lim;
  lim.sms = 4;
  lim.shared_optin = 227 * 1024;
  lim.free_bytes = size_t{1} << 30;
  return lim;
}
}  // namespace ragcore::gpu
