// Block-Max WAND (Ding & Suel 2011), after PISA's block_max_wand_query:
// cursors kept sorted by current doc; the pivot is the first cursor at which
// the list bounds reach the entry threshold; the pivot document is scored only
// if the block bounds of the blocks holding it also reach the threshold,
// otherwise the cursors jump past the nearest block end.
//
// Usage, per query: BlockMaxWandQuery(terms, sink).run();
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "ragcore/sparse/query/doc_sink.h"
#include "ragcore/sparse/query/posting_cursor.h"
#include "ragcore/sparse/query/term_scorer.h"

namespace ragcore {

class BlockMaxWandQuery {
 public:
  // Capabilities used: doc, position, next, next_geq; shallow_next_geq,
  // shallow_done, shallow_index and shallow_block to bound the blocks that
  // would hold the pivot without decoding them.
  using Cursor = PostingCursor;
  static_assert(is_block_max_cursor<Cursor>::value, "Block-Max WAND needs a block-max cursor");

  // terms in query order (their slots index the SlotSum); both must outlive the query.
  BlockMaxWandQuery(const std::vector<TermScorer>& terms, DocSink& sink)
      : terms_(terms), sink_(sink), n_(terms.size()), sum_(terms.size()) {
    cursors_.reserve(n_);
    for (const TermScorer& t : terms_) cursors_.emplace_back(t.list());
    ord_.resize(n_);
    std::iota(ord_.begin(), ord_.end(), 0);
    sort_by_doc();
  }

  // Offers every document that may enter to the sink, each with its exact sum.
  void run() {
    for (size_t pivot = find_pivot(); pivot != kNoPivot; pivot = find_pivot()) {
      const uint32_t pivot_doc = doc_at(pivot);
      while (pivot + 1 < n_ && doc_at(pivot + 1) == pivot_doc) ++pivot;  // all lists on it
      if (!blocks_may_enter(pivot, pivot_doc)) {
        skip_blocks(pivot, pivot_doc);
      } else if (doc_at(0) == pivot_doc) {
        score_pivot(pivot, pivot_doc);
      } else {
        advance_to_pivot(pivot, pivot_doc);
      }
    }
  }

 private:
  static constexpr size_t kNoPivot = ~size_t{0};

  uint32_t doc_at(size_t p) const { return cursors_[ord_[p]].doc(); }
  const TermScorer& term_at(size_t p) const { return terms_[ord_[p]]; }

  void sort_by_doc() {
    std::sort(ord_.begin(), ord_.end(),
              [&](size_t a, size_t b) { return cursors_[a].doc() < cursors_[b].doc(); });
  }

  // After the cursor at p moved forward: restores the order (an insertion step).
  void bubble(size_t p) {
    for (; p + 1 < n_ && doc_at(p) > doc_at(p + 1); ++p) std::swap(ord_[p], ord_[p + 1]);
  }

  // The first position at which the list bounds of the cursors up to it may
  // enter; kNoPivot when none (every later document is then out of reach).
  size_t find_pivot() const {
    double bound = 0.0;
    for (size_t p = 0; p < n_ && doc_at(p) != kEndDoc; ++p) {
      bound += term_at(p).list_bound();
      if (sink_.may_enter(bound)) return p;
    }
    return kNoPivot;
  }

  // Whether the pivot document may enter by the maxima of the blocks of the
  // cursors up to the pivot that would hold it (moved to without decoding).
  bool blocks_may_enter(size_t pivot, uint32_t pivot_doc) {
    double bound = 0.0;
    for (size_t p = 0; p <= pivot; ++p) {
      Cursor& c = cursors_[ord_[p]];
      c.shallow_next_geq(pivot_doc);
      if (!c.shallow_done()) bound += term_at(p).block_bound(c.shallow_index());
    }
    return sink_.may_enter(bound);
  }

  // Every cursor up to the pivot is on the pivot document: scores it in full.
  void score_pivot(size_t pivot, uint32_t pivot_doc) {
    for (size_t p = 0; p <= pivot; ++p) {
      Cursor& c = cursors_[ord_[p]];
      sum_.add(ord_[p], term_at(p).score(c.position()));
      c.next();
    }
    sink_.push(pivot_doc, sum_.take_total());
    sort_by_doc();
  }

  // Some cursor before the pivot is behind it: moves the last of them to it.
  void advance_to_pivot(size_t pivot, uint32_t pivot_doc) {
    size_t p = pivot;
    while (doc_at(p) == pivot_doc) --p;  // doc_at(0) < pivot_doc, so this stops
    cursors_[ord_[p]].next_geq(pivot_doc);
    bubble(p);
  }

  // No document up to the end of the nearest block can make it: moves the
  // cursor of highest list bound past that end (or to the next cursor's doc).
  void skip_blocks(size_t pivot, uint32_t pivot_doc) {
    uint64_t next = kEndDoc;  // 64 bits: a last doc + 1 may pass kEndDoc
    size_t strongest = 0;
    for (size_t p = 0; p <= pivot; ++p) {
      const Cursor& c = cursors_[ord_[p]];
      if (!c.shallow_done()) next = std::min<uint64_t>(next, uint64_t{c.shallow_block().last_doc} + 1);
      if (term_at(p).list_bound() > term_at(strongest).list_bound()) strongest = p;
    }
    if (pivot + 1 < n_) next = std::min<uint64_t>(next, doc_at(pivot + 1));
    if (next <= pivot_doc) next = uint64_t{pivot_doc} + 1;
    cursors_[ord_[strongest]].next_geq(static_cast<uint32_t>(std::min<uint64_t>(next, kEndDoc)));
    bubble(strongest);
  }

  const std::vector<TermScorer>& terms_;
  DocSink& sink_;
  const size_t n_;
  std::vector<Cursor> cursors_;  // cursors_[t] walks terms_[t]'s list
  std::vector<size_t> ord_;      // cursor indices by current doc
  SlotSum sum_;
};

}  // namespace ragcore
