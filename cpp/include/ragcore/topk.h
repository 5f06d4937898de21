// Bounded top-k selection over caller-owned arrays.
//
// Order: higher score first; equal scores are ordered by id ascending, so the
// result is the same whatever the thread split or scan order. The heap keeps the
// *worst* kept entry at its root, so most candidates are rejected by one compare
// against threshold().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace ragcore {

// Id of an empty slot while the heap fills. It loses every tie against a real id,
// so a real candidate scoring -inf still enters; finish() turns it into -1.
constexpr int64_t kEmptyId = std::numeric_limits<int64_t>::max();
constexpr int64_t kPaddingId = -1;

inline bool ranks_before(float score_a, int64_t id_a, float score_b, int64_t id_b) {
  return score_a > score_b || (score_a == score_b && id_a < id_b);
}

class TopKHeap {
 public:
  // scores/ids: k slots each, owned by the caller.
  TopKHeap(float* scores, int64_t* ids, size_t k) : scores_(scores), ids_(ids), k_(k) {}

  void reset() {
    std::fill(scores_, scores_ + k_, -std::numeric_limits<float>::infinity());
    std::fill(ids_, ids_ + k_, kEmptyId);
  }

  // Lowest score still kept: a candidate strictly below it cannot enter.
  float threshold() const { return scores_[0]; }

  void push(float score, int64_t id) {
    if (!ranks_before(score, id, scores_[0], ids_[0])) return;
    sift_down_from_root(score, id);
  }

  // Sorts the kept entries best first and marks empty slots with id -1.
  void finish() {
    for (size_t end = k_; end > 1; --end) {
      float s = scores_[end - 1];
      int64_t i = ids_[end - 1];
      scores_[end - 1] = scores_[0];
      ids_[end - 1] = ids_[0];
      sift_down(0, end - 1, s, i);
    }
    for (size_t j = 0; j < k_; ++j)
      if (ids_[j] == kEmptyId) ids_[j] = kPaddingId;
  }

 private:
  void sift_down_from_root(float score, int64_t id) { sift_down(0, k_, score, id); }

  // Places (score, id) at `pos` and moves it down within [0, size).
  void sift_down(size_t pos, size_t size, float score, int64_t id) {
    for (;;) {
      size_t child = 2 * pos + 1;
      if (child >= size) break;
      if (child + 1 < size &&
          ranks_before(scores_[child], ids_[child], scores_[child + 1], ids_[child + 1]))
        ++child;  // the worse child
      if (!ranks_before(score, id, scores_[child], ids_[child])) break;
      scores_[pos] = scores_[child];
      ids_[pos] = ids_[child];
      pos = child;
    }
    scores_[pos] = score;
    ids_[pos] = id;
  }

  float* scores_;
  int64_t* ids_;
  size_t k_;
};

}  // namespace ragcore
