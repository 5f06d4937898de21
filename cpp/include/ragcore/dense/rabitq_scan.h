// The inner loop of the RaBitQ scan: <x_j, P q> for a block of code rows, where
// x_j holds the codes of row j as bit planes (see rabitq.h). Two kernels, picked
// at run time: scalar (one look-up per plane byte in per-query tables of 256
// partial sums per 8 dimensions) and AVX-512 (a masked add of 16 rotated query
// coordinates per 16 code bits, the query pre-scaled by 2^b for plane b, zero-
// padded to a multiple of 64 dimensions). At 1 bit the search uses the fast scan of
// rabitq_fastscan.h instead where the index gives it its packed blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ragcore/simd/simd.h"

namespace ragcore {

struct RabitqScanKernel {
  // tables = what `scan` reads for this query, built from rotated (dp floats).
  void (*tables)(const float* rotated, size_t dp, size_t bits, std::vector<float>& tables);
  // out[j] = <x_j, P q> for the n rows starting at rows (row stride row_bytes).
  void (*scan)(const uint8_t* rows, size_t row_bytes, size_t n, size_t dp, size_t bits,
               const float* tables, float* out);
};

// The kernel of this SIMD level, or the scalar one where the level has none.
const RabitqScanKernel& rabitq_scan_kernel(SimdLevel level);

const RabitqScanKernel& rabitq_scan_scalar();
#ifdef RAGCORE_X86
const RabitqScanKernel& rabitq_scan_avx512();
#endif

}  // namespace ragcore
