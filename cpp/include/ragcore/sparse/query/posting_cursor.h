// A forward cursor over one PostingList, decoding the docs of a block at a time.
//
// Cursor capabilities the query algorithms rely on (PISA's cursor concept,
// duck-typed):
//   doc()           current doc, kEndDoc once exhausted
//   position()      index of the current posting in its list (for TermCache)
//   next()          to the next posting
//   next_geq(d)     to the first posting with doc >= d
//   block_index(), block_last_doc()
//                   the block holding the current posting, and its last doc
//   shallow_next_geq(d) / shallow_done() / shallow_index() / shallow_block()
//                   moves only the block-max pointer, without decoding, to the
//                   first block whose last doc is >= d, and reads its metadata
// The first four make a "posting cursor", all of them a "block-max cursor";
// is_posting_cursor / is_block_max_cursor below check them, so that each
// algorithm states with a static_assert what it needs (C++17 has no concepts).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "ragcore/sparse/posting_list.h"

namespace ragcore {

constexpr uint32_t kEndDoc = std::numeric_limits<uint32_t>::max();

class PostingCursor {
 public:
  explicit PostingCursor(const PostingList& list) : list_(&list) { load_block(0); }

  uint32_t doc() const { return doc_; }
  size_t position() const { return block_ * kBlockSize + pos_; }
  size_t size() const { return list_->size(); }
  size_t block_index() const { return block_; }  // the block holding doc()
  uint32_t block_last_doc() const { return list_->block(block_).last_doc; }  // doc() != kEndDoc

  void next() {
    if (++pos_ < count_) {
      doc_ = docs_[pos_];
    } else {
      load_block(block_ + 1);
    }
  }

  void next_geq(uint32_t target) {
    if (doc_ >= target) return;
    if (list_->block(block_).last_doc < target) {
      load_block(first_block_geq(block_ + 1, target));
      if (doc_ >= target) return;
    }
    while (docs_[pos_] < target) ++pos_;  // the block's last doc is >= target
    doc_ = docs_[pos_];
  }

  // To the posting at `position` (>= position(); size() or more: exhausted),
  // decoding only the block that holds it.
  void to_position(size_t position) {
    const size_t b = position / kBlockSize;
    if (b != block_) load_block(b);
    if (doc_ == kEndDoc) return;
    pos_ = position % kBlockSize;
    if (pos_ >= count_) {
      load_block(b + 1);
      return;
    }
    doc_ = docs_[pos_];
  }

  void shallow_next_geq(uint32_t target) {
    if (shallow_ < list_->num_blocks() && list_->block(shallow_).last_doc < target)
      shallow_ = first_block_geq(shallow_ + 1, target);
  }
  bool shallow_done() const { return shallow_ >= list_->num_blocks(); }
  size_t shallow_index() const { return shallow_; }
  const BlockMeta& shallow_block() const { return list_->block(shallow_); }

 private:
  // The first block from b on whose last doc is >= target (num_blocks() if
  // none): a few steps linearly (most moves are short), then galloping - blocks
  // b + 4, b + 8, b + 16, ... - and a binary search in the last stride. A binary
  // search over the whole rest of a long list cost about log2(blocks) poorly
  // predicted steps for every medium move (MaxScore's probes of the frequent
  // lists); the threshold seed and skips that jump far still take O(log) steps.
  size_t first_block_geq(size_t b, uint32_t target) const {
    const size_t n = list_->num_blocks();
    for (size_t end = std::min(n, b + 4); b < end; ++b)
      if (list_->block(b).last_doc >= target) return b;
    // Every block before b ends below target.
    size_t stride = 4;
    while (b + stride < n && list_->block(b + stride - 1).last_doc < target) {
      b += stride;
      stride *= 2;
    }
    size_t count = std::min(n, b + stride) - b;  // the answer is in [b, b + count]
    while (count > 0) {
      const size_t half = count / 2;
      if (list_->block(b + half).last_doc < target) {
        b += half + 1;
        count -= half + 1;
      } else {
        count = half;
      }
    }
    return b;
  }

  void load_block(size_t b) {
    block_ = b;
    pos_ = 0;
    if (b >= list_->num_blocks()) {
      count_ = 0;
      doc_ = kEndDoc;
      return;
    }
    if (shallow_ < b) shallow_ = b;
    count_ = list_->decode_docs(b, docs_);
    doc_ = docs_[0];
  }

  const PostingList* list_;
  size_t block_ = 0, pos_ = 0, count_ = 0, shallow_ = 0;
  uint32_t doc_ = kEndDoc;
  uint32_t docs_[kBlockSize];
};

template <class C, class = void>
struct is_posting_cursor : std::false_type {};
template <class C>
struct is_posting_cursor<
    C, std::void_t<decltype(uint32_t{std::declval<const C&>().doc()}),
                   decltype(size_t{std::declval<const C&>().position()}),
                   decltype(std::declval<C&>().next()),
                   decltype(std::declval<C&>().next_geq(uint32_t{}))>> : std::true_type {};

template <class C, class = void>
struct is_block_max_cursor : std::false_type {};
template <class C>
struct is_block_max_cursor<
    C, std::void_t<decltype(size_t{std::declval<const C&>().block_index()}),
                   decltype(uint32_t{std::declval<const C&>().block_last_doc()}),
                   decltype(std::declval<C&>().shallow_next_geq(uint32_t{})),
                   decltype(bool{std::declval<const C&>().shallow_done()}),
                   decltype(size_t{std::declval<const C&>().shallow_index()}),
                   decltype(uint32_t{std::declval<const C&>().shallow_block().last_doc})>>
    : is_posting_cursor<C> {};

}  // namespace ragcore
