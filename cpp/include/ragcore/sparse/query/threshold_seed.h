// A starting threshold for dynamic pruning (the idea of Kane & Tompa, "Split-lists
// and initial thresholds for WAND-based search", SIGIR 2018): fully score the
// documents of a few blocks likely to hold high scores - the blocks of highest
// bound among every term's best blocks (TermCache::best_blocks) - and take the
// k-th best. Those k documents exist with exactly these scores, so the final
// k-th score is at least as high, and documents below it can be skipped from
// the start instead of after the heap has filled.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <vector>

#include "ragcore/sparse/query/doc_sink.h"
#include "ragcore/sparse/query/posting_cursor.h"
#include "ragcore/sparse/query/term_scorer.h"

namespace ragcore {

// The k-th best full score (base included, rounded to float as DocSink does)
// of the documents in the n_blocks blocks of highest bound among the terms'
// best blocks; -inf when they are fewer than k. Taking blocks from every term,
// not only the strongest one, gives a markedly higher seed (and a faster
// MaxScore on the zipf corpus of bench/bm25.py): documents with several query
// terms sit in the best blocks of the weaker terms too.
// allowed (one byte per slot, or null): only allowed documents count, so that
// a filtered search's seed is the score of k documents it may return.
inline float seed_threshold(const std::vector<TermScorer>& terms, size_t k, double base,
                            size_t n_blocks, const uint8_t* allowed = nullptr) {
  const float none = -std::numeric_limits<float>::infinity();
  if (terms.empty()) return none;
  // The n_blocks blocks of highest bound over all the terms' best blocks.
  std::vector<std::pair<double, std::pair<size_t, uint32_t>>> ranked;
  for (size_t i = 0; i < terms.size(); ++i)
    for (uint32_t b : terms[i].cache().best_blocks) ranked.push_back({terms[i].block_bound(b), {i, b}});
  const size_t take = std::min(n_blocks, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + take, ranked.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<uint32_t> docs;
  uint32_t block_docs[kBlockSize];
  for (size_t r = 0; r < take; ++r) {
    const size_t n = terms[ranked[r].second.first].list().decode_docs(ranked[r].second.second, block_docs);
    docs.insert(docs.end(), block_docs, block_docs + n);
  }
  std::sort(docs.begin(), docs.end());  // cursors only move forward
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  if (allowed)
    docs.erase(std::remove_if(docs.begin(), docs.end(), [&](uint32_t d) { return !allowed[d]; }),
               docs.end());
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
