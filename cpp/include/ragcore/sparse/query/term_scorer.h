// What a query algorithm needs to score one query term: its contribution to a
// document and upper bounds of that contribution over a block or a whole list.
//
// A document's score is base + the sum, in query order, of the contributions
// of the query terms it contains, where
//   contribution = weight * (g(tf, norm) - g0),  weight = multiplicity * idf,
//   base         = sum over query terms of weight * g0
// (bm25l and bm25+ have g0 > 0: every document gets the base score). The index
// keeps g(tf, norm) - g0 of every posting (TermCache), so every algorithm reads
// the same numbers and adds them in the same order: their scores are
// bit-identical, and the block bounds are exact maxima.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ragcore/sparse/posting_list.h"
#include "ragcore/sparse/query/doc_ranges.h"

namespace ragcore {

// Per term, under the current statistics: each posting's g(tf, norm) - g0 in
// list order (float32, like the scores), and its maximum per block and over the
// list. bm25_index.cpp computes it on the term's first query after a change.
struct TermCache {
  static constexpr size_t kBestBlocks = 16;
  std::vector<float> excess;
  std::vector<float> block_max;
  float list_max = 0.0f;
  float list_min = 0.0f;  // the smallest part: MaxScore skips no posting below a cut under it
  std::vector<uint32_t> best_blocks;  // up to kBestBlocks blocks of highest maximum, best first
  // Only for a frequent term (in at least 1/64 of the slots): per 64 slots, a
  // word whose bit d is set when slot 64 w + d has the term, next to the number
  // of set bits before it, so that probing a document (MaxScore's non-essential
  // terms, mostly frequent ones) finds its posting with a popcount instead of
  // decoding a block (a threshold of 1/16 made MaxScore slower on the zipf
  // corpus of bench/_zipf.py). Word and count share one 16-byte entry, so a probe
  // reads one cache line, not two (separate arrays cost a second miss per probe
  // on the 1M corpus). Costs 1/4 byte per slot: at most 4 times the term's `excess`.
  struct DocBits {
    uint64_t bits;
    uint32_t rank_before;
  };
  std::vector<DocBits> doc_bits;
  DocRanges ranges;  // per range of 64 slots: block-max pruning's bounds and postings
};

// The build targets baseline x86-64, where __builtin_popcountll is a library
// call; the popcnt instruction (every x86-64 CPU since ~2008) is used when the
// CPU has it.
#if defined(__x86_64__) && !defined(__POPCNT__)
inline const bool kHasPopcnt = (__builtin_cpu_init(), __builtin_cpu_supports("popcnt"));
#endif

inline uint32_t popcount64(uint64_t x) {
#if defined(__x86_64__) && !defined(__POPCNT__)
  if (kHasPopcnt) {
    uint64_t r;
    asm("popcntq %1, %0" : "=r"(r) : "r"(x));
    return static_cast<uint32_t>(r);
  }
#endif
  return static_cast<uint32_t>(__builtin_popcountll(x));
}

// Fills c.doc_bits for a frequent term, clears it otherwise.
inline void build_doc_bits(const PostingList& list, size_t n_slots, TermCache& c) {
  c.doc_bits.clear();
  if (list.size() * 64 < n_slots) return;
  c.doc_bits.assign(n_slots / 64 + 1, TermCache::DocBits{0, 0});
  uint32_t docs[kBlockSize];
  for (size_t b = 0; b < list.num_blocks(); ++b) {
    const size_t n = list.decode_docs(b, docs);
    for (size_t i = 0; i < n; ++i) c.doc_bits[docs[i] >> 6].bits |= uint64_t{1} << (docs[i] & 63);
  }
  uint32_t count = 0;
  for (TermCache::DocBits& w : c.doc_bits) {
    w.rank_before = count;
    count += popcount64(w.bits);
  }
}

class TermScorer {
 public:
  TermScorer(const PostingList& list, const TermCache& cache, double weight, size_t slot)
      : list_(&list), cache_(&cache), weight_(weight), slot_(slot),
        list_bound_(bound(cache.list_max)) {}

  const PostingList& list() const { return *list_; }
  const TermCache& cache() const { return *cache_; }
  size_t slot() const { return slot_; }  // position in query order
  double weight() const { return weight_; }

  // The contribution of the posting at this position of the list.
  double score(size_t position) const { return weight_ * cache_->excess[position]; }

  // Whether the term has doc bits (see TermCache), and with them: whether doc
  // has the term, and if so its contribution in v.
  bool has_doc_bits() const { return !cache_->doc_bits.empty(); }
  bool probe(uint32_t doc, double& v) const {
    const size_t position = position_of(doc);
    if (position == kNoPosition) return false;
    v = score(position);
    return true;
  }
  // With doc bits: the position of doc's posting, kNoPosition if none.
  static constexpr size_t kNoPosition = ~size_t{0};
  size_t position_of(uint32_t doc) const { return position_in(cache_->doc_bits.data(), doc); }
  static size_t position_in(const TermCache::DocBits* doc_bits, uint32_t doc) {
    const TermCache::DocBits& w = doc_bits[doc >> 6];
    const uint64_t below = (uint64_t{1} << (doc & 63)) - 1;
    if (!((w.bits >> (doc & 63)) & 1)) return kNoPosition;
    return w.rank_before + popcount64(w.bits & below);
  }
  void prefetch(size_t position) const { __builtin_prefetch(cache_->excess.data() + position); }
  void prefetch_doc_bits(uint32_t doc) const { __builtin_prefetch(cache_->doc_bits.data() + (doc >> 6)); }

  // Upper bounds; never negative, since a document without the term gets 0 from it.
  double list_bound() const { return list_bound_; }
  double block_bound(size_t block) const { return bound(cache_->block_max[block]); }

 private:
  double bound(float max_excess) const {
    // A margin for adding bounds and scores in different orders.
    return weight_ <= 0 ? 0.0 : weight_ * max_excess * (1.0 + 1e-9);
  }

  const PostingList* list_;
  const TermCache* cache_;
  double weight_;
  size_t slot_;
  double list_bound_;
};

}  // namespace ragcore
