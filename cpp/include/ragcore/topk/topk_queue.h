// The k best (score, id) of one query, as a binary heap whose root is the
// worst kept entry, so the entry threshold is exact at every step (dynamic
// pruning needs the tightest threshold it can get). Order as in topk_batch.h:
// higher score first, equal scores by id ascending.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "ragcore/topk/topk_batch.h"

namespace ragcore {

// ranks_before as a type, so the heap operations inline it (a function
// pointer was a call per comparison).
struct RanksBefore {
  bool operator()(const Candidate& a, const Candidate& b) const { return ranks_before(a, b); }
};

class TopKQueue {
 public:
  // Reserves for at most 4096 entries: k may far exceed the documents (the rest is padding).
  explicit TopKQueue(size_t k) : k_(k) { heap_.reserve(std::min<size_t>(k, 4096)); }

  size_t size() const { return heap_.size(); }
  bool full() const { return heap_.size() == k_; }

  // Whether a score could still enter (with a small enough id).
  bool may_enter(float score) const { return score >= entry_; }
  float entry() const { return entry_; }  // the lowest score that may enter now

  // Refuses every score below `floor` from now on. The caller guarantees that at
  // least k documents score >= floor, so nothing below it can be among the best k.
  void raise_floor(float floor) {
    floor_ = std::max(floor_, floor);
    entry_ = std::max(entry_, floor_);
  }

  // Whether a score computed in double as at most `bound` could still enter.
  // Rounding to float is monotone, so comparing the rounded bound is safe.
  bool may_enter_bound(double bound) const { return may_enter(static_cast<float>(bound)); }

  bool accepts(float score, int64_t id) const {
    return score >= floor_ && (!full() || ranks_before(Candidate{score, id}, heap_.front()));
  }

  // Returns whether the entry was kept.
  bool push(float score, int64_t id) {
    if (!accepts(score, id)) return false;
    if (full()) {
      replace_worst(Candidate{score, id});
    } else {
      heap_.push_back(Candidate{score, id});
      std::push_heap(heap_.begin(), heap_.end(), RanksBefore());
    }
    if (full()) entry_ = std::max(floor_, heap_.front().score);
    return true;
  }

  // Writes the entries best first, padded to k with (-inf, -1).
  void finish(float* scores, int64_t* ids) {
    std::sort(heap_.begin(), heap_.end(), RanksBefore());
    for (size_t i = 0; i < k_; ++i) {
      scores[i] = i < heap_.size() ? heap_[i].score : -std::numeric_limits<float>::infinity();
      ids[i] = i < heap_.size() ? heap_[i].id : kPaddingId;
    }
  }

 private:
  // Puts c, which ranks before the root, in the root's place and sifts it down: one
  // pass from the root, where pop_heap then push_heap made two.
  void replace_worst(const Candidate& c) {
    Candidate* h = heap_.data();
    const size_t n = heap_.size();
    size_t i = 0;
    for (size_t child = 1; child < n; child = 2 * i + 1) {
      if (child + 1 < n && ranks_before(h[child], h[child + 1])) ++child;  // the worse child
      if (!ranks_before(c, h[child])) break;
      h[i] = h[child];
      i = child;
    }
    h[i] = c;
  }

  size_t k_;
  float floor_ = -std::numeric_limits<float>::infinity();
  // The lowest score that may enter: floor_, or the worst kept score once full
  // (kept up to date, as pruning checks it for nearly every candidate).
  float entry_ = -std::numeric_limits<float>::infinity();
  std::vector<Candidate> heap_;  // a max-heap under ranks_before: front() is the worst
};

}  // namespace ragcore
