// Where a query algorithm sends fully scored documents: adds the base score,
// rounds to float32 and offers the result to the top-k queue under the
// document's external id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ragcore/query/topk_queue.h"

namespace ragcore {

class DocSink {
 public:
  DocSink(TopKQueue& queue, double base, const int64_t* ext_ids)
      : queue_(&queue), base_(base), ext_ids_(ext_ids) {}

  // Whether a document whose summed contributions are at most `bound` may enter.
  bool may_enter(double bound) const { return queue_->may_enter_bound(base_ + bound); }

  // Returns whether the entry threshold may have changed.
  bool push(uint32_t doc, double sum) {
    const auto score = static_cast<float>(base_ + sum);
    // Most candidates fail here; the external id (a likely cache miss) is read
    // only for those that may enter.
    if (!queue_->may_enter(score)) return false;
    return queue_->push(score, ext_ids_[doc]);
  }

 private:
  TopKQueue* queue_;
  double base_;
  const int64_t* ext_ids_;
};

// A document's contributions collected by query position, then summed in
// query order, so that every algorithm rounds the same way.
class SlotSum {
 public:
  explicit SlotSum(size_t n_slots) : value_(n_slots, 0.0), present_(n_slots, 0) {}

  void add(size_t slot, double v) {
    value_[slot] = v;
    present_[slot] = 1;
  }

  double take_total() {
    double s = 0.0;
    for (size_t i = 0; i < value_.size(); ++i) {
      if (present_[i]) s += value_[i];
      present_[i] = 0;
    }
    return s;
  }

  void clear() { std::fill(present_.begin(), present_.end(), 0); }

 private:
  std::vector<double> value_;
  std::vector<char> present_;
};

}  // namespace ragcore
