// BM25 scoring on an NVIDIA GPU: host-side interface, free of CUDA types so
// that the pybind11 bindings compile with the ordinary C++ compiler.
//
// The device holds every posting of the CPU index as (slot, g(tf, norm) - g0),
// grouped by term (CSR), which is what the CPU query algorithms add. A batch of
// queries is scored term-at-a-time into per-query accumulators: one launch per
// query position adds, for every query of the group, the contributions of its
// term at that position, in double precision and without fused multiply-adds,
// so each document's score is the same sum, added in the same order and rounded
// the same way as on the CPU. The top k then comes from a pass over the
// accumulators that appends each document whose (score, id rank) beats the
// query's current k-th best, merged between chunks of documents (select.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace ragcore::gpu {

struct Bm25SearchArgs {
  // Flattened queries as Bm25Index::weigh_queries returns them: query q holds
  // terms[offsets[q] .. offsets[q+1]) in query order with their weights (term
  // -1: skipped), and base[q] is its score of a document without any query term.
  const int64_t* terms = nullptr;
  const double* weights = nullptr;
  const int64_t* offsets = nullptr;
  const double* base = nullptr;
  size_t nq = 0;
  size_t k = 0;
  float* out_scores = nullptr;  // host, nq x k
  int64_t* out_ids = nullptr;   // host, nq x k
  // Knobs for tests and benchmarks (0 = automatic).
  size_t first_chunk_rows = 0;  // documents selected from before a threshold exists
  size_t max_chunk_rows = 0;    // later chunks grow up to this many documents
  size_t max_group = 0;         // queries scored together
};

class DeviceBm25 {
 public:
  // offsets: n_terms + 1 (CSR); docs, values: offsets[n_terms] postings;
  // rank_of_slot: n_slots ranks of the slots' ids among the live ids (-1 for a
  // removed slot); sorted_ids: the live ids ascending (n_live).
  DeviceBm25(int device, const int64_t* offsets, size_t n_terms, const uint32_t* docs,
             const float* values, const int32_t* rank_of_slot, size_t n_slots,
             const int64_t* sorted_ids, size_t n_live);
  ~DeviceBm25();
  DeviceBm25(const DeviceBm25&) = delete;
  DeviceBm25& operator=(const DeviceBm25&) = delete;

  void search(const Bm25SearchArgs& a) const;
  size_t device_bytes() const;
  size_t num_terms() const { return offsets_.size() - 1; }

  struct Buffers;

 private:
  int device_;
  size_t n_slots_, n_live_;
  std::vector<int64_t> offsets_;  // host copy: queries are cut into posting ranges here
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace ragcore::gpu
