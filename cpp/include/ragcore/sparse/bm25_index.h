// The BM25 inverted index: one compressed PostingList per term, per-document
// lengths and external ids, and exact collection statistics.
//
// Documents get consecutive internal numbers in the order they are added, so
// adding appends to the end of posting lists; removing filters the affected
// blocks of the lists that hold removed documents. Neither rebuilds the index,
// and both keep N, the total length and every df exact.
//
// Terms are dense ids chosen by the caller (the Python layer owns the
// vocabulary). Thread safety: search and get_scores may run concurrently with
// each other; add and remove take the index exclusively.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "ragcore/sparse/scoring.h"
#include "ragcore/util/filter.h"
#include "ragcore/sparse/posting_list.h"
#include "ragcore/sparse/query/term_scorer.h"

namespace ragcore {

// Crosses to Python as ragcore._core.QueryAlgorithm (cpp/bindings/sparse_bindings.cpp).
enum class QueryAlgorithm : int {
  Auto = 0, Exhaustive = 1, MaxScore = 2, BlockMaxWand = 3, BlockMaxPruning = 4
};

// A batch of queries: query q is terms[offsets[q] .. offsets[q+1]) with the
// matching weights (how often the term occurs in the query), in query order,
// each term at most once.
struct QueryBatch {
  const int64_t* terms;
  const double* weights;
  const int64_t* offsets;
  size_t nq;
};

struct Accumulator;

class Bm25Index {
 public:
  explicit Bm25Index(const Bm25Params& params);
  ~Bm25Index();

  const Bm25Params& params() const { return params_; }

  // Adds n_docs documents: document d's words are words[offsets[d] ..
  // offsets[d+1]), each mapped through word_to_term (a negative term drops the
  // word, e.g. a stopword). ext_ids must be new and distinct (checked by the
  // caller; see has_ids).
  void add(const uint32_t* words, const int64_t* offsets, size_t n_docs, const int64_t* word_to_term,
           size_t n_words, const int64_t* ext_ids, int n_threads);

  // Removes the documents with these external ids (all must be present).
  void remove(const int64_t* ext_ids, size_t n, int n_threads);

  // out[i] = whether ext_ids[i] is in the index.
  void has_ids(const int64_t* ext_ids, size_t n, uint8_t* out) const;

  // Top-k of each query into scores/ids [nq, k]; algorithm_used[q] (when not null)
  // gets the QueryAlgorithm code that ran (never Auto). allow: the documents a result may
  // be (by external id, or by slot when allow.by_row); the hits are exactly the
  // top-k of the allowed documents, whatever the algorithm.
  void search(const QueryBatch& queries, size_t k, QueryAlgorithm algorithm, int n_threads,
              float* scores, int64_t* ids, uint8_t* algorithm_used,
              const AllowFilter& allow = AllowFilter()) const;

  // Scores of one query for every live document, in internal order (live_ids()).
  void get_scores(const int64_t* terms, const double* weights, size_t n, float* out) const;

  // Statistics given from outside, e.g. summed over the shards of a sharded index:
  // live documents, their total length, and the document frequency of each query
  // term (doc_freqs runs parallel to a QueryBatch's terms).
  struct Statistics {
    uint64_t n_docs;
    uint64_t total_length;
    const int64_t* doc_freqs;
  };

  // search and get_scores under those statistics: idf from the given df and N,
  // length norms from the given average length. A query term is this index's term
  // id, or -1 where this index lacks it (it then only adds to the base); a term of
  // df 0 is skipped. Exhaustive; the same numbers, added in the same order, as an
  // index holding every shard's documents computes. Throws std::invalid_argument
  // when the statistics count less than this index holds.
  void search_with_statistics(const QueryBatch& queries, const Statistics& stats, size_t k,
                              int n_threads, float* scores, int64_t* ids,
                              const AllowFilter& allow = AllowFilter()) const;
  void get_scores_with_statistics(const int64_t* terms, const double* weights, size_t n,
                                  const Statistics& stats, float* out) const;

  // What the GPU index scores with, so that it adds the same numbers in the same
  // order as search: every posting as (slot, g(tf, norm) - g0) grouped by term
  // (CSR: term t holds [offsets[t], offsets[t+1])), and the external id of every
  // slot (-1 once removed).
  struct Impacts {
    std::vector<int64_t> offsets;
    std::vector<uint32_t> docs;
    std::vector<float> values;
    std::vector<int64_t> slot_ids;
  };
  Impacts impacts(int n_threads) const;

  // Each query term's weight (multiplicity * idf) and each query's base score,
  // exactly as search computes them; a term no live document holds gets term -1
  // (it contributes nothing, not even to the base).
  void weigh_queries(const QueryBatch& queries, int64_t* out_terms, double* out_weights,
                     double* out_base) const;

  size_t num_docs() const;       // live documents
  uint64_t total_length() const;
  size_t num_terms() const;
  std::vector<int64_t> live_ids() const;
  std::vector<int64_t> slot_ids() const;  // external id per slot, -1 once removed
  std::vector<int64_t> doc_freqs() const;
  size_t memory_bytes() const;   // postings, metadata and per-document arrays
  size_t postings_bytes() const; // compressed posting payload only

  // Flat arrays for saving: per slot (ext id, -1 if removed) and true length;
  // per term the posting count and the end of its bytes in `postings`.
  struct Arrays {
    std::vector<int64_t> doc_ids, doc_lengths, list_sizes, list_ends;
    std::vector<uint8_t> postings;
  };
  Arrays to_arrays() const;
  // Throws std::invalid_argument when the arrays are inconsistent.
  static std::unique_ptr<Bm25Index> from_arrays(const Bm25Params& params, const Arrays& a);

 private:
  struct PreparedQuery;
  // with_ranges: the terms' caches get their DocRanges too (block-max pruning only).
  PreparedQuery prepare(const int64_t* terms, const double* weights, size_t n,
                        bool with_ranges = false) const;
  // The weight of a query term under the current statistics, or false when no
  // live document holds it.
  bool term_weight(int64_t term, double multiplicity, double& weight) const;
  // g(tf, norm) - g0 of one posting: what TermCache keeps and the GPU adds.
  float posting_excess(uint32_t tf, uint32_t doc) const {
    return static_cast<float>(bm25_tf_part(params_, tf, norm_[doc]) - g0_);
  }
  // allowed: one byte per slot (non-zero: may be returned), or null for all.
  class AccumulatorLease;  // one from the pool, taken on first use (exhaustive only)
  void run_query(const PreparedQuery& q, size_t k, QueryAlgorithm algorithm, AccumulatorLease& acc,
                 float* scores, int64_t* ids, uint8_t* used, const uint8_t* allowed) const;
  void refresh_norms();
  // Statistics checks and one query's sums under them (bm25_statistics.cpp); returns the base.
  void check_statistics(const Statistics& stats, const int64_t* terms, size_t n) const;
  double accumulate_with_statistics(const int64_t* terms, const double* weights,
                                    const int64_t* doc_freqs, size_t n, const Statistics& stats,
                                    Accumulator& acc) const;
  // Each posting's score part and the block maxima of a term under the current
  // statistics, computed on the term's first query after a change (one pass over
  // its list) and kept until the next change. Queries then read one float per
  // posting instead of computing the formula, and get exact block-max bounds;
  // adds and removes pay nothing for it.
  // Its DocRanges (block-max pruning's) are built only with_ranges, on the term's
  // first such query: up to 13 bytes per posting that the other algorithms never read.
  const TermCache& term_cache(size_t term, bool with_ranges = false) const;
  static constexpr uint8_t kCacheReady = 1, kCacheWithRanges = 2;  // cache_ready_ values
  void refresh_id_order();  // after every change: sets ids_ascending_
  std::unique_ptr<Accumulator> take_accumulator() const;
  void give_back(std::unique_ptr<Accumulator> acc) const;
  // The filter by slot, one byte each (empty when allow is inactive); the workers of a batch
  // of nq queries (one query runs inline, without asking how many cores there are).
  std::vector<uint8_t> allowed_slots(const AllowFilter& allow) const;
  static int query_workers(size_t nq, int n_threads);

  Bm25Params params_;
  std::vector<PostingList> lists_;
  std::vector<int64_t> ext_ids_;        // per slot; -1 once removed
  std::vector<uint32_t> lengths_;       // per slot, true length
  std::vector<uint32_t> scoring_len_;   // per slot, as the formula sees it
  std::vector<double> norm_;            // per slot, 1 - b + b * scoring_len / avgdl
  std::vector<std::pair<int64_t, uint32_t>> by_ext_id_;  // live (ext id, slot), sorted
  bool ids_ascending_ = true;  // live external ids ascend with their slots
  size_t n_live_ = 0;
  uint64_t total_length_ = 0;
  double avgdl_ = 1.0;
  double g0_ = 0.0;     // the tf part of an absent term
  mutable std::vector<TermCache> caches_;
  mutable std::unique_ptr<std::atomic<uint8_t>[]> cache_ready_;
  mutable std::mutex cache_mutex_;

  mutable std::shared_mutex mutex_;
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Accumulator>> pool_;
};

}  // namespace ragcore
