// One term's postings: (doc, tf) pairs in doc order, compressed by blocks
// (posting_codec.h), with each block's last doc for skipping. Lists grow at the end (new documents get larger doc numbers)
// and shrink by filtering, so the index never has to be rebuilt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ragcore/sparse/posting_codec.h"

namespace ragcore {

struct BlockMeta {
  uint32_t last_doc;
  uint64_t offset;  // of the block's bytes in the list
};

class PostingList {
 public:
  PostingList() : bytes_(kCodecPadding, 0) {}

  size_t size() const { return size_; }
  size_t num_blocks() const { return blocks_.size(); }
  const BlockMeta& block(size_t b) const { return blocks_[b]; }
  size_t block_size(size_t b) const {
    return b + 1 < blocks_.size() ? kBlockSize : size_ - kBlockSize * (blocks_.size() - 1);
  }

  // Decodes block b into docs/tfs (kBlockSize slots each); returns its size.
  size_t decode(size_t b, uint32_t* docs, uint32_t* tfs) const {
    const int64_t prev = b == 0 ? -1 : static_cast<int64_t>(blocks_[b - 1].last_doc);
    const size_t n = block_size(b);
    decode_block(bytes_.data() + blocks_[b].offset, n, prev, docs, tfs);
    return n;
  }

  // Decodes only the docs of block b (query time needs no frequencies: the
  // index keeps each posting's score part, see TermCache).
  size_t decode_docs(size_t b, uint32_t* docs) const {
    const int64_t prev = b == 0 ? -1 : static_cast<int64_t>(blocks_[b - 1].last_doc);
    const size_t n = block_size(b);
    decode_block_docs(bytes_.data() + blocks_[b].offset, n, prev, docs);
    return n;
  }

  // Appends postings with docs ascending and above the last doc held.
  void append(const uint32_t* docs, const uint32_t* tfs, size_t n);

  // Drops the postings whose doc has dead[doc] != 0 (dead_sorted: those docs,
  // ascending, to skip blocks that hold none); returns how many.
  size_t remove_dead(const uint8_t* dead, const std::vector<uint32_t>& dead_sorted);

  bool contains(uint32_t doc) const;

  // Payload bytes without padding, and the list's memory including metadata.
  size_t payload_bytes() const { return bytes_.size() - kCodecPadding; }
  size_t memory_bytes() const { return bytes_.capacity() + blocks_.capacity() * sizeof(BlockMeta); }
  const uint8_t* payload() const { return bytes_.data(); }

  // Rebuilds a list from saved bytes; throws std::invalid_argument unless they
  // decode to `size` postings with ascending docs below n_docs, each of a live
  // document (ext_ids[doc] >= 0) with 1 <= tf <= lengths[doc]. Adds each posting's
  // tf to tf_sums[doc] (n_docs entries) when tf_sums is given.
  static PostingList from_payload(const uint8_t* data, size_t n_bytes, size_t size, size_t n_docs,
                                  const int64_t* ext_ids, const uint32_t* lengths,
                                  uint64_t* tf_sums = nullptr);

 private:
  void encode_from(size_t first_block, const uint32_t* docs, const uint32_t* tfs, size_t n);

  std::vector<uint8_t> bytes_;  // blocks back to back, then kCodecPadding zeros
  std::vector<BlockMeta> blocks_;
  size_t size_ = 0;
};

}  // namespace ragcore
