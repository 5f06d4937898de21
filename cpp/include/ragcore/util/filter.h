// Which stored rows a search may return (the `allow=` argument of search).
//
// The mask is one byte per key (non-zero: allowed). The key is the row's
// external id (the usual case: a mask indexed by id, built by the Python layer
// from an id list or taken as a boolean array), or the row position when ids are
// too sparse for a mask by id. Keys beyond the mask are not allowed. The scans
// test it before a row enters the top-k, so a filtered search still returns k
// results whenever k allowed rows are scanned.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ragcore {

struct AllowFilter {
  const uint8_t* mask = nullptr;  // nullptr: every row is allowed
  size_t len = 0;                 // keys in the mask
  bool by_row = false;            // key = row position (true) or external id (false)

  bool active() const { return mask != nullptr; }

  // Row `row` with external id `id` (only called when active()).
  bool allows(size_t row, int64_t id) const {
    const uint64_t key = by_row ? static_cast<uint64_t>(row) : static_cast<uint64_t>(id);
    return key < len && mask[key] != 0;
  }
};

}  // namespace ragcore
