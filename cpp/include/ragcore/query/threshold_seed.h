// A starting threshold for dynamic pruning (the idea of Kane & Tompa, "Split-lists
// and initial thresholds for WAND-based search", SIGIR 2018): fully score the
// documents of a few blocks likely to hold high scores - the blocks of highest
// maximum of the term with the highest bound - and take the k-th best. Those k
// documents exist with exactly these scores, so the final k-th score is at least
// as high, and documents below it can be skipped from the start instead of
// after the heap has filled.
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
// of the documents in up to n_blocks best blocks of the strongest term; -inf
// when they are fewer than k.
inline float seed_threshold(const std::vector<TermScorer>& terms, size_t k, double base,
                            size_t n_blocks) {
  const float none = -std::numeric_limits<float>::infinity();
  if (terms.empty()) return none;
  size_t lead = 0;
  for (size_t i = 1; i < terms.size(); ++i)
    if (terms[i].list_bound() > terms[lead].list_bound()) lead = i;
  const auto& best = terms[lead].cache().best_blocks;
  std::vector<uint32_t> blocks(best.begin(), best.begin() + std::min(n_blocks, best.size()));
  std::sort(blocks.begin(), blocks.end());  // cursors only move forward
  std::vector<PostingCursor> cursors;
  cursors.reserve(terms.size());
  for (const TermScorer& t : terms) cursors.emplace_back(t.list());
  SlotSum sum(terms.size());
  std::priority_queue<float, std::vector<float>, std::greater<float>> kept;  // k best, worst on top
  uint32_t docs[kBlockSize];
  for (uint32_t b : blocks) {
    const size_t n = terms[lead].list().decode_docs(b, docs);
    for (size_t j = 0; j < n; ++j) {
      for (size_t i = 0; i < terms.size(); ++i) {  // query order, as every algorithm adds
        double v;
        if (terms[i].has_doc_bits()) {
          if (terms[i].probe(docs[j], v)) sum.add(i, v);
          continue;
        }
        cursors[i].next_geq(docs[j]);
        if (cursors[i].doc() == docs[j]) sum.add(i, terms[i].score(cursors[i].position()));
      }
      const auto score = static_cast<float>(base + sum.take_total());
      if (kept.size() < k) {
        kept.push(score);
      } else if (score > kept.top()) {
        kept.pop();
        kept.push(score);
      }
    }
  }
  return kept.size() == k ? kept.top() : none;
}

}  // namespace ragcore
