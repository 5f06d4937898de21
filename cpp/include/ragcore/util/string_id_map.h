// A map from strings to dense ids 0, 1, 2, ... in order of insertion.
//
// Open addressing over one byte arena: the tokenizer looks up every token of a
// corpus here, so a lookup must not allocate (std::unordered_map<std::string>
// would build a std::string per token).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ragcore {

class StringIdMap {
 public:
  static constexpr uint32_t kMissing = 0xFFFFFFFFu;

  StringIdMap() : slots_(16, kEmpty) {}

  size_t size() const { return ends_.size(); }

  std::string_view word(uint32_t id) const {
    const size_t begin = id == 0 ? 0 : ends_[id - 1];
    return std::string_view(arena_.data() + begin, ends_[id] - begin);
  }

  uint32_t find(std::string_view s) const { return find(s, hash(s)); }

  // find with h = hash(s) computed beforehand.
  uint32_t find(std::string_view s, uint64_t h) const {
    for (size_t i = h & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      const uint32_t id = slots_[i];
      if (id == kEmpty) return kMissing;
      if (hashes_[id] == h && word(id) == s) return id;
    }
  }

  // The id of s, inserting it when absent.
  uint32_t insert(std::string_view s) {
    const uint64_t h = hash(s);
    size_t i = h & (slots_.size() - 1);
    for (;; i = (i + 1) & (slots_.size() - 1)) {
      const uint32_t id = slots_[i];
      if (id == kEmpty) break;
      if (hashes_[id] == h && word(id) == s) return id;
    }
    const auto id = static_cast<uint32_t>(ends_.size());
    arena_.append(s.data(), s.size());
    ends_.push_back(arena_.size());
    hashes_.push_back(h);
    slots_[i] = id;
    if (2 * ends_.size() > slots_.size()) grow();  // load factor <= 1/2
    return id;
  }

  // For the look-up of several words at once, whose cache misses then overlap where
  // one find after another would wait for each in turn (a slot, then the word's hash
  // and end, then its bytes: three dependent misses in a map larger than the caches).
  // Call each stage for every word, in this order, before the finds:
  // the word's first slot,
  void prefetch_slot(uint64_t h) const { __builtin_prefetch(&slots_[h & (slots_.size() - 1)]); }
  // the hash and end of the word in that slot,
  void prefetch_entry(uint64_t h) const {
    const uint32_t id = slots_[h & (slots_.size() - 1)];
    if (id == kEmpty) return;
    __builtin_prefetch(&hashes_[id]);
    __builtin_prefetch(&ends_[id]);
  }
  // and its bytes.
  void prefetch_word(uint64_t h) const {
    const uint32_t id = slots_[h & (slots_.size() - 1)];
    if (id != kEmpty) __builtin_prefetch(arena_.data() + (id == 0 ? 0 : ends_[id - 1]));
  }

  static uint64_t hash(std::string_view s) {  // FNV-1a, then a finaliser to spread low bits
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
  }

 private:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;

  void grow() {
    std::vector<uint32_t> slots(slots_.size() * 2, kEmpty);
    for (uint32_t id = 0; id < ends_.size(); ++id) {
      size_t i = hashes_[id] & (slots.size() - 1);
      while (slots[i] != kEmpty) i = (i + 1) & (slots.size() - 1);
      slots[i] = id;
    }
    slots_.swap(slots);
  }

  std::string arena_;
  std::vector<size_t> ends_;
  std::vector<uint64_t> hashes_;
  std::vector<uint32_t> slots_;
};

}  // namespace ragcore
