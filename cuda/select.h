// Keeping the k best candidates per query between corpus chunks.
//
// Each query of a group owns a region of `stride` = k + capacity keys in
// `candidates`: its current top-k sits at the end of the first k slots, the
// chunk's new candidates are appended after them, so the two form one
// contiguous segment. After a chunk, the segments are sorted (CUB segmented
// sort, descending keys = best first, ties by id), the first k of each are kept,
// and the query's threshold becomes its k-th best score: later rows below it
// can never enter the top k, so the scoring kernels drop them at once.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "device_buffer.cuh"

namespace ragcore::gpu {

struct Selection {
  int n_queries = 0;
  int64_t k = 0;
  int64_t stride = 0;             // k + capacity
  uint64_t* candidates = nullptr; // n_queries * stride
  uint64_t* sorted = nullptr;     // n_queries * stride
  uint32_t* counts = nullptr;     // new candidates per query
  uint32_t* kept = nullptr;       // current top-k size per query (<= k)
  float* thresholds = nullptr;    // k-th best score so far, -inf until k are kept
  int64_t* begin = nullptr;       // segment bounds for the sort
  int64_t* end = nullptr;
  void* sort_temp = nullptr;
  size_t sort_temp_bytes = 0;
};

// Temporary bytes the segmented sort needs for this shape.
size_t selection_sort_temp_bytes(int n_queries, int64_t stride);
// Empty top-k, no candidates, thresholds -inf.
void selection_reset(const Selection& s, cudaStream_t stream);
// Marks `rows` candidates per query (a chunk scored in dense mode).
void selection_set_counts(const Selection& s, uint32_t rows, cudaStream_t stream);
// Merges each query's new candidates into its top-k and updates the thresholds.
void selection_merge(const Selection& s, cudaStream_t stream);
// Writes the top-k as scores and ids (sorted_ids maps rank to id), padding
// missing results with id -1 and score -inf. Outputs are device pointers,
// row-major n_queries x k.
void selection_write(const Selection& s, const int64_t* sorted_ids, float* out_scores,
                     int64_t* out_ids, cudaStream_t stream);

// The top-k selection of a group of queries and the device memory it works in: the
// candidates, their sorted copy, the per-query bounds, thresholds and counts, and the
// segmented sort's scratch.
struct SelectionBuffers {
  SelectionBuffers(int64_t k, int64_t capacity, int64_t group, cudaStream_t stream)
      : candidates(group * (k + capacity) * sizeof(uint64_t), stream),
        sorted(group * (k + capacity) * sizeof(uint64_t), stream),
        per_query(group * (2 * sizeof(uint32_t) + sizeof(float) + 2 * sizeof(int64_t)), stream),
        sort_temp(selection_sort_temp_bytes(static_cast<int>(group), k + capacity), stream) {
    sel.k = k;
    sel.stride = k + capacity;
    sel.n_queries = static_cast<int>(group);
    sel.candidates = candidates.as<uint64_t>();
    sel.sorted = sorted.as<uint64_t>();
    sel.begin = per_query.as<int64_t>();
    sel.end = sel.begin + group;
    sel.thresholds = reinterpret_cast<float*>(sel.end + group);
    sel.counts = reinterpret_cast<uint32_t*>(sel.thresholds + group);
    sel.kept = sel.counts + group;
    sel.sort_temp_bytes = selection_sort_temp_bytes(sel.n_queries, sel.stride);
    sel.sort_temp = sort_temp.as<void>();
  }
  Scratch candidates, sorted, per_query, sort_temp;
  Selection sel;
};

}  // namespace ragcore::gpu
