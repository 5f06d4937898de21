// Block-Max WAND (Ding & Suel 2011), as in PISA's block_max_wand_query:
// cursors kept sorted by current doc; the pivot is the first cursor at which
// the list bounds reach the entry threshold; the pivot document is scored only
// if the block bounds of the blocks holding it also reach the threshold,
// otherwise the cursors jump past the nearest block end.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "ragcore/sparse/query/doc_sink.h"
#include "ragcore/sparse/query/posting_cursor.h"
#include "ragcore/sparse/query/term_scorer.h"

namespace ragcore {

inline void block_max_wand_query(const std::vector<TermScorer>& terms, DocSink& sink) {
  const size_t n = terms.size();
  std::vector<PostingCursor> cursors;
  cursors.reserve(n);
  for (const TermScorer& t : terms) cursors.emplace_back(t.list());
  std::vector<size_t> ord(n);  // cursor indices by current doc
  std::iota(ord.begin(), ord.end(), 0);
  auto doc_at = [&](size_t p) { return cursors[ord[p]].doc(); };
  auto by_doc = [&](size_t a, size_t b) { return cursors[a].doc() < cursors[b].doc(); };
  std::sort(ord.begin(), ord.end(), by_doc);
  // After cursor ord[p] moved forward: restore the order (insertion step).
  auto bubble = [&](size_t p) {
    for (; p + 1 < n && doc_at(p) > doc_at(p + 1); ++p) std::swap(ord[p], ord[p + 1]);
  };
  SlotSum sum(n);
  while (true) {
    double bound = 0.0;
    size_t pivot = n;
    for (size_t p = 0; p < n && doc_at(p) != kEndDoc; ++p) {
      bound += terms[ord[p]].list_bound();
      if (sink.may_enter(bound)) {
        pivot = p;
        break;
      }
    }
    if (pivot == n) return;
    const uint32_t pivot_doc = doc_at(pivot);
    while (pivot + 1 < n && doc_at(pivot + 1) == pivot_doc) ++pivot;

    double block_bound = 0.0;
    for (size_t p = 0; p <= pivot; ++p) {
      PostingCursor& c = cursors[ord[p]];
      c.shallow_next_geq(pivot_doc);
      if (!c.shallow_done()) block_bound += terms[ord[p]].block_bound(c.shallow_index());
    }
    if (sink.may_enter(block_bound)) {
      if (doc_at(0) == pivot_doc) {
        for (size_t p = 0; p <= pivot; ++p) {
          PostingCursor& c = cursors[ord[p]];
          sum.add(ord[p], terms[ord[p]].score(c.position()));
          c.next();
        }
        sink.push(pivot_doc, sum.take_total());
        std::sort(ord.begin(), ord.end(), by_doc);
      } else {
        size_t p = pivot;
        while (doc_at(p) == pivot_doc) --p;  // doc_at(0) < pivot_doc, so this stops
        cursors[ord[p]].next_geq(pivot_doc);
        bubble(p);
      }
    } else {
      // No document up to the end of the nearest block can make it.
      uint64_t next = kEndDoc;
      size_t strongest = 0;
      for (size_t p = 0; p <= pivot; ++p) {
        const PostingCursor& c = cursors[ord[p]];
        if (!c.shallow_done()) next = std::min<uint64_t>(next, uint64_t{c.shallow_block().last_doc} + 1);
        if (terms[ord[p]].list_bound() > terms[ord[strongest]].list_bound()) strongest = p;
      }
      if (pivot + 1 < n) next = std::min<uint64_t>(next, doc_at(pivot + 1));
      if (next <= pivot_doc) next = uint64_t{pivot_doc} + 1;
      cursors[ord[strongest]].next_geq(static_cast<uint32_t>(std::min<uint64_t>(next, kEndDoc)));
      bubble(strongest);
    }
  }
}

}  // namespace ragcore
