// Shared device helpers: error checks, storage loads, sortable result keys.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ragcore::gpu {

inline void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(err));
}
#define RAGCORE_CUDA_CHECK(call) ::ragcore::gpu::check_cuda((call), #call)

// Rows are padded to a multiple of this many elements (zeros), so every row is
// a whole number of 16-byte chunks for any storage type and any dim.
constexpr size_t kRowAlign = 16;
inline size_t padded_dim(size_t dim) { return (dim + kRowAlign - 1) / kRowAlign * kRowAlign; }

// One 16-byte chunk of a stored row, widened to float32.
template <class T> struct Chunk;
template <> struct Chunk<float> {
  static constexpr int kElems = 4;
  __device__ static void unpack(uint4 v, float* x) {
    x[0] = __uint_as_float(v.x); x[1] = __uint_as_float(v.y);
    x[2] = __uint_as_float(v.z); x[3] = __uint_as_float(v.w);
  }
};
template <> struct Chunk<__half> {
  static constexpr int kElems = 8;
  __device__ static void unpack(uint4 v, float* x) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
      x[2 * i] = f.x; x[2 * i + 1] = f.y;
    }
  }
};
template <> struct Chunk<__nv_bfloat16> {
  static constexpr int kElems = 8;
  __device__ static void unpack(uint4 v, float* x) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {  // bf16 is the upper half of a float32
      x[2 * i] = __uint_as_float(w[i] << 16);
      x[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
    }
  }
};

// A result as one 64-bit key whose unsigned order is the ranking order: the
// score's bits made order-preserving in the high half, and the complement of
// the id's rank in the low half, so equal scores rank the smaller id first.
__device__ __forceinline__ uint64_t result_key(float score, uint32_t rank) {
  const uint32_t u = __float_as_uint(score + 0.0f);  // + 0.0f turns -0 into +0
  const uint32_t ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<uint64_t>(ordered) << 32) | (0xFFFFFFFFu - rank);
}
__device__ __forceinline__ float key_score(uint64_t key) {
  const uint32_t ordered = static_cast<uint32_t>(key >> 32);
  return __uint_as_float((ordered & 0x80000000u) ? (ordered & 0x7FFFFFFFu) : ~ordered);
}
__device__ __forceinline__ uint32_t key_rank(uint64_t key) {
  return 0xFFFFFFFFu - static_cast<uint32_t>(key);
}

// What a scoring kernel needs to score one chunk of corpus rows against one
// group of queries and keep the candidates that can still enter the top k.
struct ChunkParams {
  const void* rows;          // corpus, padded rows of `padded_dim` elements
  const float* sq_norms;     // per corpus row (L2) or null (inner product)
  const int32_t* ranks;      // per corpus row: rank of its id
  int64_t row_begin;         // the chunk: rows [row_begin, row_begin + row_count)
  int64_t row_count;
  int padded_dim;
  const float* queries;      // group's queries, padded to padded_dim (float32)
  const float* q_sq_norms;   // per query (L2) or null
  int n_queries;
  const float* thresholds;   // per query: the current k-th best score (-inf at first)
  uint32_t* counts;          // per query: candidates appended so far
  uint64_t* candidates;      // query j appends at candidates + j * stride + offset
  int64_t stride;
  int64_t offset;
  bool dense;                // first chunk: every row is written at its own slot
  // Tensor-core path only: the group's queries scaled by a power of two and split
  // into 2 (fp16) or 3 (bf16) storage-type terms whose sum is the float32 query.
  const void* split_queries; // term t of query j: split_queries + t * split_stride + j * padded_dim
  int64_t split_stride;
  const float* inv_scales;   // per query: undoes the power-of-two scaling
};

__device__ __forceinline__ float final_score(const ChunkParams& p, float dot, int64_t row, int q) {
  return p.sq_norms ? 2.0f * dot - p.sq_norms[row] - p.q_sq_norms[q] : dot;
}

}  // namespace ragcore::gpu
