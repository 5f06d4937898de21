// The memory bound on a search result: nq x k (score, id) pairs of 12 bytes. k may exceed
// the number of items (the rows are then padded), but not so far that the padding alone
// would take more than kMaxPaddedResultBytes; and no result may overflow a size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ragcore {

constexpr size_t kResultEntryBytes = sizeof(float) + sizeof(int64_t);
constexpr size_t kMaxPaddedResultBytes = size_t{1} << 30;  // 1 GiB
// No single array may exceed what a signed byte count holds.
constexpr size_t kMaxResultEntries = (size_t{1} << 62) / kResultEntryBytes;

// Throws std::invalid_argument (naming k) if the result of nq queries at k over n_items
// would overflow, or is padded (k > n_items) and larger than kMaxPaddedResultBytes.
inline void check_result_size(size_t nq, size_t k, size_t n_items) {
  if (k > kMaxResultEntries || (nq > 0 && k > kMaxResultEntries / nq))
    throw std::invalid_argument("k: " + std::to_string(k) + " results for each of " +
                                std::to_string(nq) + " queries overflow the result size");
  const size_t bytes = nq * k * kResultEntryBytes;
  if (k > n_items && bytes > kMaxPaddedResultBytes)
    throw std::invalid_argument(
        "k: " + std::to_string(k) + " exceeds the " + std::to_string(n_items) +
        " items, and the padded result (" + std::to_string(nq) + " x " + std::to_string(k) +
        " x 12 bytes) would exceed the 1 GiB bound on padded results; use k <= " +
        std::to_string(n_items > 0 ? n_items : 1) + " (rows are padded only to k)");
}

}  // namespace ragcore
