#include "ragcore/sparse/posting_list.h"

#include <algorithm>
#include <stdexcept>

namespace ragcore {

void PostingList::encode_from(size_t first_block, const uint32_t* docs, const uint32_t* tfs,
                              size_t n) {
  // Blocks before first_block stay; everything from it on is (re)written.
  const uint64_t start = first_block < blocks_.size() ? blocks_[first_block].offset
                                                      : bytes_.size() - kCodecPadding;
  bytes_.resize(start);
  blocks_.resize(first_block);
  size_ = first_block * kBlockSize;
  int64_t prev = first_block == 0 ? -1 : static_cast<int64_t>(blocks_.back().last_doc);
  for (size_t i = 0; i < n; i += kBlockSize) {
    const size_t count = std::min(kBlockSize, n - i);
    const BlockMeta meta{docs[i + count - 1], bytes_.size()};
    encode_block(docs + i, tfs + i, count, prev, bytes_);
    blocks_.push_back(meta);
    prev = meta.last_doc;
  }
  size_ += n;
  bytes_.insert(bytes_.end(), kCodecPadding, 0);
}

void PostingList::append(const uint32_t* docs, const uint32_t* tfs, size_t n) {
  if (n == 0) return;
  if (!blocks_.empty() && block_size(blocks_.size() - 1) < kBlockSize) {
    // Re-encode the partial last block together with the new postings.
    const size_t last = blocks_.size() - 1;
    std::vector<uint32_t> all_docs(kBlockSize + n), all_tfs(kBlockSize + n);
    const size_t kept = decode(last, all_docs.data(), all_tfs.data());
    std::copy(docs, docs + n, all_docs.begin() + kept);
    std::copy(tfs, tfs + n, all_tfs.begin() + kept);
    encode_from(last, all_docs.data(), all_tfs.data(), kept + n);
  } else {
    encode_from(blocks_.size(), docs, tfs, n);
  }
}

size_t PostingList::remove_dead(const uint8_t* dead, const std::vector<uint32_t>& dead_sorted) {
  uint32_t docs[kBlockSize], tfs[kBlockSize];
  size_t first_changed = blocks_.size();
  for (size_t b = 0; b < blocks_.size() && first_changed == blocks_.size(); ++b) {
    const uint32_t first_possible = b == 0 ? 0 : blocks_[b - 1].last_doc + 1;
    const auto it = std::lower_bound(dead_sorted.begin(), dead_sorted.end(), first_possible);
    if (it == dead_sorted.end() || *it > blocks_[b].last_doc) continue;  // no removed doc in range
    const size_t n = decode(b, docs, tfs);
    for (size_t i = 0; i < n; ++i)
      if (dead[docs[i]]) first_changed = b;
  }
  if (first_changed == blocks_.size()) return 0;
  std::vector<uint32_t> kept_docs, kept_tfs;
  for (size_t b = first_changed; b < blocks_.size(); ++b) {
    const size_t n = decode(b, docs, tfs);
    for (size_t i = 0; i < n; ++i) {
      if (dead[docs[i]]) continue;
      kept_docs.push_back(docs[i]);
      kept_tfs.push_back(tfs[i]);
    }
  }
  const size_t before = size_;
  encode_from(first_changed, kept_docs.data(), kept_tfs.data(), kept_docs.size());
  return before - size_;
}

bool PostingList::contains(uint32_t doc) const {
  const auto it = std::lower_bound(blocks_.begin(), blocks_.end(), doc,
                                   [](const BlockMeta& m, uint32_t d) { return m.last_doc < d; });
  if (it == blocks_.end()) return false;
  uint32_t docs[kBlockSize];
  const size_t n = decode_docs(static_cast<size_t>(it - blocks_.begin()), docs);
  return std::binary_search(docs, docs + n, doc);
}

PostingList PostingList::from_payload(const uint8_t* data, size_t n_bytes, size_t size,
                                      size_t n_docs, const int64_t* ext_ids,
                                      const uint32_t* lengths, uint64_t* tf_sums) {
  // Decode block by block with bounds checks, then re-encode: the result is
  // byte-identical for a good file and a damaged one cannot cause a bad read.
  std::vector<uint8_t> padded(data, data + n_bytes);
  padded.insert(padded.end(), kCodecPadding, 0);
  std::vector<uint32_t> docs(size), tfs(size);
  size_t pos = 0;
  int64_t prev = -1;
  for (size_t i = 0; i < size; i += kBlockSize) {
    const size_t n = std::min(kBlockSize, size - i);
    if (pos + 2 > n_bytes || padded[pos] > 32 || padded[pos + 1] > 32)
      throw std::invalid_argument("posting block header out of range");
    const size_t len = 2 + (n * padded[pos] + 7) / 8 + (n * padded[pos + 1] + 7) / 8;
    if (pos + len > n_bytes) throw std::invalid_argument("posting block runs past its list");
    decode_block(padded.data() + pos, n, prev, docs.data() + i, tfs.data() + i);
    for (size_t j = i; j < i + n; ++j) {
      if (static_cast<int64_t>(docs[j]) <= prev || docs[j] >= n_docs)
        throw std::invalid_argument("postings out of order or out of range");
      if (ext_ids[docs[j]] < 0 || tfs[j] == 0 || tfs[j] > lengths[docs[j]])
        throw std::invalid_argument("posting of a removed document or with a bad frequency");
      if (tf_sums) tf_sums[docs[j]] += tfs[j];
      prev = docs[j];
    }
    pos += len;
  }
  if (pos != n_bytes) throw std::invalid_argument("posting list has trailing bytes");
  PostingList list;
  list.encode_from(0, docs.data(), tfs.data(), size);
  return list;
}

}  // namespace ragcore
