// AVX512_BF16 level: vdpbf16ps over rows in their stored (row-major) layout. This file alone
// is compiled with AVX512_BF16 flags; it runs only after bf16_dot.cpp has checked the CPU.
#include <immintrin.h>

#include "bf16_dot_impl.h"

namespace ragcore {
namespace {

// Elements [c, c + 32) of a row of d, zeros past d (never read).
__m512bh load_chunk(const uint16_t* x, size_t c, size_t d) {
  if (c + kBf16Chunk <= d) return (__m512bh)_mm512_loadu_si512(x + c);
  const __mmask32 keep = (d - c >= 32) ? ~__mmask32(0) : ((__mmask32(1) << (d - c)) - 1);
  return (__m512bh)_mm512_maskz_loadu_epi16(keep, x + c);
}

// The scalar level's tree: lanes j + j+8, then + 4, + 2, + 1.
float lane_sum(__m512 v) {
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                           _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Q queries x R rows sharing their loads; every pair runs the same chain as a 1 x 1 block.
template <int Q, int R>
void block(const Bf16Queries& q, size_t i, const uint16_t* x, size_t ldx, size_t d, float* out,
           size_t ldo, size_t i0) {
  __m512 acc[Q][R];
  for (int a = 0; a < Q; ++a)
    for (int b = 0; b < R; ++b) acc[a][b] = _mm512_setzero_ps();
  for (size_t c = 0; c < q.depth; c += kBf16Chunk) {
    __m512bh rows[R];
    for (int b = 0; b < R; ++b) rows[b] = load_chunk(x + b * ldx, c, d);
    for (int a = 0; a < Q; ++a) {
      const __m512bh qv = (__m512bh)_mm512_loadu_si512(bf16_query_row(q, i + a) + c);
      for (int b = 0; b < R; ++b) acc[a][b] = _mm512_dpbf16_ps(acc[a][b], qv, rows[b]);
    }
  }
  for (int a = 0; a < Q; ++a)
    for (int b = 0; b < R; ++b) out[b * ldo + (i + a - i0)] = lane_sum(acc[a][b]);
}

void dot_rows_batch(const Bf16Queries& q, size_t i0, size_t nq, const uint16_t* x, size_t ldx,
                    size_t n_rows, size_t d, float* out, size_t ldo) {
  size_t r = 0;
  for (; r + 4 <= n_rows; r += 4) {
    const uint16_t* xr = x + r * ldx;
    float* o = out + r * ldo;
    size_t i = i0;
    for (; i + 4 <= i0 + nq; i += 4) block<4, 4>(q, i, xr, ldx, d, o, ldo, i0);
    for (; i < i0 + nq; ++i) block<1, 4>(q, i, xr, ldx, d, o, ldo, i0);
  }
  for (; r < n_rows; ++r) {
    size_t i = i0;
    for (; i + 4 <= i0 + nq; i += 4) block<4, 1>(q, i, x + r * ldx, ldx, d, out + r * ldo, ldo, i0);
    for (; i < i0 + nq; ++i) block<1, 1>(q, i, x + r * ldx, ldx, d, out + r * ldo, ldo, i0);
  }
}

}  // namespace

extern const Bf16Kernels kBf16Avx512Kernels = {Bf16Level::Avx512Bf16, "avx512_bf16",
                                               dot_rows_batch};

}  // namespace ragcore
