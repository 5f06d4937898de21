// What a query algorithm needs to score one query term: its contribution to a
// document and upper bounds of that contribution over a block or a whole list.
//
// A document's score is base + the sum, in query order, of the contributions
// of the query terms it contains, where
//   contribution = weight * (g(ntf) - g(0)),  weight = multiplicity * idf,
//   base         = sum over query terms of weight * g(0)
// (bm25l and bm25+ have g(0) > 0: every document gets the base score). Every
// algorithm adds contributions in the same order, so their scores are
// bit-identical.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ragcore/bm25_scoring.h"
#include "ragcore/posting_list.h"

namespace ragcore {

struct ScoringContext {
  Bm25Params params;
  const double* norm;  // per doc: 1 - b + b * scoring length / avgdl
  double avgdl;
  double g0;  // g(0)
};

class TermScorer {
 public:
  TermScorer(const ScoringContext& ctx, const PostingList& list, double weight, size_t slot)
      : ctx_(&ctx), list_(&list), weight_(weight), slot_(slot),
        list_bound_(bound(list.max_tf(), list.min_len_over_tf())) {}

  const PostingList& list() const { return *list_; }
  size_t slot() const { return slot_; }  // position in query order

  double score(uint32_t tf, uint32_t doc) const {
    const double ntf = tf / ctx_->norm[doc];
    return weight_ * (bm25_tf_part(ctx_->params, ntf) - ctx_->g0);
  }

  // Upper bounds; never negative, since a document without the term gets 0 from it.
  double list_bound() const { return list_bound_; }
  double block_bound(const BlockMeta& m) const { return bound(m.max_tf, m.min_len_over_tf); }

 private:
  double bound(uint32_t max_tf, float min_len_over_tf) const {
    if (weight_ <= 0 || max_tf == 0) return 0.0;
    // ntf = 1 / ((1 - b) / tf + b * (len / tf) / avgdl) is largest at the largest
    // tf and the smallest len / tf, which need not come from the same posting.
    const double b = ctx_->params.b;
    const double ntf = 1.0 / ((1.0 - b) / max_tf + b * min_len_over_tf / ctx_->avgdl);
    // The margin covers rounding: a computed score must never exceed its bound.
    const double excess = bm25_tf_part(ctx_->params, ntf) - ctx_->g0;
    return weight_ * (excess * (1.0 + 1e-9) + 1e-12 * (1.0 + ctx_->g0));
  }

  const ScoringContext* ctx_;
  const PostingList* list_;
  double weight_;
  size_t slot_;
  double list_bound_;
};

}  // namespace ragcore
