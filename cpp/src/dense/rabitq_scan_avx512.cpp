// AVX-512 RaBitQ scan: for each 16 dimensions and bit plane, the plane's 16 code
// bits are the mask of one add of the query coordinates scaled by 2^b; four rows
// at a time keep four independent accumulators in flight. Compiled with
// -mavx512f, chosen at run time.
#include <immintrin.h>

#include <cstring>

#include "ragcore/dense/rabitq_scan.h"

namespace ragcore {
namespace {

size_t chunks(size_t dp) { return (dp + 15) / 16; }

// Plane b: the rotated query times 2^b, zero-padded to a multiple of 16.
void avx512_tables(const float* rotated, size_t dp, size_t bits, std::vector<float>& tables) {
  const size_t width = chunks(dp) * 16;
  tables.assign(bits * width, 0.0f);
  for (size_t b = 0; b < bits; ++b)
    for (size_t p = 0; p < dp; ++p) tables[b * width + p] = rotated[p] * static_cast<float>(1u << b);
}

// 16 code bits of chunk c of a plane (8 when the plane ends after one byte).
inline __mmask16 bits16(const uint8_t* plane, size_t c, size_t groups) {
  uint16_t m = plane[2 * c];
  if (2 * c + 1 < groups) m |= static_cast<uint16_t>(plane[2 * c + 1]) << 8;
  return static_cast<__mmask16>(m);
}

void avx512_scan(const uint8_t* rows, size_t row_bytes, size_t n, size_t dp, size_t bits,
                 const float* tables, float* out) {
  const size_t groups = dp / 8, nc = chunks(dp), width = nc * 16;
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    const uint8_t* r0 = rows + j * row_bytes;
    for (size_t b = 0; b < bits; ++b) {
      const float* t = tables + b * width;
      const size_t off = b * groups;
      for (size_t c = 0; c < nc; ++c) {
        const __m512 qv = _mm512_loadu_ps(t + 16 * c);
        acc0 = _mm512_mask_add_ps(acc0, bits16(r0 + off, c, groups), acc0, qv);
        acc1 = _mm512_mask_add_ps(acc1, bits16(r0 + row_bytes + off, c, groups), acc1, qv);
        acc2 = _mm512_mask_add_ps(acc2, bits16(r0 + 2 * row_bytes + off, c, groups), acc2, qv);
        acc3 = _mm512_mask_add_ps(acc3, bits16(r0 + 3 * row_bytes + off, c, groups), acc3, qv);
      }
    }
    out[j] = _mm512_reduce_add_ps(acc0);
    out[j + 1] = _mm512_reduce_add_ps(acc1);
    out[j + 2] = _mm512_reduce_add_ps(acc2);
    out[j + 3] = _mm512_reduce_add_ps(acc3);
  }
  for (; j < n; ++j) {
    __m512 acc = _mm512_setzero_ps();
    const uint8_t* r = rows + j * row_bytes;
    for (size_t b = 0; b < bits; ++b)
      for (size_t c = 0; c < nc; ++c)
        acc = _mm512_mask_add_ps(acc, bits16(r + b * groups, c, groups), acc,
                                 _mm512_loadu_ps(tables + b * width + 16 * c));
    out[j] = _mm512_reduce_add_ps(acc);
  }
}

}  // namespace

const RabitqScanKernel& rabitq_scan_avx512() {
  static const RabitqScanKernel k{avx512_tables, avx512_scan};
  return k;
}

}  // namespace ragcore
