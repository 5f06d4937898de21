// The k best (score, id) of one query as a reservoir (topk_batch.h's idea, for one query
// and without a bound on k): a candidate at or above entry() is appended; when k plus some
// slack are held, the best k are kept (nth_element) and entry() rises to the k-th best.
// Appends cost O(1) amortised against a heap's O(log k) per entering candidate, which is
// what a large k pays in exhaustive scoring; dynamic pruning, which needs the exact k-th
// best at every step, uses TopKQueue. Same order as topk_batch.h: higher score first,
// equal scores by id ascending.
//
// Ids below 2^32 (slots) may be pushed with push_slot: the entry is then one 64-bit key
// that orders as (score, id) do, so selecting and sorting compare integers, not a float
// and then an id. A query pushes through one of push and push_slot only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
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
    keys_.clear();
  }

  float entry() const { return entry_; }  // the lowest score that may still enter

  // The caller has checked score >= entry().
  void push(float score, int64_t id) {
    items_.push_back(Candidate{score, id});
    if (items_.size() == capacity_) keep_best_k(items_, RanksBefore());
  }

  // The same for an id below 2^32; score must not be NaN or -0.0 (a sum from +0.0 never is).
  void push_slot(float score, uint32_t id) {
    keys_.push_back(key_of(score, id));
    if (keys_.size() == capacity_) keep_best_k(keys_, std::less<uint64_t>());
  }

  // Writes the best k, best first, padded to k with (-inf, -1). A reservoir grown past
  // 65,536 entries (a very large k) is freed, so that it does not stay with its owner.
  void finish(float* scores, int64_t* ids) {
    size_t kept;
    if (!keys_.empty()) {
      kept = sorted_best_k(keys_, std::less<uint64_t>());
      for (size_t i = 0; i < kept; ++i) {
        scores[i] = score_of(keys_[i]);
        ids[i] = static_cast<int64_t>(keys_[i] & 0xffffffffu);
      }
    } else {
      kept = sorted_best_k(items_, RanksBefore());
      for (size_t i = 0; i < kept; ++i) {
        scores[i] = items_[i].score;
        ids[i] = items_[i].id;
      }
    }
    std::fill(scores + kept, scores + k_, -std::numeric_limits<float>::infinity());
    std::fill(ids + kept, ids + k_, kPaddingId);
    if (items_.capacity() > (size_t{1} << 16)) std::vector<Candidate>().swap(items_);
    if (keys_.capacity() > (size_t{1} << 16)) std::vector<uint64_t>().swap(keys_);
  }

 private:
  // A float's bits mapped so that unsigned order is float order (negatives: all bits
  // flipped; the rest: the sign bit set), then flipped again so that a higher score gives a
  // lower key; the id below, so that equal scores order by id ascending.
  static uint64_t key_of(float score, uint32_t id) {
    uint32_t u;
    std::memcpy(&u, &score, sizeof u);
    const uint32_t ascending = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return (uint64_t{~ascending} << 32) | id;
  }
  static float score_of(uint64_t key) {
    const auto ascending = ~static_cast<uint32_t>(key >> 32);
    const uint32_t u = (ascending & 0x80000000u) ? (ascending & 0x7fffffffu) : ~ascending;
    float score;
    std::memcpy(&score, &u, sizeof score);
    return score;
  }
  float score_at(const std::vector<Candidate>& v, size_t i) const { return v[i].score; }
  float score_at(const std::vector<uint64_t>& v, size_t i) const { return score_of(v[i]); }

  template <class T, class Before>
  void keep_best_k(std::vector<T>& v, Before before) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k_ - 1), v.end(), before);
    v.resize(k_);
    // The k-th best: anything strictly below it can never enter again.
    entry_ = std::max(entry_, score_at(v, k_ - 1));
  }

  // The best min(k, held) entries, sorted best first, at the front; returns how many.
  template <class T, class Before>
  size_t sorted_best_k(std::vector<T>& v, Before before) {
    if (v.size() > k_) keep_best_k(v, before);
    std::sort(v.begin(), v.end(), before);
    return v.size();
  }

  size_t k_ = 0;
  size_t capacity_ = 0;
  float entry_ = -std::numeric_limits<float>::infinity();
  std::vector<Candidate> items_;
  std::vector<uint64_t> keys_;
};

}  // namespace ragcore
