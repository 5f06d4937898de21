// AVX-512 RaBitQ scan: for each 16 dimensions and bit plane, the plane's 16 code
// bits are the mask of one add of the query coordinates scaled by 2^b. Code bits
// are read 64 at a time (one load, then a shift per 16), and four rows with two
// accumulators each keep eight independent add chains in flight. Compiled with
// -mavx512f, chosen at run time.
#include <immintrin.h>

#include <cstring>

#include "ragcore/dense/rabitq_scan.h"

namespace ragcore {
namespace {

size_t words(size_t dp) { return (dp + 63) / 64; }

// Plane b: the rotated query times 2^b, zero-padded to a multiple of 64.
void avx512_tables(const float* rotated, size_t dp, size_t bits, std::vector<float>& tables) {
  const size_t width = words(dp) * 64;
  float* t = zeroed_floats(tables, bits * width);
  for (size_t b = 0; b < bits; ++b)
    for (size_t p = 0; p < dp; ++p) t[b * width + p] = rotated[p] * static_cast<float>(1u << b);
}

// Code bits 64 w .. 64 w + 63 of a plane of `bytes` bytes (zeros past its end).
inline uint64_t word(const uint8_t* plane, size_t w, size_t bytes) {
  uint64_t v = 0;
  const size_t at = 8 * w;
  if (at + 8 <= bytes) {
    std::memcpy(&v, plane + at, 8);  // a fixed size: one load, no call
    return v;
  }
  for (size_t i = at; i < bytes; ++i) v |= static_cast<uint64_t>(plane[i]) << (8 * (i - at));
  return v;
}

// acc_even / acc_odd += the table entries of the bits set in v (64 dimensions at t).
inline void add_word(uint64_t v, const float* t, __m512& even, __m512& odd) {
  even = _mm512_mask_add_ps(even, static_cast<__mmask16>(v), even, _mm512_loadu_ps(t));
  odd = _mm512_mask_add_ps(odd, static_cast<__mmask16>(v >> 16), odd, _mm512_loadu_ps(t + 16));
  even = _mm512_mask_add_ps(even, static_cast<__mmask16>(v >> 32), even, _mm512_loadu_ps(t + 32));
  odd = _mm512_mask_add_ps(odd, static_cast<__mmask16>(v >> 48), odd, _mm512_loadu_ps(t + 48));
}

void avx512_scan(const uint8_t* rows, size_t row_bytes, size_t n, size_t dp, size_t bits,
                 const float* tables, float* out) {
  const size_t bytes = dp / 8, nw = words(dp), width = nw * 64;
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    __m512 e0 = _mm512_setzero_ps(), o0 = e0, e1 = e0, o1 = e0, e2 = e0, o2 = e0, e3 = e0, o3 = e0;
    const uint8_t* r0 = rows + j * row_bytes;
    for (size_t b = 0; b < bits; ++b) {
      const float* t = tables + b * width;
      const uint8_t* p0 = r0 + b * bytes;
      for (size_t w = 0; w < nw; ++w) {
        const float* tw = t + 64 * w;
        add_word(word(p0, w, bytes), tw, e0, o0);
        add_word(word(p0 + row_bytes, w, bytes), tw, e1, o1);
        add_word(word(p0 + 2 * row_bytes, w, bytes), tw, e2, o2);
        add_word(word(p0 + 3 * row_bytes, w, bytes), tw, e3, o3);
      }
    }
    out[j] = _mm512_reduce_add_ps(_mm512_add_ps(e0, o0));
    out[j + 1] = _mm512_reduce_add_ps(_mm512_add_ps(e1, o1));
    out[j + 2] = _mm512_reduce_add_ps(_mm512_add_ps(e2, o2));
    out[j + 3] = _mm512_reduce_add_ps(_mm512_add_ps(e3, o3));
  }
  for (; j < n; ++j) {
    __m512 e = _mm512_setzero_ps(), o = e;
    const uint8_t* r = rows + j * row_bytes;
    for (size_t b = 0; b < bits; ++b)
      for (size_t w = 0; w < nw; ++w) add_word(word(r + b * bytes, w, bytes), tables + b * width + 64 * w, e, o);
    out[j] = _mm512_reduce_add_ps(_mm512_add_ps(e, o));
  }
}

}  // namespace

const RabitqScanKernel& rabitq_scan_avx512() {
  static const RabitqScanKernel k{avx512_tables, avx512_scan};
  return k;
}

}  // namespace ragcore
