// A CPU stand-in for the CUDA features the BM25 kernels use, so that their
// source runs without a GPU (tests/gpu/test_gpu_bm25_emulated.py). Included first
// (-include) when cuda/bm25_*.cu are compiled as C++; the test rewrites each
// `kernel<<<grid, block, smem, stream>>>(args)` into `emu::launch(kernel, grid,
// block, smem, stream)(args)`.
//
// A launch runs its blocks one after another, and each warp's 32 lanes as
// coroutines (ucontext): a lane runs until it reaches a warp-wide intrinsic
// (__ballot_sync, __shfl_sync), where it waits for the warp's other running
// lanes, as on the GPU. Atomics are plain read-modify-writes (one lane runs at a
// time). Arithmetic is the host's, compiled with -ffp-contract=off, so
// __dadd_rn / __dmul_rn round as the GPU's do.
#pragma once

#include <cuda_runtime.h>
#include <ucontext.h>

#include <cmath>
#include <cstdint>
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

namespace emu {

struct Warp {
  static constexpr size_t kStack = 256 * 1024;
  ucontext_t scheduler;
  ucontext_t lanes[32];
  std::vector<char> stacks = std::vector<char>(32 * kStack);
  unsigned tid[32];
  bool done[32], waiting[32];
  uint64_t value[32];     // what each lane brings to a warp-wide call
  uint64_t snapshot[32];  // the values of the call being released
  unsigned arrived = 0;   // its lanes
  int current = -1;
  std::function<void()> body;
};
inline Warp* warp = nullptr;

inline void run_lane(int lane) {
  warp->body();
  warp->done[lane] = true;
}

// Called by a lane at a warp-wide intrinsic: hands `v` in, returns once every
// running lane of the warp has arrived; `snapshot` then holds their values and
// `arrived` their lanes (a lane released first may already be at its next call).
inline void arrive(uint64_t v) {
  Warp& w = *warp;
  const int lane = w.current;
  w.value[lane] = v;
  w.waiting[lane] = true;
  swapcontext(&w.lanes[lane], &w.scheduler);
}

inline unsigned lane_id() { return static_cast<unsigned>(warp->current); }

// Runs one block: its warps one after another.
inline void run_block(unsigned threads, const std::function<void()>& body) {
  Warp w;
  warp = &w;
  for (unsigned first = 0; first < threads; first += 32) {
    const int n = static_cast<int>(std::min(32u, threads - first));
    w.body = body;
    for (int l = 0; l < n; ++l) {
      w.tid[l] = first + l;
      w.done[l] = w.waiting[l] = false;
      getcontext(&w.lanes[l]);
      w.lanes[l].uc_stack.ss_sp = w.stacks.data() + l * Warp::kStack;
      w.lanes[l].uc_stack.ss_size = Warp::kStack;
      w.lanes[l].uc_link = &w.scheduler;
      makecontext(&w.lanes[l], reinterpret_cast<void (*)()>(&run_lane), 1, l);
    }
    for (;;) {
      bool ran = false;
      for (int l = 0; l < n; ++l) {
        if (w.done[l] || w.waiting[l]) continue;
        w.current = l;
        threadIdx.x = w.tid[l];
        swapcontext(&w.scheduler, &w.lanes[l]);
        ran = true;
      }
      bool any_waiting = false;
      for (int l = 0; l < n; ++l) any_waiting |= w.waiting[l];
      if (!ran && !any_waiting) break;  // every lane finished
      if (!any_waiting) continue;
      // Every running lane has arrived: release them.
      w.arrived = 0;
      for (int l = 0; l < n; ++l) {
        w.snapshot[l] = w.value[l];
        if (w.waiting[l]) w.arrived |= 1u << l;
      }
      for (int l = 0; l < n; ++l) {
        if (!((w.arrived >> l) & 1)) continue;
        w.waiting[l] = false;
        w.current = l;
        threadIdx.x = w.tid[l];
        swapcontext(&w.scheduler, &w.lanes[l]);
      }
    }
  }
  warp = nullptr;
}

template <class Kernel>
struct Launch {
  Kernel kernel;
  dim3 grid, block;
  template <class... Args>
  void operator()(Args... args) const {
    gridDim = {grid.x, grid.y, grid.z};
    blockDim = {block.x, block.y, block.z};
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = {bx, by, 0};
        run_block(block.x, [&] { kernel(args...); });
      }
  }
};

template <class Kernel>
Launch<Kernel> launch(Kernel kernel, dim3 grid, dim3 block, size_t = 0, cudaStream_t = 0) {
  return {kernel, grid, block};
}

}  // namespace emu

inline unsigned __ballot_sync(unsigned, bool pred) {
  emu::arrive(pred ? 1 : 0);
  unsigned bits = 0;
  for (int l = 0; l < 32; ++l)
    if (((emu::warp->arrived >> l) & 1) && emu::warp->snapshot[l]) bits |= 1u << l;
  return bits;
}

inline unsigned __shfl_sync(unsigned, unsigned v, int src) {
  emu::arrive(v);
  return static_cast<unsigned>(emu::warp->snapshot[src]);
}
