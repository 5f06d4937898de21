// Exhaustive term-at-a-time scoring: every posting of every query term is
// added to a per-document accumulator, term by term in query order.
#pragma once

#include <cstdint>
#include <vector>

#include "ragcore/sparse/query/term_scorer.h"
#include "ragcore/topk/topk_reservoir.h"

namespace ragcore {

// Per-thread accumulators sized to the index's documents, all zero between
// queries, with a bitmap of the touched documents: adding a posting is two
// branch-free writes, and only the touched entries are visited and reset, so a
// query costs its postings, not the corpus size.
struct Accumulator {
  std::vector<double> sum;
  std::vector<uint64_t> touched;  // bit d: document d has a query term
  TopKReservoir kept;             // drain_top_k's selection, reused across queries

  void resize(size_t n_docs) {
    if (sum.size() < n_docs) {
      sum.resize(n_docs, 0.0);
      touched.resize(n_docs / 64 + 1, 0);
    }
  }
  bool has(uint32_t d) const { return (touched[d >> 6] >> (d & 63)) & 1; }

  // Calls fn(doc, sum) for every touched document, in doc order, then zeroes them.
  template <class Fn>
  void drain(Fn&& fn) {
    for (size_t w = 0; w < touched.size(); ++w) {
      for (uint64_t bits = touched[w]; bits; bits &= bits - 1) {
        const auto d = static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits));
        fn(d, sum[d]);
        sum[d] = 0.0;
      }
      touched[w] = 0;
    }
  }

  // The k best touched documents into scores/ids [k], best first and padded, as a
  // DocSink into a TopKQueue would give them: score = base + sum rounded to float, only
  // scores >= floor (at least k touched documents must reach it) and allowed documents
  // (one byte per slot, or null), id = ext_ids[d] (or d where ext_ids is null). Zeroes
  // them, as drain does, in the same sweep.
  void drain_top_k(size_t k, double base, float floor, const int64_t* ext_ids,
                   const uint8_t* allowed, float* scores, int64_t* ids) {
    kept.reset(k, floor);
    for (size_t w = 0; w < touched.size(); ++w) {
      for (uint64_t bits = touched[w]; bits; bits &= bits - 1) {
        const auto d = static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits));
        const auto score = static_cast<float>(base + sum[d]);
        sum[d] = 0.0;
        if (score < kept.entry() || (allowed && !allowed[d])) continue;
        if (ext_ids) {
          kept.push(score, ext_ids[d]);
        } else {
          kept.push_slot(score, d);
        }
      }
      touched[w] = 0;
    }
    kept.finish(scores, ids);
  }
};

// terms in query order; acc sized to the documents and zero.
inline void exhaustive_accumulate(const std::vector<TermScorer>& terms, Accumulator& acc) {
  uint32_t docs[kBlockSize];
  for (const TermScorer& term : terms) {
    const PostingList& list = term.list();
    for (size_t b = 0; b < list.num_blocks(); ++b) {
      const size_t n = list.decode_docs(b, docs);
      for (size_t i = 0; i < n; ++i) {
        const uint32_t d = docs[i];
        acc.sum[d] += term.score(b * kBlockSize + i);
        acc.touched[d >> 6] |= uint64_t{1} << (d & 63);
      }
    }
  }
}

}  // namespace ragcore
