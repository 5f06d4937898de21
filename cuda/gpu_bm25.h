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
//
// That exhaustive plan costs every posting of every query term. The default
// plan prunes first (bm25_pruned.cu, reference.bm25_candidate_search): terms
// held by fewer than dense_min_df documents are essential, and only the
// documents holding one are candidates, each scored exactly (every query term
// probed in query order: a bitmap for dense terms, a binary search for the
// others). The other documents hold only dense terms, whose weights times their
// largest score parts bound them; where the k-th best candidate beats that bound
// the candidates' top k is exact, else the query is scored exhaustively.
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
  uint8_t* out_exhaustive = nullptr;  // optional, host, nq: 1 where the query was scored exhaustively
  bool exhaustive = false;      // skip the pruned plan
  // Knobs for tests and benchmarks (0 = automatic).
  size_t first_chunk_rows = 0;  // documents selected from before a threshold exists
  size_t max_chunk_rows = 0;    // later chunks grow up to this many documents
  size_t max_group = 0;         // queries scored together
};

class DeviceBm25 {
 public:
  // offsets: n_terms + 1 (CSR); docs, values: offsets[n_terms] postings, docs
  // ascending within a term; rank_of_slot: n_slots ranks of the slots' ids among
  // the live ids (-1 for a removed slot); sorted_ids: the live ids ascending
  // (n_live). Terms held by dense_min_df documents or more are dense (0: one in
  // 16 slots, at least 1).
  DeviceBm25(int device, const int64_t* offsets, size_t n_terms, const uint32_t* docs,
             const float* values, const int32_t* rank_of_slot, size_t n_slots,
             const int64_t* sorted_ids, size_t n_live, size_t dense_min_df = 0);
  ~DeviceBm25();
  DeviceBm25(const DeviceBm25&) = delete;
  DeviceBm25& operator=(const DeviceBm25&) = delete;

  void search(const Bm25SearchArgs& a) const;
  size_t device_bytes() const;
  size_t num_terms() const { return offsets_.size() - 1; }

  size_t dense_min_df() const { return dense_min_df_; }

  struct Buffers;

 private:
  void search_exhaustive(const Bm25SearchArgs& a) const;
  // Scores what it can with the pruned plan; returns per query whether the
  // answer written is exact (0: the query needs the exhaustive plan).
  std::vector<uint8_t> search_pruned(const Bm25SearchArgs& a) const;
  // search_pruned's steps (bm25_pruned.cu): each query's essential postings and bound,
  // then the host arrays of one group of queries.
  struct PrunedBounds;
  struct GroupQueries;
  PrunedBounds pruned_bounds(const Bm25SearchArgs& a) const;
  GroupQueries group_queries(const Bm25SearchArgs& a, const std::vector<size_t>& rows) const;
  bool is_dense(int64_t term) const { return dense_index_[term] >= 0; }

  int device_;
  size_t n_slots_, n_live_, dense_min_df_;
  std::vector<int64_t> offsets_;  // host copy: queries are cut into posting ranges here
  std::vector<int32_t> dense_index_;  // per term: its bitmap's number, -1 if not dense
  std::vector<float> list_max_;       // per term: its largest score part
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace ragcore::gpu
