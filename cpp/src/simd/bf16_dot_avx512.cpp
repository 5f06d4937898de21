// AVX512_BF16 level: vdpbf16ps over rows in their stored (row-major) layout. This file alone
// is compiled with AVX512_BF16 flags; it runs only after bf16_dot.cpp has checked the CPU.
#include <immintrin.h>

#include <algorithm>

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

// The 16 sums of a 4 x 4 block at once: each sum pairs the same lanes as lane_sum (j + j+8,
// then + 4, + 2, + 1), so the results are bit-identical, but the shuffles are shared between
// vectors. v[4a + b] is query a, row b; lane 4b + a of the result holds its sum.
__attribute__((always_inline)) inline __m512 lane_sums_4x4(const __m512 (&v)[16]) {
  __m512 h[8];  // 256-bit halves added: v[2p] in lanes 0-7, v[2p + 1] in lanes 8-15
  for (int p = 0; p < 8; ++p)
    h[p] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], 0x44),
                         _mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], 0xEE));
  __m512 t[4];  // 128-bit quarters added: 128-bit lane L holds v[4s + L]
  for (int s = 0; s < 4; ++s)
    t[s] = _mm512_add_ps(_mm512_shuffle_f32x4(h[2 * s], h[2 * s + 1], 0x88),
                         _mm512_shuffle_f32x4(h[2 * s], h[2 * s + 1], 0xDD));
  __m512 u[2];  // lanes j + j+2: 128-bit lane L holds v[8r + L] twice, then v[8r + 4 + L] twice
  for (int r = 0; r < 2; ++r)
    u[r] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * r], t[2 * r + 1], 0x44),
                         _mm512_shuffle_ps(t[2 * r], t[2 * r + 1], 0xEE));
  // lanes j + j+1: 128-bit lane L holds v[L], v[4 + L], v[8 + L], v[12 + L]
  return _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], 0x88), _mm512_shuffle_ps(u[0], u[1], 0xDD));
}

// One chunk of Q queries x R rows: the rows are loaded once and shared by the queries.
template <int Q, int R, bool Tail>
inline void block_chunk(__m512 (&acc)[Q * R], const Bf16Queries& q, size_t i, const uint16_t* x,
                        size_t ldx, size_t c, size_t d) {
  if constexpr (Q == 1 && !Tail) {
    // One query reuses no row: the scan streams R interleaved rows, more than hardware
    // prefetchers keep in flight, so request the same chunk of the next R rows.
#pragma GCC unroll 16
    for (int b = 0; b < R; ++b) __builtin_prefetch(x + (R + b) * ldx + c);
  }
  __m512bh rows[R];
#pragma GCC unroll 16
  for (int b = 0; b < R; ++b)
    rows[b] = Tail ? load_chunk(x + b * ldx, c, d) : (__m512bh)_mm512_loadu_si512(x + b * ldx + c);
#pragma GCC unroll 8
  for (int a = 0; a < Q; ++a) {
    const __m512bh qv = (__m512bh)_mm512_loadu_si512(bf16_query_row(q, i + a) + c);
#pragma GCC unroll 16
    for (int b = 0; b < R; ++b) acc[a * R + b] = _mm512_dpbf16_ps(acc[a * R + b], qv, rows[b]);
  }
}

// Q queries x R rows sharing their loads; every pair runs the same chain as a 1 x 1 block.
template <int Q, int R>
void block(const Bf16Queries& q, size_t i, const uint16_t* x, size_t ldx, size_t d, float* out,
           size_t ldo, size_t i0) {
  __m512 acc[Q * R];
#pragma GCC unroll 16
  for (int k = 0; k < Q * R; ++k) acc[k] = _mm512_setzero_ps();
  // Whole chunks of the rows first, then the one that runs past d (masked loads).
  const size_t whole = d / kBf16Chunk * kBf16Chunk;
  for (size_t c = 0; c < whole; c += kBf16Chunk) block_chunk<Q, R, false>(acc, q, i, x, ldx, c, d);
  if (whole < q.depth) block_chunk<Q, R, true>(acc, q, i, x, ldx, whole, d);
  if constexpr (Q == 1 && R == 16) {
    // Lane 4L + m of the sums holds row 4m + L: put row k in lane k.
    const __m512i row_order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512 sums = _mm512_permutexvar_ps(row_order, lane_sums_4x4(acc));
    if (ldo == 1) {
      _mm512_storeu_ps(out + (i - i0), sums);
    } else {
      alignas(64) float by_row[16];
      _mm512_store_ps(by_row, sums);
      for (int b = 0; b < 16; ++b) out[b * ldo + (i - i0)] = by_row[b];
    }
  } else if constexpr (Q == 4 && R == 4) {
    const __m512 sums = lane_sums_4x4(acc);
    _mm_storeu_ps(out + 0 * ldo + (i - i0), _mm512_extractf32x4_ps(sums, 0));
    _mm_storeu_ps(out + 1 * ldo + (i - i0), _mm512_extractf32x4_ps(sums, 1));
    _mm_storeu_ps(out + 2 * ldo + (i - i0), _mm512_extractf32x4_ps(sums, 2));
    _mm_storeu_ps(out + 3 * ldo + (i - i0), _mm512_extractf32x4_ps(sums, 3));
  } else {
    for (int a = 0; a < Q; ++a)
      for (int b = 0; b < R; ++b) out[b * ldo + (i + a - i0)] = lane_sum(acc[a * R + b]);
  }
}

// Rows [r0, r1) x queries [q0, q1) of the batch: 4 x 4 blocks, then the queries left over
// one at a time over 16 rows (their sums reduced together as a 4 x 4 block's are).
void dot_rows_range(const Bf16Queries& q, size_t i0, size_t q0, size_t q1, const uint16_t* x,
                    size_t ldx, size_t r0, size_t r1, size_t d, float* out, size_t ldo) {
  const size_t q4 = q0 + (q1 - q0) / 4 * 4;
  size_t r = r0;
  for (; r + 4 <= r1; r += 4)
    for (size_t i = q0; i < q4; i += 4) block<4, 4>(q, i, x + r * ldx, ldx, d, out + r * ldo, ldo, i0);
  for (; r < r1; ++r)
    for (size_t i = q0; i < q4; i += 4) block<4, 1>(q, i, x + r * ldx, ldx, d, out + r * ldo, ldo, i0);
  for (size_t i = q4; i < q1; ++i) {
    size_t r = r0;
    for (; r + 16 <= r1; r += 16) block<1, 16>(q, i, x + r * ldx, ldx, d, out + r * ldo, ldo, i0);
    for (; r + 4 <= r1; r += 4) block<1, 4>(q, i, x + r * ldx, ldx, d, out + r * ldo, ldo, i0);
    for (; r < r1; ++r) block<1, 1>(q, i, x + r * ldx, ldx, d, out + r * ldo, ldo, i0);
  }
}

// Queries and rows in groups of kGroup, so that both groups stay in L1 while their 4 x 4
// blocks reuse them (a whole batch of queries would be read from L2 for every 4 rows).
constexpr size_t kGroup = 16;

void dot_rows_batch(const Bf16Queries& q, size_t i0, size_t nq, const uint16_t* x, size_t ldx,
                    size_t n_rows, size_t d, float* out, size_t ldo) {
  for (size_t qg = i0; qg < i0 + nq; qg += kGroup)
    for (size_t rg = 0; rg < n_rows; rg += kGroup)
      dot_rows_range(q, i0, qg, std::min(qg + kGroup, i0 + nq), x, ldx, rg,
                     std::min(rg + kGroup, n_rows), d, out, ldo);
}

}  // namespace

extern const Bf16Kernels kBf16Avx512Kernels = {Bf16Level::Avx512Bf16, "avx512_bf16",
                                               dot_rows_batch};

}  // namespace ragcore
