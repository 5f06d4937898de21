// What both GPU BM25 plans read postings by (see gpu_bm25.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ragcore::gpu {

// The postings one query adds at one query position: list[begin, begin + count)
// of its term, times weight, into accumulator row `row`. `first` numbers the
// segment's first posting among all postings of its launch (segments ascend).
struct Bm25Segment {
  int64_t begin;
  int64_t first;
  double weight;
  int64_t row;
};

// The segment holding posting number g of a launch: the last with first <= g.
__device__ __forceinline__ Bm25Segment segment_of(const Bm25Segment* segs, int n_segs, int64_t g) {
  int lo = 0, hi = n_segs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (segs[mid].first <= g) lo = mid; else hi = mid - 1;
  }
  return segs[lo];
}

}  // namespace ragcore::gpu
