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
// only the strongest one, gives a markedly higher seed: documents with several
// query terms sit in the best blocks of the weaker terms too.
//
// When no term weight is negative, a document is scored only on the terms
// found without a list search - the term of the block it came from (its
// position is known) and the frequent terms (doc bits) - and gets 0 from the
// others: every contribution is >= 0 and rounding is monotone, so this partial
// sum in query order is at most the document's full score, and its k-th best
// is still a valid floor. It skips the cursor walk over every other list,
// which costs a block decode per document. With a negative weight every term
// is looked up.
//
// allowed (one byte per slot, or null): only allowed documents count, so that
// a filtered search's seed is the score of k documents it may return.
// The scratch vectors are per thread and reused: no allocation per query. A scratch
// of more than 65,536 seed documents is freed after use (each term offers at most
// TermCache::kBestBlocks blocks, so only a query of more than 32 terms makes one).
class ThresholdSeed {
 public:
  ThresholdSeed(const std::vector<TermScorer>& terms, size_t k, double base,
                const uint8_t* allowed)
      : terms_(terms), k_(k), base_(base), allowed_(allowed), s_(scratch()) {}

  ~ThresholdSeed() {  // a query of very large k must not leave its scratch to the thread
    if (s_.found.capacity() > (size_t{1} << 16)) s_ = Scratch();
  }

  float run(size_t n_blocks) {
    const float none = -std::numeric_limits<float>::infinity();
    if (terms_.empty()) return none;
    collect_docs(rank_blocks(n_blocks));
    if (s_.docs.size() < k_) return none;
    const bool partial = std::all_of(terms_.begin(), terms_.end(),
                                     [](const TermScorer& t) { return t.weight() >= 0; });
    // Term at a time in query order, as exhaustive scoring adds.
    s_.sums.assign(s_.docs.size(), 0.0);
    s_.positions.resize(s_.docs.size());
    for (size_t ti = 0; ti < terms_.size(); ++ti) {
      if (terms_[ti].has_doc_bits()) {
        add_frequent_term(terms_[ti]);
      } else if (partial) {
        add_own_blocks(ti);
      } else {
        add_by_cursor(terms_[ti]);
      }
    }
    return kth_score();
  }

 private:
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

  static Scratch& scratch() {
    thread_local Scratch s;
    return s;
  }

  // Ranks every term's best blocks by bound, the best n_blocks first; returns how many.
  size_t rank_blocks(size_t n_blocks) {
    s_.ranked.clear();
    for (size_t i = 0; i < terms_.size(); ++i)
      for (uint32_t b : terms_[i].cache().best_blocks)
        s_.ranked.push_back({terms_[i].block_bound(b), {i, b}});
    const size_t take = std::min(n_blocks, s_.ranked.size());
    std::partial_sort(s_.ranked.begin(), s_.ranked.begin() + take, s_.ranked.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    return take;
  }

  // The allowed documents of the first `take` ranked blocks: found (by doc, then term),
  // and docs, each document once, ascending (cursors only move forward).
  void collect_docs(size_t take) {
    s_.found.clear();
    uint32_t block_docs[kBlockSize];
    for (size_t r = 0; r < take; ++r) {
      const auto [term, block] = s_.ranked[r].second;
      const size_t n = terms_[term].list().decode_docs(block, block_docs);
      for (size_t i = 0; i < n; ++i)
        if (!allowed_ || allowed_[block_docs[i]])
          s_.found.push_back({block_docs[i], static_cast<uint32_t>(term),
                              size_t{block} * kBlockSize + i});
    }
    std::sort(s_.found.begin(), s_.found.end());
    s_.docs.clear();
    for (const Found& f : s_.found)
      if (s_.docs.empty() || s_.docs.back() != f.doc) s_.docs.push_back(f.doc);
  }

  // A frequent term: finds all its postings first, prefetching their scores, then adds
  // them; the doc-bits entries and the scores are likely misses, and this overlaps them.
  void add_frequent_term(const TermScorer& t) {
    const size_t n_docs = s_.docs.size();
    for (size_t j = 0; j < n_docs; ++j) t.prefetch_doc_bits(s_.docs[j]);
    for (size_t j = 0; j < n_docs; ++j) {
      s_.positions[j] = t.position_of(s_.docs[j]);
      if (s_.positions[j] != TermScorer::kNoPosition) t.prefetch(s_.positions[j]);
    }
    for (size_t j = 0; j < n_docs; ++j)
      if (s_.positions[j] != TermScorer::kNoPosition) s_.sums[j] += t.score(s_.positions[j]);
  }

  // The partial sum: term ti adds only to the documents of its own ranked blocks.
  void add_own_blocks(size_t ti) {
    const TermScorer& t = terms_[ti];
    for (size_t j = 0, f = 0; f < s_.found.size(); ++f) {
      while (s_.docs[j] != s_.found[f].doc) ++j;
      if (s_.found[f].term == ti) s_.sums[j] += t.score(s_.found[f].position);
    }
  }

  // The full sum: every document looked up in the term's list.
  void add_by_cursor(const TermScorer& t) {
    PostingCursor cursor(t.list());
    for (size_t j = 0; j < s_.docs.size(); ++j) {
      cursor.next_geq(s_.docs[j]);
      if (cursor.doc() == s_.docs[j]) s_.sums[j] += t.score(cursor.position());
    }
  }

  // The k-th best of base + sum, rounded to float.
  float kth_score() {
    const size_t n_docs = s_.docs.size();
    s_.scores.resize(n_docs);
    for (size_t j = 0; j < n_docs; ++j) s_.scores[j] = static_cast<float>(base_ + s_.sums[j]);
    std::nth_element(s_.scores.begin(), s_.scores.begin() + (k_ - 1), s_.scores.end(),
                     std::greater<float>());
    return s_.scores[k_ - 1];
  }

  const std::vector<TermScorer>& terms_;
  const size_t k_;
  const double base_;
  const uint8_t* const allowed_;
  Scratch& s_;
};

inline float seed_threshold(const std::vector<TermScorer>& terms, size_t k, double base,
                            size_t n_blocks, const uint8_t* allowed = nullptr) {
  return ThresholdSeed(terms, k, base, allowed).run(n_blocks);
}

}  // namespace ragcore
