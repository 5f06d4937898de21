// Where a query algorithm sends fully scored documents: adds the base score,
// rounds to float32 and offers the result to the top-k queue under the
// document's external id. With an allow mask, a document it does not allow
// never enters (the `allow=` filter of search, tested at candidate evaluation
// so that every algorithm returns what exhaustive-then-filter returns).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ragcore/topk/topk_queue.h"

namespace ragcore {

class DocSink {
 public:
  // ext_ids: external id per slot, or null to rank by slot (external ids ascend with slots).
  // allowed: one byte per slot (non-zero: may enter), or null for every slot.
  DocSink(TopKQueue& queue, double base, const int64_t* ext_ids, const uint8_t* allowed = nullptr)
      : queue_(&queue), base_(base), ext_ids_(ext_ids), allowed_(allowed) {}

  // Whether a document whose summed contributions are at most `bound` may enter.
  bool may_enter(double bound) const { return queue_->may_enter_bound(base_ + bound); }

  // The score a document needs to enter now, and the base added to every sum.
  float entry() const { return queue_->entry(); }
  double base() const { return base_; }

  // Returns whether the entry threshold may have changed.
  bool push(uint32_t doc, double sum) {
    if (allowed_ && !allowed_[doc]) return false;
    const auto score = static_cast<float>(base_ + sum);
    // Most candidates fail here; the external id (a likely cache miss) is read
    // only for those that may enter.
    if (!queue_->may_enter(score)) return false;
    return queue_->push(score, ext_ids_ ? ext_ids_[doc] : int64_t{doc});
  }

 private:
  TopKQueue* queue_;
  double base_;
  const int64_t* ext_ids_;
  const uint8_t* allowed_;
};

// A document's contributions collected by query position, then summed in
// query order, so that every algorithm rounds the same way. Absent terms hold
// 0.0, and adding it changes no sum (a sum from +0.0 is never -0.0), so the
// total needs no per-slot branch.
class SlotSum {
 public:
  explicit SlotSum(size_t n_slots) : value_(n_slots, 0.0) {}

  void add(size_t slot, double v) { value_[slot] = v; }

  double take_total() {
    double s = 0.0;
    for (double& v : value_) {
      s += v;
      v = 0.0;
    }
    return s;
  }

  void clear() { std::fill(value_.begin(), value_.end(), 0.0); }

 private:
  std::vector<double> value_;
};

}  // namespace ragcore
