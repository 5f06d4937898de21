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

// The k-th best score (base included, rounded to float as DocSink does) of the
// documents in the n_blocks blocks of highest bound among the terms' best
// blocks; -inf when they are fewer than k. Taking blocks from every term, not
// only the strongest one, gives a markedly higher seed (and a faster MaxScore
// on the Zipfian corpus of bench/_zipf.py): documents with several query terms sit
// in the best blocks of the weaker terms too.
//
// When no term weight is negative, a document is scored only on the terms
// found without a list search - the term of the block it came from (its
// position is known) and the frequent terms (doc bits) - and gets 0 from the
// others: every contribution is >= 0 and rounding is monotone, so this partial
// sum in query order is at most the document's full score, and its k-th best
// is still a valid floor. It skips the cursor walk over every other list,
// which cost a block decode per document (most of the seed's time on the 1M
// zipf corpus). With a negative weight every term is looked up.
//
// allowed (one byte per slot, or null): only allowed documents count, so that
// a filtered search's seed is the score of k documents it may return.
// The scratch vectors are per thread and reused: no allocation per query. A scratch
// of more than 65,536 seed documents is freed after use (each term offers at most
// TermCache::kBestBlocks blocks, so only a query of more than 32 terms makes one).
inline float seed_threshold(const std::vector<TermScorer>& terms, size_t k, double base,
                            size_t n_blocks, const uint8_t* allowed = nullptr) {
  const float none = -std::numeric_limits<float>::infinity();
  if (terms.empty()) return none;
  struct Found {
    uint32_t doc;
    uint32_t term;      // the term whose block holds the document
    size_t position;    // of the document's posting in that term's list
    bool operator<(const Found& o) const { return doc < o.doc || (doc == o.doc && term < o.term); }
  };
  struct Scratch {
    std::vector<std::pair<double, std::pair<size_t, uint32_t>>> ranked;
    std::vector<Found> found;
    std::vector<uint32_t> docs;
    std::vector<double> sums;
    std::vector<size_t> positions;
    std::vector<float> scores;
  };
  thread_local Scratch s;
  // A query of very large k must not leave its scratch to the thread for good.
  struct Release {
    Scratch& s;
    ~Release() {
      if (s.found.capacity() > (size_t{1} << 16)) s = Scratch();
    }
  } release{s};
  // The n_blocks blocks of highest bound over all the terms' best blocks.
  s.ranked.clear();
  for (size_t i = 0; i < terms.size(); ++i)
    for (uint32_t b : terms[i].cache().best_blocks) s.ranked.push_back({terms[i].block_bound(b), {i, b}});
  const size_t take = std::min(n_blocks, s.ranked.size());
  std::partial_sort(s.ranked.begin(), s.ranked.begin() + take, s.ranked.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  s.found.clear();
  uint32_t block_docs[kBlockSize];
  for (size_t r = 0; r < take; ++r) {
    const auto [term, block] = s.ranked[r].second;
    const size_t n = terms[term].list().decode_docs(block, block_docs);
    for (size_t i = 0; i < n; ++i)
      if (!allowed || allowed[block_docs[i]])
        s.found.push_back({block_docs[i], static_cast<uint32_t>(term), size_t{block} * kBlockSize + i});
  }
  std::sort(s.found.begin(), s.found.end());  // cursors only move forward
  s.docs.clear();
  for (const Found& f : s.found)
    if (s.docs.empty() || s.docs.back() != f.doc) s.docs.push_back(f.doc);
  const size_t n_docs = s.docs.size();
  if (n_docs < k) return none;
  const bool partial = std::all_of(terms.begin(), terms.end(),
                                   [](const TermScorer& t) { return t.weight() >= 0; });
  // Term at a time in query order, as exhaustive scoring adds. A frequent term
  // finds all its postings first, prefetching their scores, then adds them:
  // the scores are likely cache misses, and this overlaps them.
  s.sums.assign(n_docs, 0.0);
  s.positions.resize(n_docs);
  for (size_t ti = 0; ti < terms.size(); ++ti) {
    const TermScorer& t = terms[ti];
    if (t.has_doc_bits()) {
      // The doc-bits entries first: each is a likely miss, and a load that waits on
      // none can be in flight with the others.
      for (size_t j = 0; j < n_docs; ++j) t.prefetch_doc_bits(s.docs[j]);
      for (size_t j = 0; j < n_docs; ++j) {
        s.positions[j] = t.position_of(s.docs[j]);
        if (s.positions[j] != TermScorer::kNoPosition) t.prefetch(s.positions[j]);
      }
      for (size_t j = 0; j < n_docs; ++j)
        if (s.positions[j] != TermScorer::kNoPosition) s.sums[j] += t.score(s.positions[j]);
    } else if (partial) {
      // Only the documents that came from this term's blocks (found is by doc, then term).
      for (size_t j = 0, f = 0; f < s.found.size(); ++f) {
        while (s.docs[j] != s.found[f].doc) ++j;
        if (s.found[f].term == ti) s.sums[j] += t.score(s.found[f].position);
      }
    } else {
      PostingCursor cursor(t.list());
      for (size_t j = 0; j < n_docs; ++j) {
        cursor.next_geq(s.docs[j]);
        if (cursor.doc() == s.docs[j]) s.sums[j] += t.score(cursor.position());
      }
    }
  }
  s.scores.resize(n_docs);
  for (size_t j = 0; j < n_docs; ++j) s.scores[j] = static_cast<float>(base + s.sums[j]);
  std::nth_element(s.scores.begin(), s.scores.begin() + (k - 1), s.scores.end(), std::greater<float>());
  return s.scores[k - 1];
}

}  // namespace ragcore
