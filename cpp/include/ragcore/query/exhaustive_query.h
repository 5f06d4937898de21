// Exhaustive term-at-a-time scoring: every posting of every query term is
// added to a per-document accumulator, term by term in query order.
#pragma once

#include <cstdint>
#include <vector>

#include "ragcore/query/term_scorer.h"

namespace ragcore {

// Per-thread accumulators sized to the index's documents; only the touched
// entries are reset, so a query costs its postings, not the corpus size.
struct Accumulator {
  std::vector<double> sum;
  std::vector<uint8_t> seen;
  std::vector<uint32_t> touched;

  void resize(size_t n_docs) {
    if (seen.size() < n_docs) {
      sum.resize(n_docs);
      seen.resize(n_docs, 0);
    }
  }
  void reset() {
    for (uint32_t d : touched) seen[d] = 0;
    touched.clear();
  }
};

// terms in query order.
inline void exhaustive_accumulate(const std::vector<TermScorer>& terms, Accumulator& acc) {
  uint32_t docs[kBlockSize];
  for (const TermScorer& term : terms) {
    const PostingList& list = term.list();
    for (size_t b = 0; b < list.num_blocks(); ++b) {
      const size_t n = list.decode_docs(b, docs);
      for (size_t i = 0; i < n; ++i) {
        const uint32_t d = docs[i];
        if (!acc.seen[d]) {
          acc.seen[d] = 1;
          acc.touched.push_back(d);
          acc.sum[d] = 0.0;
        }
        acc.sum[d] += term.score(b * kBlockSize + i);
      }
    }
  }
}

}  // namespace ragcore
