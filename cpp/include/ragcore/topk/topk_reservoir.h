// The k best (score, id) of one query as a reservoir (topk_batch.h's idea, for one query
// and without a bound on k): a candidate at or above entry() is appended; when k plus some
// slack are held, the best k are kept (nth_element) and entry() rises to the k-th best.
// Appends cost O(1) amortised against a heap's O(log k) per entering candidate, which is
// what a large k pays in exhaustive scoring; dynamic pruning, which needs the exact k-th
// best at every step, uses TopKQueue. Same order as topk_batch.h: higher score first,
// equal scores by id ascending.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "ragcore/topk/topk_batch.h"
#include "ragcore/topk/topk_queue.h"

namespace ragcore {

class TopKReservoir {
 public:
  // Starts a query: keeps the best k of what comes, refusing scores below floor (the
  // caller guarantees that at least k candidates score >= floor, or that all of them come).
  void reset(size_t k, float floor) {
    k_ = k;
    capacity_ = k + std::clamp<size_t>(k / 2, 32, 4096);
    entry_ = floor;
    items_.clear();
  }

  float entry() const { return entry_; }  // the lowest score that may still enter

  // The caller has checked score >= entry().
  void push(float score, int64_t id) {
    items_.push_back(Candidate{score, id});
    if (items_.size() == capacity_) keep_best_k();
  }

  // Writes the best k, best first, padded to k with (-inf, -1). A reservoir grown past
  // 65,536 entries (a very large k) is freed, so that it does not stay with its owner.
  void finish(float* scores, int64_t* ids) {
    if (items_.size() > k_) keep_best_k();
    const size_t kept = items_.size();
    std::sort(items_.begin(), items_.end(), RanksBefore());
    for (size_t i = 0; i < kept; ++i) {
      scores[i] = items_[i].score;
      ids[i] = items_[i].id;
    }
    std::fill(scores + kept, scores + k_, -std::numeric_limits<float>::infinity());
    std::fill(ids + kept, ids + k_, kPaddingId);
    if (items_.capacity() > (size_t{1} << 16)) std::vector<Candidate>().swap(items_);
  }

 private:
  void keep_best_k() {
    std::nth_element(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(k_ - 1),
                     items_.end(), RanksBefore());
    items_.resize(k_);
    // The k-th best: anything strictly below it can never enter again.
    entry_ = std::max(entry_, items_[k_ - 1].score);
  }

  size_t k_ = 0;
  size_t capacity_ = 0;
  float entry_ = -std::numeric_limits<float>::infinity();
  std::vector<Candidate> items_;
};

}  // namespace ragcore
