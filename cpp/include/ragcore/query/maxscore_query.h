// MaxScore (Turtle & Flood 1995), document at a time, as in PISA's
// maxscore_query: terms sorted by their list bound; the lowest-bound terms
// whose bounds sum below the entry threshold are "non-essential" - a document
// found only in them cannot enter - so candidates come from the essential
// lists and the others are only probed, lowest bound last, while the document
// can still make it.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "ragcore/query/doc_sink.h"
#include "ragcore/query/posting_cursor.h"
#include "ragcore/query/term_scorer.h"

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
  std::vector<double> prefix(n);  // prefix[i]: sum of the bounds of order[0..i]
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
  update_essential();
  SlotSum sum(n);
  for (uint32_t doc = min_essential_doc(); doc != kEndDoc && first_essential < n;) {
    double partial = 0.0;
    for (size_t i = first_essential; i < n; ++i) {
      PostingCursor& c = cursors[i];
      if (c.doc() != doc) continue;
      const double v = terms[order[i]].score(c.tf(), doc);
      sum.add(order[i], v);
      partial += v;
      c.next();
    }
    bool alive = true;
    for (size_t i = first_essential; i-- > 0;) {
      if (!sink.may_enter(partial + prefix[i])) {
        alive = false;
        break;
      }
      PostingCursor& c = cursors[i];
      c.next_geq(doc);
      if (c.doc() != doc) continue;
      const double v = terms[order[i]].score(c.tf(), doc);
      sum.add(order[i], v);
      partial += v;
    }
    if (alive) {
      if (sink.push(doc, sum.take_total())) update_essential();
    } else {
      sum.clear();
    }
    doc = min_essential_doc();
  }
}

}  // namespace ragcore
