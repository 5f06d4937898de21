// What both GPU BM25 plans read postings by (see gpu_bm25.h).
#pragma once

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

}  // namespace ragcore::gpu
