// Block-max pruning (Mallia, Suel and Tonellotto, "Faster learned sparse
// retrieval with block-max pruning", SIGIR 2024), exact: the slots are split
// into ranges of 64 (DocRanges); a range's bound is the sum over the query
// terms of weight * (the term's maximum in that range). Ranges are visited in
// decreasing bound until the next bound cannot enter, so the ranges that hold
// the best documents come first and the threshold is high after a few. Unlike
// a list or block bound, a range's bound counts only the terms in it.
//
// Within a range, as in MaxScore: when the frequent terms' (those with doc
// bits) part of the bound cannot enter alone, a document of the range with
// only frequent terms cannot enter, so only the documents of the rarer terms
// are scored. A document is scored on every query term, the frequent ones
// found in their doc bits (a popcount), the rarer ones in a 64-bit mask of the
// range built from their offsets.
//
// Bit-identical to exhaustive scoring: a document's sum is added from 0.0 term
// by term in query order, as exhaustive_accumulate adds. The bounds are added
// in the same order, each term's part (weight times the range maximum, 0 for a
// term absent or of weight <= 0) at least its part in any document's sum; as
// rounded addition is monotone, a bound is at least every sum it bounds.
//
// Usage, per query: BlockMaxPruningQuery(terms, sink, n_slots).run();
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "ragcore/sparse/query/doc_sink.h"
#include "ragcore/sparse/query/term_scorer.h"

namespace ragcore {

class BlockMaxPruningQuery {
 public:
  // terms in query order, each with its cache's ranges built for n_slots slots.
  BlockMaxPruningQuery(const std::vector<TermScorer>& terms, DocSink& sink, size_t n_slots)
      : terms_(terms), sink_(sink), n_ranges_(DocRanges::count(n_slots)) {}

  void run() {
    // Per thread and reused: no allocation per query once the first has sized them.
    thread_local Scratch s;
    index_terms(s);
    // The table is cleared even when the query throws (bad_alloc growing the heap or
    // the queue): an entry left set would point later queries of the thread into
    // another term's ranges.
    const WhereCleared cleared{*this, s};
    add_bounds(s);
    collect(s);
    auto later = std::less<uint64_t>();  // max-heap on (float bound, range)
    std::make_heap(s.heap.begin(), s.heap.end(), later);
    const size_t n = terms_.size();
    s.lanes.resize(kBatch * n);
    while (!s.heap.empty()) {
      // Up to kBatch ranges that may enter, their doc-bits words, range entries
      // and first scores prefetched together: each is a likely cache miss, and
      // they overlap.
      uint32_t batch[kBatch];
      size_t nb = 0;
      // The key's float is at least the bound of every range left: stop on it.
      while (nb < kBatch && !s.heap.empty() && sink_.may_enter(key_bound(s.heap.front()))) {
        batch[nb++] = static_cast<uint32_t>(s.heap.front());
        std::pop_heap(s.heap.begin(), s.heap.end(), later);
        s.heap.pop_back();
      }
      if (nb == 0) break;
      for (size_t b = 0; b < nb; ++b) prefetch_range(batch[b], s);
      for (size_t b = 0; b < nb; ++b) s.candidates[b] = find_lanes(batch[b], s, s.lanes.data() + b * n);
      for (size_t b = 0; b < nb; ++b) {
        if (sink_.may_enter(s.bound[batch[b]])) score_range(batch[b], s.lanes.data() + b * n, s.candidates[b]);
      }
    }
  }

 private:
  static constexpr size_t kBatch = 8;
  static constexpr uint32_t kDense = ~uint32_t{0};
  // The range table of a query: at most 2^24 entries (64 MiB; e.g. 1,000 rarer terms
  // over 1M slots), else binary searches; one of more than 2^22 is freed after the query.
  static constexpr size_t kMaxWhere = size_t{1} << 24, kKeptWhere = size_t{1} << 22;
  struct Lane {  // one query term in one range
    uint64_t mask;   // bit o: slot r * 64 + o has the term
    uint32_t first;  // position of the term's first posting in the range
  };
  struct Scratch {
    std::vector<double> bound;     // per range, every term
    std::vector<double> frequent;  // per range, the terms with doc bits
    std::vector<uint64_t> heap;
    std::vector<uint32_t> sparse;  // per term: its column in `where`, or kDense
    // where[r * n_sparse + c]: 1 + the entry of range r in the c-th sparse term's
    // DocRanges, 0 if none; all 0 between queries (clear_where resets what was set).
    std::vector<uint32_t> where;
    size_t n_sparse = 0;
    bool use_where = false;
    std::vector<Lane> lanes;  // kBatch x terms
    uint64_t candidates[kBatch];
  };

  void index_terms(Scratch& s) const {
    s.sparse.resize(terms_.size());
    s.n_sparse = 0;
    for (size_t i = 0; i < terms_.size(); ++i)
      s.sparse[i] = terms_[i].cache().ranges.dense ? kDense : static_cast<uint32_t>(s.n_sparse++);
    s.use_where = n_ranges_ * s.n_sparse <= kMaxWhere;
    if (s.use_where && s.where.size() < n_ranges_ * s.n_sparse) s.where.resize(n_ranges_ * s.n_sparse, 0);
  }

  // 1 + the entry of range r in sparse term i's DocRanges, 0 if none.
  uint32_t entry(const Scratch& s, size_t i, uint32_t r) const {
    return s.use_where ? s.where[r * s.n_sparse + s.sparse[i]] : terms_[i].cache().ranges.find(r);
  }

  struct WhereCleared {
    const BlockMaxPruningQuery& query;
    Scratch& s;
    ~WhereCleared() { query.clear_where(s); }
  };

  void clear_where(Scratch& s) const {
    if (!s.use_where) return;
    for (size_t i = 0; i < terms_.size(); ++i) {
      if (s.sparse[i] == kDense) continue;
      for (uint32_t r : terms_[i].cache().ranges.ids) s.where[r * s.n_sparse + s.sparse[i]] = 0;
    }
    // A query of very many terms must not leave its table to the thread for good.
    if (s.where.size() > kKeptWhere) s.where = std::vector<uint32_t>();
  }

  void add_bounds(Scratch& s) const {
    s.bound.assign(n_ranges_, 0.0);
    s.frequent.assign(n_ranges_, 0.0);
    for (size_t i = 0; i < terms_.size(); ++i) {
      const TermScorer& t = terms_[i];
      const DocRanges& r = t.cache().ranges;
      if (!r.dense && s.use_where) {  // its entries by range, whatever its weight (it is scored)
        for (size_t j = 0; j < r.ids.size(); ++j)
          s.where[r.ids[j] * s.n_sparse + s.sparse[i]] = static_cast<uint32_t>(j + 1);
      }
      const double w = t.weight();
      if (w <= 0) continue;  // adds <= 0 to any document: 0 bounds it
      const float* max = r.max.data();
      if (r.dense) {
        double* b = s.bound.data();
        double* f = s.frequent.data();
        for (size_t j = 0; j < n_ranges_; ++j) {
          b[j] += w * max[j];
          f[j] += w * max[j];
        }
      } else {
        for (size_t j = 0; j < r.ids.size(); ++j) s.bound[r.ids[j]] += w * max[j];
      }
    }
  }

  // The ranges that may enter now, keyed so that a larger bound sorts later: the
  // bound rounded up to a float (positive floats order as their bits) above the
  // range. While the threshold admits the base score, ranges of bound 0 are
  // visited too (their documents may hold only terms of weight <= 0).
  void collect(Scratch& s) const {
    s.heap.clear();
    for (uint32_t j = 0; j < n_ranges_; ++j) {
      if (!sink_.may_enter(s.bound[j])) continue;
      float f = static_cast<float>(s.bound[j]);
      if (static_cast<double>(f) < s.bound[j]) f = std::nextafter(f, std::numeric_limits<float>::infinity());
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      s.heap.push_back((uint64_t{bits} << 32) | j);
    }
  }

  static double key_bound(uint64_t key) {
    const auto bits = static_cast<uint32_t>(key >> 32);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }

  void prefetch_range(uint32_t r, const Scratch& s) const {
    for (size_t i = 0; i < terms_.size(); ++i) {
      const TermCache& c = terms_[i].cache();
      if (s.sparse[i] == kDense) {
        __builtin_prefetch(c.doc_bits.data() + r);
      } else if (const uint32_t j = entry(s, i, r)) {
        __builtin_prefetch(c.ranges.start.data() + (j - 1));
      }
    }
  }

  // Each term's mask and first posting in range r; returns the documents to
  // score. Prefetches the offsets and first score of each.
  uint64_t find_lanes(uint32_t r, const Scratch& s, Lane* lanes) const {
    const bool frequent_may_enter = sink_.may_enter(s.frequent[r]);
    uint64_t candidates = 0;
    for (size_t i = 0; i < terms_.size(); ++i) {
      const TermCache& c = terms_[i].cache();
      Lane& lane = lanes[i];
      if (s.sparse[i] == kDense) {
        const TermCache::DocBits& w = c.doc_bits[r];
        lane = {w.bits, w.rank_before};
        if (frequent_may_enter) candidates |= w.bits;
      } else if (const uint32_t j = entry(s, i, r)) {
        lane = {c.ranges.mask(j - 1), c.ranges.start[j - 1]};
        candidates |= lane.mask;
      } else {
        lane = {0, 0};
      }
      if (lane.mask) terms_[i].prefetch(lane.first);
    }
    return candidates;
  }

  void score_range(uint32_t r, const Lane* lanes, uint64_t candidates) {
    const uint32_t first_slot = r << DocRanges::kShift;
    for (uint64_t bits = candidates; bits; bits &= bits - 1) {
      const auto o = static_cast<unsigned>(__builtin_ctzll(bits));
      const uint64_t below = (uint64_t{1} << o) - 1;
      double sum = 0.0;
      for (size_t i = 0; i < terms_.size(); ++i) {
        const Lane& lane = lanes[i];
        if ((lane.mask >> o) & 1)
          sum += terms_[i].score(lane.first + popcount64(lane.mask & below));
      }
      sink_.push(first_slot + o, sum);
    }
  }

  const std::vector<TermScorer>& terms_;
  DocSink& sink_;
  const size_t n_ranges_;
};

}  // namespace ragcore
