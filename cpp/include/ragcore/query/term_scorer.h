// What a query algorithm needs to score one query term: its contribution to a
// document and upper bounds of that contribution over a block or a whole list.
//
// The bounds come from BlockMaxima: the largest g(tf, norm) of each block under the
// current statistics, so they are exact up to the rounding margin.
//
// A document's score is base + the sum, in query order, of the contributions
// of the query terms it contains, where
//   contribution = weight * (g(tf, norm) - g0),  weight = multiplicity * idf,
//   base         = sum over query terms of weight * g0
// (bm25l and bm25+ have g0 > 0: every document gets the base score). Every
// algorithm adds contributions in the same order, so their scores are
// bit-identical.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ragcore/bm25_scoring.h"
#include "ragcore/posting_list.h"

namespace ragcore {

// Per term: the largest g(tf, norm) of each block and of the whole list, rounded up to
// float (bm25_index.cpp computes them on a term's first query after a change).
struct BlockMaxima {
  std::vector<float> blocks;
  float list = 0.0f;
};

struct ScoringContext {
  Bm25Params params;
  const double* norm;  // per doc: 1 - b + b * scoring length / avgdl
  double avgdl;
  double g0;  // the tf part of an absent term (bm25_absent_part)
};

class TermScorer {
 public:
  TermScorer(const ScoringContext& ctx, const PostingList& list, const BlockMaxima& maxima,
             double weight, size_t slot)
      : ctx_(&ctx), list_(&list), maxima_(&maxima), weight_(weight), slot_(slot),
        list_bound_(bound(maxima.list)) {}

  const PostingList& list() const { return *list_; }
  size_t slot() const { return slot_; }  // position in query order

  double score(uint32_t tf, uint32_t doc) const {
    return weight_ * (bm25_tf_part(ctx_->params, tf, ctx_->norm[doc]) - ctx_->g0);
  }

  // Upper bounds; never negative, since a document without the term gets 0 from it.
  double list_bound() const { return list_bound_; }
  double block_bound(size_t block) const { return bound(maxima_->blocks[block]); }

 private:
  double bound(float max_tf_part) const {
    if (weight_ <= 0) return 0.0;
    // The margin covers rounding: a computed score must never exceed its bound.
    const double excess = static_cast<double>(max_tf_part) - ctx_->g0;
    return weight_ * (excess * (1.0 + 1e-9) + 1e-12 * (1.0 + ctx_->g0));
  }

  const ScoringContext* ctx_;
  const PostingList* list_;
  const BlockMaxima* maxima_;
  double weight_;
  size_t slot_;
  double list_bound_;
};

}  // namespace ragcore
