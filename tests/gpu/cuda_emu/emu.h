// A CPU stand-in for the CUDA features the BM25 and flat-search kernels use, so
// that their source runs without a GPU (tests/gpu/test_gpu_*_emulated.py).
// Included first (-include) when cuda/*.cu are compiled as C++; build.py rewrites
// each `kernel<<<grid, block, smem, stream>>>(args)` into `emu::launch(kernel,
// grid, block, smem, stream)(args)`, each `__shared__` variable into a static
// one (one block runs at a time) and `extern __shared__ T name[]` into a pointer
// to the launch's dynamic shared memory.
//
// A launch runs its blocks one after another, and each block's threads as
// coroutines (ucontext): a thread runs until it reaches a warp-wide intrinsic
// (__ballot_sync, __shfl_sync, __shfl_xor_sync), where it waits for its warp's
// other running lanes, or __syncthreads / __syncthreads_or, where it waits for
// the block's other running threads, as on the GPU. Atomics are plain
// read-modify-writes (one thread runs at a time). Arithmetic is the host's,
// compiled with -ffp-contract=off, so __dadd_rn / __dmul_rn and fmaf round as
// the GPU's do. Tensor-core (wmma) code is not emulated.
#pragma once

#include <cuda_runtime.h>
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

using std::isnan;  // device code calls the global isnan / isfinite, as CUDA declares them
using std::isfinite;

struct EmuDim {
  unsigned x = 1, y = 1, z = 1;
};
inline EmuDim blockIdx, threadIdx, gridDim, blockDim;

inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __double2float_rn(double x) { return static_cast<float>(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline unsigned atomicOr(unsigned* p, unsigned v) { const unsigned o = *p; *p |= v; return o; }
inline unsigned atomicAdd(unsigned* p, unsigned v) { const unsigned o = *p; *p += v; return o; }
inline int atomicMin(int* p, int v) { const int o = *p; *p = std::min(o, v); return o; }
template <class T>
T __ldg(const T* p) { return *p; }
// cuda_runtime.h declares this overload for nvcc only.
template <class T>
cudaError_t cudaFuncSetAttribute(T* kernel, cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attr, value);
}

namespace emu {

// The threads of the running block and where each one waits.
struct Block {
  static constexpr size_t kStack = 64 * 1024;
  enum Wait : uint8_t { kRunning, kWarp, kBlock, kDone };
  ucontext_t scheduler;
  std::vector<ucontext_t> threads;
  std::vector<char> stacks;
  std::vector<Wait> wait;
  std::vector<uint64_t> value;     // what each thread brings to a warp-wide call or barrier
  std::vector<uint64_t> snapshot;  // the values of the call being released
  std::vector<unsigned> arrived;   // per warp: the lanes of the call being released
  bool block_or = false;           // __syncthreads_or of the barrier being released
  unsigned current = 0;
  std::function<void()> body;
};
inline Block* block = nullptr;

// Dynamic shared memory of the running launch (extern __shared__).
inline std::vector<float4> dynamic_smem;
template <class T>
T* dynamic_shared() { return reinterpret_cast<T*>(dynamic_smem.data()); }

inline void run_thread(int t) {
  block->body();
  block->wait[t] = Block::kDone;
}

// Called by a thread at a warp-wide call or a barrier: hands `v` in, returns
// once every running thread of its warp (or block) has arrived; `snapshot` then
// holds their values and `arrived` their lanes (a thread released first may
// already be at its next call).
inline void arrive(uint64_t v, Block::Wait kind) {
  Block& b = *block;
  const unsigned t = b.current;
  b.value[t] = v;
  b.wait[t] = kind;
  swapcontext(&b.threads[t], &b.scheduler);
}

inline void resume(unsigned t) {
  block->current = t;
  threadIdx.x = t;
  block->wait[t] = Block::kRunning;
  swapcontext(&block->scheduler, &block->threads[t]);
}

// Releases warps whose running lanes all wait at a warp-wide call, else the block
// if all its running threads wait at a barrier; false when nothing waits.
inline bool release_waiting(unsigned n) {
  Block& b = *block;
  bool any = false, released = false;
  for (unsigned w0 = 0; w0 < n; w0 += 32) {
    const unsigned end = std::min(n, w0 + 32);
    bool all = true, some = false;
    for (unsigned t = w0; t < end; ++t) {
      all = all && (b.wait[t] == Block::kWarp || b.wait[t] == Block::kDone);
      some = some || b.wait[t] == Block::kWarp;
    }
    any = any || some;
    if (!all || !some) continue;
    unsigned lanes = 0;
    for (unsigned t = w0; t < end; ++t) {
      b.snapshot[t] = b.value[t];
      if (b.wait[t] == Block::kWarp) lanes |= 1u << (t - w0);
    }
    b.arrived[w0 / 32] = lanes;
    for (unsigned t = w0; t < end; ++t)
      if ((lanes >> (t - w0)) & 1) resume(t);
    released = true;
  }
  if (released) return true;
  bool all = true, some = false;
  for (unsigned t = 0; t < n; ++t) {
    all = all && (b.wait[t] == Block::kBlock || b.wait[t] == Block::kDone);
    some = some || b.wait[t] == Block::kBlock;
  }
  if (some && all) {
    b.block_or = false;
    for (unsigned t = 0; t < n; ++t)
      if (b.wait[t] == Block::kBlock) b.block_or = b.block_or || b.value[t] != 0;
    for (unsigned t = 0; t < n; ++t)
      if (b.wait[t] == Block::kBlock) resume(t);
    return true;
  }
  if (some || any) {  // threads wait at different calls: a deadlock on the GPU too
    std::fprintf(stderr, "emu: a block's threads wait at different barriers\n");
    std::abort();
  }
  return false;
}

// Runs one block of `n` threads.
inline void run_block(unsigned n, const std::function<void()>& body) {
  static Block b;
  if (b.threads.size() < n) {
    b.threads.resize(n);
    b.stacks.resize(n * Block::kStack);
    b.wait.resize(n);
    b.value.resize(n);
    b.snapshot.resize(n);
    b.arrived.resize((n + 31) / 32);
  }
  block = &b;
  b.body = body;
  for (unsigned t = 0; t < n; ++t) {
    b.wait[t] = Block::kRunning;
    getcontext(&b.threads[t]);
    b.threads[t].uc_stack.ss_sp = b.stacks.data() + t * Block::kStack;
    b.threads[t].uc_stack.ss_size = Block::kStack;
    b.threads[t].uc_link = &b.scheduler;
    makecontext(&b.threads[t], reinterpret_cast<void (*)()>(&run_thread), 1, static_cast<int>(t));
  }
  for (;;) {
    for (unsigned t = 0; t < n; ++t)
      if (b.wait[t] == Block::kRunning) resume(t);
    if (!release_waiting(n)) break;  // every thread finished
  }
  block = nullptr;
}

template <class Kernel>
struct Launch {
  Kernel kernel;
  dim3 grid, block;
  size_t smem;
  template <class... Args>
  void operator()(Args... args) const {
    gridDim = {grid.x, grid.y, grid.z};
    blockDim = {block.x, block.y, block.z};
    dynamic_smem.assign((smem + sizeof(float4) - 1) / sizeof(float4), float4{});
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = {bx, by, 0};
        run_block(block.x, [&] { kernel(args...); });
      }
  }
};

template <class Kernel>
Launch<Kernel> launch(Kernel kernel, dim3 grid, dim3 block, size_t smem = 0, cudaStream_t = 0) {
  return {kernel, grid, block, smem};
}

inline unsigned lane() { return block->current % 32; }
inline unsigned warp_first() { return block->current - lane(); }

template <class T>
uint64_t bits(T v) {
  static_assert(sizeof(T) <= 8, "a warp-wide value is at most 8 bytes");
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}
template <class T>
T from_bits(uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}

}  // namespace emu

inline unsigned __ballot_sync(unsigned, bool pred) {
  emu::arrive(pred ? 1 : 0, emu::Block::kWarp);
  const unsigned first = emu::warp_first(), lanes = emu::block->arrived[first / 32];
  unsigned bits = 0;
  for (int l = 0; l < 32; ++l)
    if (((lanes >> l) & 1) && emu::block->snapshot[first + l]) bits |= 1u << l;
  return bits;
}

template <class T>
T __shfl_sync(unsigned, T v, int src) {
  emu::arrive(emu::bits(v), emu::Block::kWarp);
  return emu::from_bits<T>(emu::block->snapshot[emu::warp_first() + src]);
}

template <class T>
T __shfl_xor_sync(unsigned, T v, int mask) {
  emu::arrive(emu::bits(v), emu::Block::kWarp);
  return emu::from_bits<T>(emu::block->snapshot[emu::warp_first() + (emu::lane() ^ mask)]);
}

inline void __syncthreads() { emu::arrive(0, emu::Block::kBlock); }

inline int __syncthreads_or(int pred) {
  emu::arrive(pred != 0, emu::Block::kBlock);
  return emu::block->block_or ? 1 : 0;
}
