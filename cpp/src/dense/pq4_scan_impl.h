// The fast-scan loops, one build per SIMD level (scalar here, AVX2 and AVX-512 in
// their own files with their own target flags), and what they share.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ragcore/dense/pq4.h"

namespace ragcore {

void pq4_scan_scalar(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                     uint16_t* losses);
void pq4_select_scalar(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                       uint32_t first_row, const AllowFilter& allow, const int64_t* ids,
                       Pq4Candidates& out);
#ifdef RAGCORE_X86
void pq4_scan_avx2(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                   uint16_t* losses);
void pq4_select_avx2(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                     uint32_t first_row, const AllowFilter& allow, const int64_t* ids,
                     Pq4Candidates& out);
void pq4_select_avx512(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                       uint32_t first_row, const AllowFilter& allow, const int64_t* ids,
                       Pq4Candidates& out);
void pq4_select_avx512_many(const uint8_t* packed, size_t n, size_t m, const uint8_t* const* luts,
                            size_t nq, uint32_t first_row, const AllowFilter& allow,
                            const int64_t* ids, Pq4Candidates* const* outs);
#endif

// The helpers below are compiled into files built with different target flags (the
// scalar, AVX2 and AVX-512 scans): internal linkage gives each file its own copy, so the
// linker cannot hand the scalar scan an AVX-512 one.
namespace {

// Offers the vectors of one block whose bit is set in `lanes` (bit i: vector i of the
// block) to out. even[j] and odd[j] are the losses of vectors 2j and 2j + 1. The bound
// is checked again per vector: an earlier offer of the same block may have lowered it.
inline void pq4_offer_lanes(uint32_t lanes, const uint16_t* even, const uint16_t* odd,
                            uint32_t block_row, const AllowFilter& allow, const int64_t* ids,
                            Pq4Candidates& out) {
  while (lanes) {
    const int i = __builtin_ctz(lanes);
    lanes &= lanes - 1;
    const uint32_t loss = (i & 1) ? odd[i >> 1] : even[i >> 1];
    if (loss > out.bound()) continue;
    const uint32_t row = block_row + static_cast<uint32_t>(i);
    if (allow.active() && !allow.allows(row, ids[row])) continue;
    out.offer(loss, row);
  }
}

// Bit i set for the vectors i < rows of a block (rows <= 32).
inline uint32_t pq4_valid_lanes(size_t rows) {
  return rows >= kPq4Block ? 0xFFFFFFFFu : (1u << rows) - 1u;
}

}  // namespace

}  // namespace ragcore
