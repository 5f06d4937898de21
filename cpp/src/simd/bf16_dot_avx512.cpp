// AVX512_BF16 level: vdpbf16ps with one row per lane. Groups of rows are repacked into
// panels (16 rows side by side, their element pairs interleaved) and each query's pairs
// are broadcast, so every lane runs one row's whole chain and no horizontal sum is left.
// This file alone is compiled with AVX512_BF16 flags; it runs only after bf16_dot.cpp has
// checked the CPU.
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "bf16_dot_impl.h"

namespace ragcore {
namespace {

constexpr size_t kPanelRows = 16;   // rows per panel: one per lane
constexpr size_t kGroupPanels = 2;  // panels packed at once; they stay in L1 for every query
constexpr size_t kBlockQueries = 8;  // queries whose broadcasts share each panel load
constexpr size_t kPrefetchRows = 2 * kGroupPanels * kPanelRows;
constexpr size_t kPrefetchRowsOneQuery = 2 * 4 * kPanelRows;

// Elements [c, c + 32) of a row of d, zeros past d.
__m512i load_chunk(const uint16_t* x, size_t c, size_t d) {
  if (c + kBf16Chunk <= d) return _mm512_loadu_si512(x + c);
  const __mmask32 keep = (d - c >= 32) ? ~__mmask32(0) : ((__mmask32(1) << (d - c)) - 1);
  return _mm512_maskz_loadu_epi16(keep, x + c);
}

// v[r] lane c -> v[c] lane r (32-bit elements).
inline void transpose16(__m512i (&v)[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  __m512i u[16];  // u[4g + j], 128-bit lane L: column 4L + j of rows 4g..4g + 3
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i s0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88);
    const __m512i s1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xDD);
    const __m512i s2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
    const __m512i s3 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xDD);
    v[j] = _mm512_shuffle_i32x4(s0, s2, 0x88);
    v[8 + j] = _mm512_shuffle_i32x4(s0, s2, 0xDD);
    v[4 + j] = _mm512_shuffle_i32x4(s1, s3, 0x88);
    v[12 + j] = _mm512_shuffle_i32x4(s1, s3, 0xDD);
  }
}

// Rows [0, rows) of x (rows <= 16) as panel b of a group of np panels:
// group[(p * np + b) * 16 + l] = pair p (elements 2p, 2p + 1) of row l, zeros past d and
// past rows. Pairs are interleaved across the group's panels so its loads form one stream.
void pack_panel(const uint16_t* x, size_t ldx, size_t rows, size_t d, size_t depth, size_t b,
                size_t np, uint32_t* group) {
  for (size_t c = 0; c < depth; c += kBf16Chunk) {
    __m512i v[16];
    for (size_t l = 0; l < kPanelRows; ++l) {
      // Sixteen row streams are more than the hardware prefetchers follow: request the
      // same line of the rows two groups ahead (a hint: never faults).
      __builtin_prefetch(x + (l + kPrefetchRows) * ldx + c);
      v[l] = l < rows ? load_chunk(x + l * ldx, c, d) : _mm512_setzero_si512();
    }
    transpose16(v);
    const size_t p0 = c / 2;
    for (size_t k = 0; k < 16; ++k) _mm512_store_si512(group + ((p0 + k) * np + b) * kPanelRows, v[k]);
  }
}

inline __m512bh broadcast_pair(const uint16_t* q, size_t p) {
  uint32_t pair;
  std::memcpy(&pair, q + 2 * p, 4);
  return (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
}

// Rows r (< rows) of 8 queries' scores, v[a] lane r = query a: out[r * ldo + a].
inline void store_8_queries(const __m512 (&v)[8], size_t rows, float* out, size_t ldo) {
  __m512 t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  }
  // u[2k + g], 128-bit lane L: queries 4g..4g + 3 of row 4L + k
  __m512 u[8];
  for (int g = 0; g < 2; ++g) {
    const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 2]);
    const __m512d c = _mm512_castps_pd(t[4 * g + 1]), e = _mm512_castps_pd(t[4 * g + 3]);
    u[0 + g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    u[2 + g] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    u[4 + g] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, e));
    u[6 + g] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, e));
  }
  for (int k = 0; k < 4; ++k) {
    // [row k | row 4 + k] and [row 8 + k | row 12 + k], each row's 8 queries in order
    const __m512 lo = _mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], 0x44);
    const __m512 hi = _mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], 0xEE);
    const __m512 w[2] = {_mm512_shuffle_f32x4(lo, lo, 0xD8), _mm512_shuffle_f32x4(hi, hi, 0xD8)};
    for (int h = 0; h < 2; ++h) {
      const size_t r0 = static_cast<size_t>(8 * h + k), r1 = r0 + 4;
      if (r0 < rows) _mm256_storeu_ps(out + r0 * ldo, _mm512_castps512_ps256(w[h]));
      if (r1 < rows)
        _mm256_storeu_ps(out + r1 * ldo,
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(w[h]), 1)));
    }
  }
}

// Q queries x NP panels of a packed group: Q * NP chains, each a row's pairs in order.
template <int Q, int NP>
void block(const uint32_t* group, size_t pairs, const uint16_t* const* qrows, size_t rows,
           float* out, size_t ldo) {
  __m512 acc[Q][NP];
  for (int a = 0; a < Q; ++a)
    for (int b = 0; b < NP; ++b) acc[a][b] = _mm512_setzero_ps();
  const uint32_t* g = group;
  for (size_t p = 0; p < pairs; ++p, g += NP * kPanelRows) {
    __m512bh xv[NP];
    for (int b = 0; b < NP; ++b) xv[b] = (__m512bh)_mm512_load_si512(g + b * kPanelRows);
    for (int a = 0; a < Q; ++a) {
      const __m512bh qv = broadcast_pair(qrows[a], p);
      for (int b = 0; b < NP; ++b) acc[a][b] = _mm512_dpbf16_ps(acc[a][b], xv[b], qv);
    }
  }
  for (int b = 0; b < NP; ++b) {
    const size_t valid = rows > b * kPanelRows ? std::min(kPanelRows, rows - b * kPanelRows) : 0;
    float* o = out + b * kPanelRows * ldo;
    if constexpr (Q == 8) {
      const __m512 v[8] = {acc[0][b], acc[1][b], acc[2][b], acc[3][b],
                           acc[4][b], acc[5][b], acc[6][b], acc[7][b]};
      store_8_queries(v, valid, o, ldo);
    } else if (Q == 1 && ldo == 1) {
      _mm512_mask_storeu_ps(o, static_cast<__mmask16>((1u << valid) - 1), acc[0][b]);
    } else {
      alignas(64) float by_query[Q][kPanelRows];
      for (int a = 0; a < Q; ++a) _mm512_store_ps(by_query[a], acc[a][b]);
      for (size_t r = 0; r < valid; ++r)
        for (int a = 0; a < Q; ++a) o[r * ldo + a] = by_query[a][r];
    }
  }
}

template <int NP>
void group_queries(const Bf16Queries& q, size_t i0, size_t nq, const uint32_t* group, size_t rows,
                   float* out, size_t ldo) {
  const size_t pairs = q.depth / 2;
  size_t i = i0;
  const uint16_t* qrows[kBlockQueries];
  auto rows_of = [&](size_t count) {
    for (size_t a = 0; a < count; ++a) qrows[a] = bf16_query_row(q, i + a);
  };
  for (; i + 8 <= i0 + nq; i += 8) {
    rows_of(8);
    block<8, NP>(group, pairs, qrows, rows, out + (i - i0), ldo);
  }
  if (i + 4 <= i0 + nq) {
    rows_of(4);
    block<4, NP>(group, pairs, qrows, rows, out + (i - i0), ldo);
    i += 4;
  }
  if (i + 2 <= i0 + nq) {
    rows_of(2);
    block<2, NP>(group, pairs, qrows, rows, out + (i - i0), ldo);
    i += 2;
  }
  if (i < i0 + nq) {
    rows_of(1);
    block<1, NP>(group, pairs, qrows, rows, out + (i - i0), ldo);
  }
}

// One query over up to 64 rows: each 16 x 32 piece of the rows is transposed in registers and
// multiplied at once (no packing buffer, so the loads spread over the work), 4 panels' chains
// side by side. The same chain per row as block().
void one_query_rows(const uint16_t* qrow, const uint16_t* x, size_t ldx, size_t rows, size_t d,
                    size_t depth, float* out, size_t ldo) {
  constexpr int kPanels = 4;
  __m512 acc[kPanels];
  for (int b = 0; b < kPanels; ++b) acc[b] = _mm512_setzero_ps();
  const size_t panels = (rows + kPanelRows - 1) / kPanelRows;
  for (size_t c = 0; c < depth; c += kBf16Chunk) {
    for (size_t b = 0; b < panels; ++b) {
      const uint16_t* xb = x + b * kPanelRows * ldx;
      const size_t valid = std::min(kPanelRows, rows - b * kPanelRows);
      __m512i v[16];
      for (size_t l = 0; l < kPanelRows; ++l) {
        __builtin_prefetch(xb + (l + kPrefetchRowsOneQuery) * ldx + c);
        v[l] = l < valid ? load_chunk(xb + l * ldx, c, d) : _mm512_setzero_si512();
      }
      transpose16(v);
      for (size_t k = 0; k < 16; ++k)
        acc[b] = _mm512_dpbf16_ps(acc[b], (__m512bh)v[k], broadcast_pair(qrow, c / 2 + k));
    }
  }
  for (size_t b = 0; b < panels; ++b) {
    const size_t valid = std::min(kPanelRows, rows - b * kPanelRows);
    float* o = out + b * kPanelRows * ldo;
    if (ldo == 1) {
      _mm512_mask_storeu_ps(o, static_cast<__mmask16>((1u << valid) - 1), acc[b]);
    } else {
      alignas(64) float sums[kPanelRows];
      _mm512_store_ps(sums, acc[b]);
      for (size_t r = 0; r < valid; ++r) o[r * ldo] = sums[r];
    }
  }
}

void dot_rows_batch(const Bf16Queries& q, size_t i0, size_t nq, const uint16_t* x, size_t ldx,
                    size_t n_rows, size_t d, float* out, size_t ldo) {
  if (nq == 0 || n_rows == 0) return;
  if (nq == 1) {  // no reuse of the rows: packing them would only add a pass
    constexpr size_t kRows = 4 * kPanelRows;
    for (size_t r = 0; r < n_rows; r += kRows)
      one_query_rows(bf16_query_row(q, i0), x + r * ldx, ldx, std::min(kRows, n_rows - r), d,
                     q.depth, out + r * ldo, ldo);
    return;
  }
  const size_t group_rows = kGroupPanels * kPanelRows;
  // One group of packed panels, reused for every group of the call.
  thread_local struct Buffer {
    uint32_t* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  } buf;
  const size_t need = q.depth / 2 * group_rows;
  if (buf.size < need) {
    std::free(buf.data);
    buf.data = static_cast<uint32_t*>(std::aligned_alloc(64, need * 4));
    if (!buf.data) throw std::bad_alloc();
    buf.size = need;
  }
  for (size_t r = 0; r < n_rows; r += group_rows) {
    const size_t rows = std::min(group_rows, n_rows - r);
    const size_t np = (rows + kPanelRows - 1) / kPanelRows;
    for (size_t b = 0; b < np; ++b)
      pack_panel(x + (r + b * kPanelRows) * ldx, ldx, std::min(kPanelRows, rows - b * kPanelRows),
                 d, q.depth, b, np, buf.data);
    if (np == 2)
      group_queries<2>(q, i0, nq, buf.data, rows, out + r * ldo, ldo);
    else
      group_queries<1>(q, i0, nq, buf.data, rows, out + r * ldo, ldo);
  }
}

}  // namespace

extern const Bf16Kernels kBf16Avx512Kernels = {Bf16Level::Avx512Bf16, "avx512_bf16",
                                               dot_rows_batch};

}  // namespace ragcore
