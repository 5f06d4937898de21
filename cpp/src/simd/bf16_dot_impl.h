// Pieces of the bf16 kernels shared by the files that implement them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ragcore/simd/bf16_dot.h"

namespace ragcore {

// Scalar / Avx512Bf16 layout: query i's padded row.
inline const uint16_t* bf16_query_row(const Bf16Queries& q, size_t i) {
  return q.data.data() + i * q.depth;
}

// Amx layout: the chunk c operand (16 pairs x 16 queries) of the block holding query i.
inline const uint16_t* bf16_query_tile(const Bf16Queries& q, size_t block, size_t chunk) {
  const size_t chunks = q.depth / kBf16Chunk;
  return q.data.data() + (block * chunks + chunk) * kBf16Chunk * kBf16TileQueries;
}

extern const Bf16Kernels kBf16ScalarKernels;
#ifdef RAGCORE_X86
extern const Bf16Kernels kBf16Avx512Kernels;
extern const Bf16Kernels kBf16AmxKernels;
#endif

}  // namespace ragcore
