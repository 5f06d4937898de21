// Stand-in for CUB's DeviceSegmentedSort under the CPU emulation (emu.h):
// the same call, sorting each segment with std::sort.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <functional>

namespace cub {

struct DeviceSegmentedSort {
  template <class Key, class Offset, class Count, class Segments>
  static cudaError_t SortKeysDescending(void* temp, size_t& temp_bytes, const Key* in, Key* out,
                                        Count num_items, Segments num_segments, const Offset* begin,
                                        const Offset* end, cudaStream_t = 0) {
    if (temp == nullptr) {
      temp_bytes = 1;
      return cudaSuccess;
    }
    (void)num_items;
    for (Segments s = 0; s < num_segments; ++s) {
      std::copy(in + begin[s], in + end[s], out + begin[s]);
      std::sort(out + begin[s], out + end[s], std::greater<Key>());
    }
    return cudaSuccess;
  }
};

}  // namespace cub
