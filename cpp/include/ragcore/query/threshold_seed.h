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
  std::vector<uint32_t> docs;
  uint32_t block_docs[kBlockSize];
  for (uint32_t b : blocks) {
    const size_t n = terms[lead].list().decode_docs(b, block_docs);
    docs.insert(docs.end(), block_docs, block_docs + n);
  }
  if (docs.size() < k) return none;
  // Term at a time in query order, as exhaustive scoring adds. A frequent term
  // finds all its postings first, prefetching their scores, then adds them:
  // the scores are likely cache misses, and this overlaps them.
  std::vector<double> sums(docs.size(), 0.0);
  std::vector<size_t> positions(docs.size());
  for (const TermScorer& t : terms) {
    if (t.has_doc_bits()) {
      for (size_t j = 0; j < docs.size(); ++j) {
        positions[j] = t.position_of(docs[j]);
        if (positions[j] != TermScorer::kNoPosition) t.prefetch(positions[j]);
      }
      for (size_t j = 0; j < docs.size(); ++j)
        if (positions[j] != TermScorer::kNoPosition) sums[j] += t.score(positions[j]);
    } else {
      PostingCursor cursor(t.list());
      for (size_t j = 0; j < docs.size(); ++j) {
        cursor.next_geq(docs[j]);
        if (cursor.doc() == docs[j]) sums[j] += t.score(cursor.position());
      }
    }
  }
  std::vector<float> scores(docs.size());
  for (size_t j = 0; j < docs.size(); ++j) scores[j] = static_cast<float>(base + sums[j]);
  std::nth_element(scores.begin(), scores.begin() + (k - 1), scores.end(), std::greater<float>());
  return scores[k - 1];
}

}  // namespace ragcore
