// What a query algorithm needs to score one query term: its contribution to a
// document and upper bounds of that contribution over a block or a whole list.
//
// A document's score is base + the sum, in query order, of the contributions
// of the query terms it contains, where
//   contribution = weight * (g(tf, norm) - g0),  weight = multiplicity * idf,
//   base         = sum over query terms of weight * g0
// (bm25l and bm25+ have g0 > 0: every document gets the base score). The index
// keeps g(tf, norm) - g0 of every posting (TermCache), so every algorithm reads
// the same numbers and adds them in the same order: their scores are
// bit-identical, and the block bounds are exact maxima.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ragcore/posting_list.h"

namespace ragcore {

// Per term, under the current statistics: each posting's g(tf, norm) - g0 in
// list order (float32, like the scores), and its maximum per block and over the
// list. bm25_index.cpp computes it on the term's first query after a change.
struct TermCache {
  static constexpr size_t kBestBlocks = 16;
  std::vector<float> excess;
  std::vector<float> block_max;
  float list_max = 0.0f;
  std::vector<uint32_t> best_blocks;  // up to kBestBlocks blocks of highest maximum, best first
};

class TermScorer {
 public:
  TermScorer(const PostingList& list, const TermCache& cache, double weight, size_t slot)
      : list_(&list), cache_(&cache), weight_(weight), slot_(slot),
        list_bound_(bound(cache.list_max)) {}

  const PostingList& list() const { return *list_; }
  const TermCache& cache() const { return *cache_; }
  size_t slot() const { return slot_; }  // position in query order

  // The contribution of the posting at this position of the list.
  double score(size_t position) const { return weight_ * cache_->excess[position]; }

  // Upper bounds; never negative, since a document without the term gets 0 from it.
  double list_bound() const { return list_bound_; }
  double block_bound(size_t block) const { return bound(cache_->block_max[block]); }

 private:
  double bound(float max_excess) const {
    // A margin for adding bounds and scores in different orders.
    return weight_ <= 0 ? 0.0 : weight_ * max_excess * (1.0 + 1e-9);
  }

  const PostingList* list_;
  const TermCache* cache_;
  double weight_;
  size_t slot_;
  double list_bound_;
};

}  // namespace ragcore
