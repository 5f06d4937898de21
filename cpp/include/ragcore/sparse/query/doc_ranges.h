// Per term, the maximum of its score parts over each fixed range of 64 document
// slots, and where its postings of each range lie in its list: what block-max
// pruning (block_max_pruning_query.h) bounds and scores ranges with.
//
// A term in at least one slot in 64 (as many postings as ranges) is exactly a
// term with doc bits (TermCache::doc_bits, one 64-slot word per range, with the
// postings before it): it keeps one maximum per range, which the query adds in
// one vectorised pass, and finds its postings of a range in its doc bits. A
// rarer term keeps only its non-empty ranges (ascending), each with its maximum
// and the position of its first posting, and each posting's offset in its range
// (one byte): the query scatters its maxima, and its entries into a table by range
// (or, for a query whose table would be too large, binary-searches them).
// Memory: at most 4 (dense) or 13 (sparse) bytes per posting, next to the 4 of
// TermCache::excess.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ragcore {

struct DocRanges {
  static constexpr unsigned kShift = 6;  // 64 slots a range: the doc bits' word
  static constexpr size_t kSize = size_t{1} << kShift;
  static size_t count(size_t n_slots) { return (n_slots + kSize - 1) >> kShift; }

  bool dense = false;
  std::vector<float> max;       // per range (dense) or per non-empty range; >= 0
  std::vector<uint32_t> ids;    // sparse only: the non-empty ranges, ascending
  std::vector<uint32_t> start;  // sparse only, one more than ids: entry j's postings
                                // are [start[j], start[j+1])
  std::vector<uint8_t> offset;  // sparse only, per posting: its slot & (kSize - 1)

  size_t memory_bytes() const {
    return (max.capacity() + ids.capacity() + start.capacity()) * 4 + offset.capacity();
  }

  // Sparse only: 1 + the entry of range r, 0 if the term has no posting there.
  uint32_t find(uint32_t r) const {
    const auto it = std::lower_bound(ids.begin(), ids.end(), r);
    return it == ids.end() || *it != r ? 0 : static_cast<uint32_t>(it - ids.begin()) + 1;
  }

  // Sparse only: the mask of the slots of non-empty range j (its entry, not its
  // range number) that have the term (bit o: slot ids[j] * kSize + o).
  uint64_t mask(size_t j) const {
    uint64_t m = 0;
    for (uint32_t p = start[j]; p < start[j + 1]; ++p) m |= uint64_t{1} << offset[p];
    return m;
  }
};

// docs and excess: the term's postings in list order (ascending slots) and their
// score parts; dense: whether the term has doc bits. A maximum below 0 is
// stored as 0: a document of the range without the term gets 0 from it, so 0
// bounds it too.
inline void build_doc_ranges(const std::vector<uint32_t>& docs, const std::vector<float>& excess,
                             size_t n_slots, bool dense, DocRanges& r) {
  r = DocRanges();
  r.dense = dense;
  if (dense) {
    r.max.assign(DocRanges::count(n_slots), 0.0f);
    for (size_t p = 0; p < docs.size(); ++p) {
      float& m = r.max[docs[p] >> DocRanges::kShift];
      m = std::max(m, excess[p]);
    }
    return;
  }
  r.offset.resize(docs.size());
  for (size_t p = 0; p < docs.size(); ++p) {
    const uint32_t range = docs[p] >> DocRanges::kShift;
    r.offset[p] = static_cast<uint8_t>(docs[p] & (DocRanges::kSize - 1));
    if (r.ids.empty() || r.ids.back() != range) {
      r.ids.push_back(range);
      r.max.push_back(0.0f);
      r.start.push_back(static_cast<uint32_t>(p));
    }
    r.max.back() = std::max(r.max.back(), excess[p]);
  }
  r.start.push_back(static_cast<uint32_t>(docs.size()));
}

}  // namespace ragcore
