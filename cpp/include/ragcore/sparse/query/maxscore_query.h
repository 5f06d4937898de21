// MaxScore (Turtle & Flood 1995), document at a time, after PISA's
// maxscore_query: terms sorted by their list bound; the lowest-bound terms
// whose bounds sum below the entry threshold are "non-essential" - a document
// found only in them cannot enter - so candidates come from the essential
// lists and the others are only probed, lowest bound last, while the document
// can still make it, bounded first by the list bounds and then by the maxima of
// the blocks that would hold it (block-max MaxScore, Chakrabarti et al., WSDM 2011).
// Candidates are collected and probed in batches (batched_loop).
//
// Usage, per query: MaxScoreQuery(terms, sink).run();
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "ragcore/sparse/query/doc_sink.h"
#include "ragcore/sparse/query/posting_cursor.h"
#include "ragcore/sparse/query/term_scorer.h"

namespace ragcore {

class MaxScoreQuery {
 public:
  // Capabilities used: doc, position, next, next_geq on every list;
  // block_index and block_last_doc on the essential ones (the region check);
  // shallow_next_geq, shallow_done, shallow_index and shallow_block on the
  // non-essential ones, whose blocks are bounded without decoding them.
  using Cursor = PostingCursor;
  static_assert(is_block_max_cursor<Cursor>::value, "MaxScore needs a block-max cursor");

  // terms in query order (their slots order each sum); both must outlive the query.
  MaxScoreQuery(const std::vector<TermScorer>& terms, DocSink& sink)
      : terms_(terms), sink_(sink), n_(terms.size()) {
    sort_by_list_bound();
  }

  // Offers every document that may enter to the sink, each with its exact sum.
  void run() {
    if (shortcuts_) {
      batched_loop<true>();
    } else {
      batched_loop<false>();  // without a check of the shortcuts
    }
  }

 private:
  // MaxScore, kBatch candidates at a time: the candidates and their essential
  // parts are collected first, then each non-essential list, highest bound
  // first, is probed for every candidate still able to enter. The probes of one
  // list are independent of each other, so their cache misses (doc bits, score
  // parts) overlap instead of each waiting on the last candidate's branches.
  // The checks use the threshold at the start of the batch's probes, which only
  // rises: a lower one keeps more candidates, never fewer, and every kept
  // candidate is scored exactly, so the hits are the same as checking each
  // candidate against the newest threshold.
  template <bool kShortcuts>
  void batched_loop() {
    update_essential();
    batch_values_.assign(kBatch * n_, 0.0);
    batch_bounds_.resize(kBatch * n_);
    for (uint32_t doc = min_essential_doc(); doc != kEndDoc && first_essential_ < n_;) {
      const size_t m = collect_batch<kShortcuts>(doc);
      if (probe_batch(m)) {
        doc = min_essential_doc();  // the split moved: a list left the essential ones
        checked_ = false;
      }
    }
  }

  // Collects up to kBatch candidates from doc on: their docs, essential parts
  // (in batch_values_, by slot) and partial sums; leaves doc at the next one.
  template <bool kShortcuts>
  size_t collect_batch(uint32_t& doc) {
    size_t m = 0;
    while (m < kBatch && doc != kEndDoc) {
      if (needs_region_check(doc)) {
        // A batch ends at a region: checking one moves the non-essential lists'
        // block pointers to its start, past the blocks of earlier candidates.
        if (m) break;
        if (check_region(doc) == Region::Skip) {
          doc = skip_region();
          continue;
        }
      }
      if constexpr (kShortcuts) {
        if (sink_.entry() != seen_entry_) threshold_rose();
        if (n_required_ && lacks_required(doc)) {
          doc = skip_doc(doc);
          continue;
        }
      }
      double* values = &batch_values_[m * n_];
      double partial = 0.0;
      uint32_t next = kEndDoc;
      for (size_t i = first_essential_; i < n_; ++i) {
        Cursor& c = cursors_[i];
        if (c.doc() == doc) {
          const size_t position = c.position();
          const double v = lanes_[i].score(position);
          // Two lines ahead: far enough for the load to arrive before its use.
          if (position + kPartsAhead < c.size())
            __builtin_prefetch(lanes_[i].excess + position + kPartsAhead);
          values[lanes_[i].slot] = v;
          partial += v;
          if constexpr (kShortcuts) {
            advance(i);
          } else {
            c.next();
          }
        }
        next = std::min(next, c.doc());
      }
      batch_docs_[m] = doc;
      batch_partial_[m] = partial;
      ++m;
      doc = next;
    }
    return m;
  }

  // Probes the non-essential lists for the batch's first m candidates and
  // offers those that may enter; clears their values. Returns whether the
  // essential split moved.
  bool probe_batch(size_t m) {
    const size_t fe = first_essential_;
    size_t alive = 0;  // batch_alive_[0, alive): candidates that may still enter
    for (size_t c = 0; c < m; ++c) {
      batch_alive_[alive] = static_cast<uint8_t>(c);
      // With every list essential, a partial is a full sum (in another order): no check.
      alive += !fe || sink_.may_enter(batch_partial_[c] + prefix_[fe - 1]);
    }
    if (fe && alive) {
      // Per candidate, the prefix sums of the maxima of the blocks that could
      // hold it, list by list: each shallow cursor moves forward over the
      // candidates in doc order, without decoding.
      for (size_t i = 0; i < fe; ++i) {
        Cursor& cur = cursors_[i];
        const TermScorer& t = term(i);
        size_t last = kNoBlock;  // consecutive candidates mostly share a block
        double block = 0.0;
        for (size_t a = 0; a < alive; ++a) {
          const size_t c = batch_alive_[a];
          cur.shallow_next_geq(batch_docs_[c]);
          const size_t b = cur.shallow_done() ? kNoBlock : cur.shallow_index();
          if (b != last) {
            last = b;
            block = b == kNoBlock ? 0.0 : t.block_bound(b);
          }
          batch_bounds_[c * n_ + i] = (i ? batch_bounds_[c * n_ + i - 1] : 0.0) + block;
        }
      }
      for (size_t i = fe; i-- > 0 && alive;) {
        const Lane& lane = lanes_[i];
        size_t kept = 0;
        for (size_t a = 0; a < alive; ++a) {
          const size_t c = batch_alive_[a];
          batch_alive_[kept] = static_cast<uint8_t>(c);
          kept += sink_.may_enter(batch_partial_[c] + batch_bounds_[c * n_ + i]);
        }
        alive = kept;
        if (lane.doc_bits) {  // a popcount each, no block to decode
          for (size_t a = 0; a < alive; ++a) {
            const size_t c = batch_alive_[a];
            const size_t position = TermScorer::position_in(lane.doc_bits, batch_docs_[c]);
            if (position == TermScorer::kNoPosition) continue;
            const double v = lane.score(position);
            batch_values_[c * n_ + lane.slot] = v;
            batch_partial_[c] += v;
          }
        } else {
          Cursor& cur = cursors_[i];
          for (size_t a = 0; a < alive; ++a) {
            const size_t c = batch_alive_[a];
            cur.next_geq(batch_docs_[c]);
            if (cur.doc() != batch_docs_[c]) continue;
            const double v = lane.score(cur.position());
            batch_values_[c * n_ + lane.slot] = v;
            batch_partial_[c] += v;
          }
        }
      }
    }
    bool moved = false;
    for (size_t a = 0; a < alive; ++a) {
      const size_t c = batch_alive_[a];
      double total = 0.0;  // in query order, as SlotSum::take_total adds
      for (size_t slot = 0; slot < n_; ++slot) total += batch_values_[c * n_ + slot];
      if (sink_.push(batch_docs_[c], total)) moved |= update_essential();
    }
    std::fill(batch_values_.begin(), batch_values_.begin() + m * n_, 0.0);
    return moved;
  }

  enum class Region : bool { MayEnter, Skip };
  static constexpr size_t kInsertionSortTerms = 32;
  static constexpr size_t kBatch = 64;  // candidates per batch of batched_loop
  static constexpr size_t kPartsAhead = 32;  // floats: two cache lines
  static constexpr size_t kNoBlock = ~size_t{0};

  const TermScorer& term(size_t i) const { return terms_[order_[i]]; }

  // What the per-candidate loops read of term(i), flat: score() and probe() through
  // TermScorer were four dependent loads (order, term, cache, array) per posting.
  struct Lane {
    const float* excess;                  // term(i).cache().excess
    const TermCache::DocBits* doc_bits;   // null without doc bits
    double weight;
    size_t slot;                          // position in query order
    double score(size_t position) const { return weight * excess[position]; }  // = TermScorer::score
  };

  // Lists by ascending list bound (stable: equal bounds keep query order, so
  // the run does not depend on the sort), a cursor each, and the prefix sums of
  // the bounds, which the essential split and the probes compare with.
  void sort_by_list_bound() {
    order_.resize(n_);
    std::iota(order_.begin(), order_.end(), 0);
    auto lower = [&](size_t a, size_t b) { return terms_[a].list_bound() < terms_[b].list_bound(); };
    if (n_ <= kInsertionSortTerms) {  // stable too, without std::stable_sort's buffer (a malloc)
      for (size_t i = 1; i < n_; ++i)
        for (size_t j = i; j > 0 && lower(order_[j], order_[j - 1]); --j) std::swap(order_[j], order_[j - 1]);
    } else {
      std::stable_sort(order_.begin(), order_.end(), lower);
    }
    cursors_.reserve(n_);
    lanes_.reserve(n_);
    prefix_.resize(n_);
    shortcuts_ = std::all_of(terms_.begin(), terms_.end(), [](const TermScorer& t) { return t.has_doc_bits(); });
    for (size_t i = 0; i < n_; ++i) {
      cursors_.emplace_back(term(i).list());
      const TermCache& c = term(i).cache();
      lanes_.push_back({c.excess.data(), c.doc_bits.empty() ? nullptr : c.doc_bits.data(),
                        term(i).weight(), order_[i]});
      prefix_[i] = (i ? prefix_[i - 1] : 0.0) + term(i).list_bound();
    }
    if (!shortcuts_) return;
    filter_ = std::all_of(terms_.begin(), terms_.end(), [](const TermScorer& t) { return t.weight() >= 0; });
    cut_.assign(n_, -std::numeric_limits<float>::infinity());
    skips_.assign(n_, 0);
    required_.resize(n_);
    rest_.assign(n_, 0.0);
    for (size_t i = 0; i < n_; ++i)
      for (size_t j = 0; j < n_; ++j)
        if (j != i) rest_[i] += term(j).list_bound();
  }

  // Moves lists whose bounds, with all lower ones, cannot reach the threshold
  // to the non-essential side; the threshold only rises, so the split only
  // moves forward. Returns whether it moved.
  bool update_essential() {
    const size_t before = first_essential_;
    while (first_essential_ < n_ && !sink_.may_enter(prefix_[first_essential_])) ++first_essential_;
    if (first_essential_ == before) return false;
    seen_entry_ = std::numeric_limits<float>::quiet_NaN();  // the required lists are stale
    return true;
  }

  uint32_t min_essential_doc() const {
    uint32_t d = kEndDoc;
    for (size_t i = first_essential_; i < n_; ++i) d = std::min(d, cursors_[i].doc());
    return d;
  }

  // A region checked as MayEnter needs no new check until a doc passes its end
  // or the essential lists change.
  bool needs_region_check(uint32_t doc) const { return !checked_ || doc > checked_until_; }

  // Whether any document in [doc, end of the essential cursors' current blocks]
  // may enter, bounded by those blocks' maxima and the non-essential lists (their
  // block maximum where one block covers the range, else their list bound).
  Region check_region(uint32_t doc) {
    uint32_t end = kEndDoc;
    for (size_t i = first_essential_; i < n_; ++i)
      if (cursors_[i].doc() != kEndDoc) end = std::min(end, cursors_[i].block_last_doc());
    double bound = 0.0;
    for (size_t i = first_essential_; i < n_; ++i)
      if (cursors_[i].doc() <= end) bound += term(i).block_bound(cursors_[i].block_index());
    for (size_t i = 0; i < first_essential_; ++i) {
      Cursor& c = cursors_[i];
      c.shallow_next_geq(doc);
      if (c.shallow_done()) continue;
      bound += c.shallow_block().last_doc >= end ? term(i).block_bound(c.shallow_index())
                                                 : term(i).list_bound();
    }
    checked_until_ = end;
    checked_ = true;
    return sink_.may_enter(bound) ? Region::MayEnter : Region::Skip;
  }

  // After check_region said Skip: moves the essential cursors past the region;
  // returns the next candidate.
  uint32_t skip_region() {
    // checked_until_ == kEndDoc wraps to 0, a no-op move; the run then ends.
    for (size_t i = first_essential_; i < n_; ++i) cursors_[i].next_geq(checked_until_ + 1);
    checked_ = false;
    return checked_until_ == kEndDoc ? kEndDoc : min_essential_doc();
  }

  // Moves essential cursor i past its posting and past every following one that
  // cannot enter whatever the other lists add: its contribution plus rest_[i] (the
  // bounds of all the other lists) below the threshold. Such a document is then never a candidate, and when another list
  // offers it, its sum lacks this list's part: with no negative weight that sum is
  // at most its true score (rounded addition is monotone), which cannot enter
  // either, now or later (the threshold only rises). On the 1M zipf corpus the
  // heaviest queries have essential lists of 10^4-10^5 postings, most of which
  // were candidates only to fail the first bound check.
  void advance(size_t i) {  // with kShortcuts only
    Cursor& c = cursors_[i];
    c.next();
    if (!skips_[i] || c.doc() == kEndDoc) return;
    const float* excess = lanes_[i].excess;
    if (excess[c.position()] > cut_[i]) return;  // the usual case where little is skipped
    c.to_position(first_above(excess, c.position() + 1, c.size(), cut_[i]));
  }

  // A list is required when the bounds of all the others cannot enter: every
  // document that may enter has it. The non-essential required lists with doc bits
  // are tested first, one bit each, before a candidate is scored or probed (on the
  // 1M zipf corpus the heaviest queries are frequent terms only, where most
  // candidates of the essential lists lack a required non-essential term).
  bool lacks_required(uint32_t doc) const {
    for (size_t j = 0; j < n_required_; ++j)
      if (TermScorer::position_in(lanes_[required_[j]].doc_bits, doc) == TermScorer::kNoPosition)
        return true;
    return false;
  }

  // Steps the essential cursors past doc; returns the next candidate.
  uint32_t skip_doc(uint32_t doc) {
    uint32_t next = kEndDoc;
    for (size_t i = first_essential_; i < n_; ++i) {
      if (cursors_[i].doc() == doc) advance(i);
      next = std::min(next, cursors_[i].doc());
    }
    return next;
  }

  // The cuts of advance() and the required lists, for the current threshold and
  // split (the split moves only when the threshold rises).
  void threshold_rose() {
    seen_entry_ = sink_.entry();
    for (size_t i = first_essential_; i < n_; ++i) {
      cut_[i] = !filter_ || sink_.may_enter(rest_[i]) ? -std::numeric_limits<float>::infinity()
                                                     : cannot_enter_upto(lanes_[i], rest_[i]);
      skips_[i] = cut_[i] >= term(i).cache().list_min;  // else no posting is below the cut
    }
    n_required_ = 0;
    for (size_t j = 0; j < first_essential_; ++j)
      if (lanes_[j].doc_bits && !sink_.may_enter(rest_[j])) required_[n_required_++] = j;
  }

  // A score part e <= the value returned cannot enter with rest added (-inf if
  // none is found): the threshold solved for e, lowered by a margin, and checked
  // with the same rounding as may_enter, which is monotone in e for a weight >= 0.
  float cannot_enter_upto(const Lane& lane, double rest) const {
    const float none = -std::numeric_limits<float>::infinity();
    if (lane.weight <= 0) return none;
    const double solved = (static_cast<double>(sink_.entry()) - sink_.base() - rest) / lane.weight;
    for (double margin : {1e-6, 1e-3}) {
      const auto cut = static_cast<float>(solved - margin * (std::abs(solved) + 1.0));
      if (!sink_.may_enter(lane.weight * cut + rest)) return cut;
    }
    return none;
  }

  // The first position in [p, n) whose part is above cut, n if none: 16 at a
  // time with a branch-free mask, which the compiler turns into vector compares.
  static size_t first_above(const float* excess, size_t p, size_t n, float cut) {
    for (; p < n && (p & 15); ++p)
      if (excess[p] > cut) return p;
    for (; p + 16 <= n; p += 16) {
      uint32_t mask = 0;
      for (size_t j = 0; j < 16; ++j) mask |= static_cast<uint32_t>(excess[p + j] > cut) << j;
      if (mask) return p + static_cast<size_t>(__builtin_ctz(mask));
    }
    for (; p < n; ++p)
      if (excess[p] > cut) return p;
    return n;
  }

  const std::vector<TermScorer>& terms_;
  DocSink& sink_;
  const size_t n_;
  std::vector<size_t> order_;          // order_[i]: the term of the i-th lowest list bound
  std::vector<Cursor> cursors_;        // cursors_[i] walks term(i)'s list
  std::vector<Lane> lanes_;            // lanes_[i]: term(i), flat
  std::vector<double> prefix_;         // prefix_[i]: sum of the list bounds of term(0..i)
  std::vector<double> rest_;           // rest_[i]: the sum of the list bounds of all terms but term(i)
  std::vector<float> cut_;             // cut_[i]: essential i skips the parts <= it
  std::vector<uint8_t> skips_;         // skips_[i]: whether any part of list i is <= cut_[i]
  float seen_entry_ = std::numeric_limits<float>::quiet_NaN();  // the threshold cut_ and required_ are for
  std::vector<size_t> required_;       // required_[0, n_required_): required lists with doc bits
  size_t n_required_ = 0;
  bool filter_ = false;                // whether advance() may skip postings (no negative weight)
  // Whether the query uses the required lists and advance()'s skips: only where every
  // term has doc bits (in at least 1/64 of the slots). Those are the queries whose
  // threshold nears the sum of the bounds; on the others of the 1M zipf corpus the
  // checks found little to skip and cost about what they saved.
  bool shortcuts_ = false;
  size_t first_essential_ = 0;         // lists [first_essential_, n_) are essential
  uint32_t checked_until_ = 0;         // end of the last region checked as MayEnter
  bool checked_ = false;               // whether that region still applies
  // batched_loop's candidates: doc, partial sum, parts by slot (kBatch x n_, zero
  // where absent), block-bound prefix sums of the non-essential lists, and the
  // indices of those that may still enter.
  uint32_t batch_docs_[kBatch];
  double batch_partial_[kBatch];
  std::vector<double> batch_values_;
  std::vector<double> batch_bounds_;
  uint8_t batch_alive_[kBatch];
};

}  // namespace ragcore
