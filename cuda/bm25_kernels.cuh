// The two kernels of the exhaustive GPU BM25 plan (see gpu_bm25.h).
#pragma once

#include <limits>

#include "bm25_segment.cuh"
#include "common.cuh"
#include "select.h"

namespace ragcore::gpu {

// Documents per "touched" flag. A flag per document costs the scatter a 32-byte
// memory transaction per posting for one byte; a flag per 32 documents (the
// 256 bytes of their float64 sums) is written once per warp where a list is
// dense, and still lets the select pass skip the sums of untouched runs.
constexpr int64_t kDocsPerFlag = 32;

// The accumulator of a document no query term has reached: a NaN (cudaMemset
// with 0xFF bytes writes one too), never a sum of finite contributions.
constexpr double kUnheld = std::numeric_limits<double>::quiet_NaN();

// One thread per posting of the launch: finds its segment by binary search and
// adds weight * value to the document's accumulator. A query holds each term
// once, so no two threads of a launch touch the same accumulator: plain stores,
// no atomics, and each sum grows in query order. __dmul_rn / __dadd_rn are
// never fused into an FMA, matching the CPU's separate multiply and add.
// An accumulator no posting has reached holds kUnheld (a NaN), which tells the
// select pass that the document holds no query term (not a result); the first
// posting adds to 0.0, as the CPU's sums start.
// touched: one byte per kDocsPerFlag documents per query (every writer writes 1).
__global__ void bm25_scatter_kernel(const Bm25Segment* segs, int n_segs, int64_t total,
                                    const uint32_t* docs, const float* values, double* acc,
                                    uint8_t* touched, int64_t n_slots, int64_t n_flags) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < total;
       g += step) {
    const Bm25Segment s = segment_of(segs, n_segs, g);
    const int64_t p = s.begin + (g - s.first);
    const uint32_t doc = docs[p];
    const int64_t at = s.row * n_slots + doc;
    const double sum = acc[at];
    acc[at] = __dadd_rn(isnan(sum) ? 0.0 : sum, __dmul_rn(s.weight, static_cast<double>(values[p])));
    touched[s.row * n_flags + doc / kDocsPerFlag] = 1;
  }
}

// Grid: (blocks over the chunk, queries of the group). Scores documents
// [row_begin, row_begin + row_count) of query j as float32(base + sum), the
// CPU's rounding, and appends those whose key beats the query's k-th best kept
// so far (keys are unique: ids break ties). Only documents holding a query
// term are results (as on the CPU); sums of untouched runs are kUnheld and not
// read; every sum read is reset to kUnheld for the next group (the flags are
// cleared after the group's last chunk).
__global__ void bm25_select_kernel(Selection s, const double* base, int64_t row_begin,
                                   int64_t row_count, const int32_t* ranks, double* acc,
                                   const uint8_t* touched, int64_t n_slots, int64_t n_flags) {
  const int j = blockIdx.y;
  const uint64_t floor = s.kept[j] == s.k ? s.candidates[j * s.stride + s.k - 1] : 0;
  const double b = base[j];
  uint64_t* out = s.candidates + j * s.stride + s.k;
  const int lane = threadIdx.x & 31;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  // The loop bound is the same for the whole block, so every lane reaches the ballot.
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x; first < row_count;
       first += step) {
    const int64_t r = first + threadIdx.x;
    bool pass = false;
    uint64_t key = 0;
    if (r < row_count) {
      const int64_t doc = row_begin + r;
      const int64_t at = j * n_slots + doc;
      double sum = kUnheld;
      if (touched[j * n_flags + doc / kDocsPerFlag]) {
        sum = acc[at];
        acc[at] = kUnheld;
      }
      const int32_t rank = ranks[doc];
      if (rank >= 0 && !isnan(sum)) {
        key = result_key(__double2float_rn(__dadd_rn(b, sum)), static_cast<uint32_t>(rank));
        pass = key > floor;
      }
    }
    const unsigned mask = __ballot_sync(0xFFFFFFFFu, pass);
    if (mask == 0) continue;
    uint32_t at = 0;
    if (lane == 0) at = atomicAdd(s.counts + j, static_cast<uint32_t>(__popc(mask)));
    at = __shfl_sync(0xFFFFFFFFu, at, 0);
    if (pass) out[at + __popc(mask & ((1u << lane) - 1))] = key;
  }
}

}  // namespace ragcore::gpu
