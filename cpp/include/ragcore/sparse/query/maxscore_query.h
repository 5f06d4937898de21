// MaxScore (Turtle & Flood 1995), document at a time, as in PISA's
// maxscore_query: terms sorted by their list bound; the lowest-bound terms
// whose bounds sum below the entry threshold are "non-essential" - a document
// found only in them cannot enter - so candidates come from the essential
// lists and the others are only probed, lowest bound last, while the document
// can still make it, bounded first by the list bounds and then by the maxima of
// the blocks that would hold it (block-max MaxScore, Chakrabarti et al., WSDM 2011).
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "ragcore/sparse/query/doc_sink.h"
#include "ragcore/sparse/query/posting_cursor.h"
#include "ragcore/sparse/query/term_scorer.h"

namespace ragcore {

inline void maxscore_query(const std::vector<TermScorer>& terms, DocSink& sink) {
  const size_t n = terms.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return terms[a].list_bound() < terms[b].list_bound();
  });
  std::vector<PostingCursor> cursors;
  cursors.reserve(n);
  std::vector<double> prefix(n);  // prefix[i]: sum of the list bounds of order[0..i]
  std::vector<double> block_prefix(n);  // the same over the blocks holding a candidate
  for (size_t i = 0; i < n; ++i) {
    cursors.emplace_back(terms[order[i]].list());
    prefix[i] = (i ? prefix[i - 1] : 0.0) + terms[order[i]].list_bound();
  }
  size_t first_essential = 0;
  auto update_essential = [&] {
    while (first_essential < n && !sink.may_enter(prefix[first_essential])) ++first_essential;
  };
  auto min_essential_doc = [&] {
    uint32_t d = kEndDoc;
    for (size_t i = first_essential; i < n; ++i) d = std::min(d, cursors[i].doc());
    return d;
  };
  // Whether any document in [doc, end of the essential cursors' current blocks]
  // may enter, bounded by those blocks' maxima and the non-essential lists (their
  // block maximum where one block covers the range). If none may, the cursors
  // skip the range; else the range needs no new check (`checked_until`).
  uint32_t checked_until = 0;
  bool checked = false;
  auto region_may_enter = [&](uint32_t doc) {
    uint32_t end = kEndDoc;
    for (size_t i = first_essential; i < n; ++i)
      if (cursors[i].doc() != kEndDoc) end = std::min(end, cursors[i].block_last_doc());
    double bound = 0.0;
    for (size_t i = first_essential; i < n; ++i)
      if (cursors[i].doc() <= end) bound += terms[order[i]].block_bound(cursors[i].block_index());
    for (size_t i = 0; i < first_essential; ++i) {
      PostingCursor& c = cursors[i];
      c.shallow_next_geq(doc);
      if (c.shallow_done()) continue;
      bound += c.shallow_block().last_doc >= end ? terms[order[i]].block_bound(c.shallow_index())
                                                 : terms[order[i]].list_bound();
    }
    checked_until = end;
    checked = true;
    return sink.may_enter(bound);
  };
  update_essential();
  SlotSum sum(n);
  for (uint32_t doc = min_essential_doc(); doc != kEndDoc && first_essential < n;) {
    if ((!checked || doc > checked_until) && !region_may_enter(doc)) {
      for (size_t i = first_essential; i < n; ++i) cursors[i].next_geq(checked_until + 1);
      checked = false;
      doc = checked_until == kEndDoc ? kEndDoc : min_essential_doc();
      continue;
    }
    // Score the essential lists (a cached float each) and find the next candidate.
    double partial = 0.0;
    uint32_t next = kEndDoc;
    for (size_t i = first_essential; i < n; ++i) {
      PostingCursor& c = cursors[i];
      if (c.doc() == doc) {
        const double v = terms[order[i]].score(c.position());
        sum.add(order[i], v);
        partial += v;
        c.next();
      }
      next = std::min(next, c.doc());
    }
    // The non-essential lists can add at most their list bounds, and at most the
    // maxima of the blocks that could hold the document (moved to without
    // decoding); probe them, highest bound first, while the document can enter.
    bool alive = first_essential == 0 || sink.may_enter(partial + prefix[first_essential - 1]);
    if (alive && first_essential > 0) {
      for (size_t i = 0; i < first_essential; ++i) {
        PostingCursor& c = cursors[i];
        c.shallow_next_geq(doc);
        const double block = c.shallow_done() ? 0.0 : terms[order[i]].block_bound(c.shallow_index());
        block_prefix[i] = (i ? block_prefix[i - 1] : 0.0) + block;
      }
      for (size_t i = first_essential; i-- > 0;) {
        if (!sink.may_enter(partial + block_prefix[i])) {
          alive = false;
          break;
        }
        const TermScorer& t = terms[order[i]];
        double v;
        if (t.has_doc_bits()) {
          if (!t.probe(doc, v)) continue;
        } else {
          PostingCursor& c = cursors[i];
          c.next_geq(doc);
          if (c.doc() != doc) continue;
          v = t.score(c.position());
        }
        sum.add(order[i], v);
        partial += v;
      }
    }
    if (alive && sink.push(doc, sum.take_total())) {
      const size_t before = first_essential;
      update_essential();
      if (first_essential != before) {
        next = min_essential_doc();
        checked = false;
      }
    } else if (!alive) {
      sum.clear();
    }
    doc = next;
  }
}

}  // namespace ragcore
