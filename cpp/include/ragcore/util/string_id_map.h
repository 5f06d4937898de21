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

  uint32_t find(std::string_view s) const {
    const uint64_t h = hash(s);
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

 private:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;

  static uint64_t hash(std::string_view s) {  // FNV-1a, then a finaliser to spread low bits
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
  }

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
