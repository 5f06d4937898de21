// A starting threshold for dynamic pruning (the idea of Kane & Tompa, "Split-lists
// and initial thresholds for WAND-based search", SIGIR 2018): fully score a few
// documents - those of the shortest list, the rarest term's, which tend to score
// high - and take the k-th best. Those k documents exist with exactly these
// scores, so the final k-th score is at least as high, and a document below it
// can be skipped from the start instead of after the heap has filled.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

#include "ragcore/query/doc_sink.h"
#include "ragcore/query/posting_cursor.h"
#include "ragcore/query/term_scorer.h"

namespace ragcore {

// The k-th best full score (base included, rounded to float as DocSink does)
// among the first `sample` documents of the shortest list; -inf when it holds
// fewer than k.
inline float seed_threshold(const std::vector<TermScorer>& terms, size_t k, double base,
                            size_t sample) {
  const float none = -std::numeric_limits<float>::infinity();
  if (terms.empty()) return none;
  size_t shortest = 0;
  for (size_t i = 1; i < terms.size(); ++i)
    if (terms[i].list().size() < terms[shortest].list().size()) shortest = i;
  if (terms[shortest].list().size() < k) return none;
  std::vector<PostingCursor> cursors;
  cursors.reserve(terms.size());
  for (const TermScorer& t : terms) cursors.emplace_back(t.list());
  SlotSum sum(terms.size());
  std::priority_queue<float, std::vector<float>, std::greater<float>> best;  // k best, worst on top
  PostingCursor& lead = cursors[shortest];
  for (size_t seen = 0; seen < sample && lead.doc() != kEndDoc; ++seen, lead.next()) {
    const uint32_t doc = lead.doc();
    for (size_t i = 0; i < terms.size(); ++i) {  // query order, as every algorithm adds
      cursors[i].next_geq(doc);
      if (cursors[i].doc() == doc) sum.add(i, terms[i].score(cursors[i].position()));
    }
    const auto score = static_cast<float>(base + sum.take_total());
    if (best.size() < k) {
      best.push(score);
    } else if (score > best.top()) {
      best.pop();
      best.push(score);
    }
  }
  return best.size() == k ? best.top() : none;
}

}  // namespace ragcore
