// Top-k selection for a block of queries.
//
// Order: higher score first; equal scores are ordered by id ascending, so the
// result is the same whatever the thread split or scan order.
//
// Each query keeps a reservoir of candidates (the idea of FAISS's ReservoirTopN):
// a candidate at or above the query's threshold is appended; when the reservoir
// is full, the best k are kept (nth_element) and the threshold rises to the k-th
// best score. Appends are sequential writes, so a tile that touches hundreds of
// queries does not walk hundreds of heaps, and the amortised cost per candidate
// is O(1) rather than a heap's O(log k). One TopKBatch serves one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace ragcore {

constexpr int64_t kPaddingId = -1;

struct Candidate {
  float score;
  int64_t id;
};

inline bool ranks_before(const Candidate& a, const Candidate& b) {
  return a.score > b.score || (a.score == b.score && a.id < b.id);
}

class TopKBatch {
 public:
  TopKBatch(size_t nq, size_t k)
      : k_(k),
        capacity_(k + std::clamp<size_t>(k / 2, 32, 4096)),
        items_(new Candidate[nq * capacity_]),  // not zeroed: slots are written before read
        counts_(nq, 0),
        thresholds_(nq, -std::numeric_limits<float>::infinity()) {}

  // Per query, the lowest score that can still enter (contiguous, for SIMD filters).
  const float* thresholds() const { return thresholds_.data(); }
  float threshold(size_t q) const { return thresholds_[q]; }

  void push(size_t q, float score, int64_t id) {
    if (score < thresholds_[q]) return;
    size_t& count = counts_[q];
    items_[q * capacity_ + count] = Candidate{score, id};
    if (++count == capacity_) keep_best_k(q);
  }

  // Adds every candidate that `other` holds for its query q_other as query q.
  void merge_from(const TopKBatch& other, size_t q_other, size_t q) {
    const Candidate* first = other.items_.get() + q_other * other.capacity_;
    for (size_t c = 0; c < other.counts_[q_other]; ++c) push(q, first[c].score, first[c].id);
  }

  // Writes the best k_out of query q, best first, padded with (-inf, -1).
  void finish(size_t q, float* out_scores, int64_t* out_ids, size_t k_out) {
    Candidate* first = items_.get() + q * capacity_;
    const size_t kept = std::min(k_out, counts_[q]);
    std::partial_sort(first, first + kept, first + counts_[q], ranks_before);
    for (size_t c = 0; c < kept; ++c) {
      out_scores[c] = first[c].score;
      out_ids[c] = first[c].id;
    }
    for (size_t c = kept; c < k_out; ++c) {
      out_scores[c] = -std::numeric_limits<float>::infinity();
      out_ids[c] = kPaddingId;
    }
  }

 private:
  void keep_best_k(size_t q) {
    Candidate* first = items_.get() + q * capacity_;
    std::nth_element(first, first + (k_ - 1), first + capacity_, ranks_before);
    counts_[q] = k_;
    // The k-th best: anything strictly below it can never enter again.
    thresholds_[q] = first[k_ - 1].score;
  }

  size_t k_;
  size_t capacity_;
  std::unique_ptr<Candidate[]> items_;
  std::vector<size_t> counts_;
  std::vector<float> thresholds_;
};

}  // namespace ragcore
