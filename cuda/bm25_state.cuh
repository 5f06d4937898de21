// What the two BM25 search plans (bm25_search.cu, bm25_pruned.cu) share: the
// device buffers of a DeviceBm25 and launch helpers.
#pragma once

#include <algorithm>
#include <memory>

#include "device_buffer.cuh"
#include "gpu_bm25.h"

namespace ragcore::gpu {

struct DeviceBm25::Buffers {
  std::shared_ptr<DeviceBuffer> docs, values, ranks, sorted_ids;
  // The pruned plan: the CSR offsets, and per dense term a bitmap of its slots
  // (n_words 64-bit words) with the set bits before each word, so a probe finds
  // a posting's position with one popcount.
  std::shared_ptr<DeviceBuffer> offsets, dense_index, bits, rank_before;
  int64_t n_words = 0;
};

constexpr int kBm25Threads = 256;

inline unsigned bm25_blocks(int64_t n, int64_t cap) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min((n + kBm25Threads - 1) / kBm25Threads, cap)));
}

}  // namespace ragcore::gpu
