#include "ragcore/dense/pq4.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "pq4_scan_impl.h"
#include "ragcore/topk/topk_queue.h"
#include "ragcore/util/parallel.h"

#ifdef RAGCORE_X86
namespace ragcore {
// Rows i0 .. i1 - 1 of pq4_encode (pq4_encode_avx512.cpp).
void pq4_encode_rows_avx512(const float* x, size_t i0, size_t i1, size_t d, const float* by_dim,
                            size_t m, uint8_t* codes);
}  // namespace ragcore
#endif

namespace ragcore {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("PQ4: " + what); }

constexpr size_t kMaxM = 256;  // 16-bit sums of m bytes cannot overflow

// The loss of vector i of packed codes, one table look-up per sub-quantiser.
uint32_t scalar_loss(const uint8_t* packed, size_t i, size_t pairs, const uint8_t* luts) {
  const uint8_t* block = packed + (i / kPq4Block) * pairs * kPq4Block + i % kPq4Block;
  uint32_t sum = 0;
  for (size_t p = 0; p < pairs; ++p) {
    const uint8_t byte = block[p * kPq4Block];
    sum += luts[(2 * p) * 16 + (byte & 15)] + luts[(2 * p + 1) * 16 + (byte >> 4)];
  }
  return sum;
}

}  // namespace

void pq4_pack(const uint8_t* codes, size_t n, size_t m, uint8_t* packed) {
  if (m == 0 || m > kMaxM) fail("m must be between 1 and 256");
  const size_t pairs = pq4_pairs(m);
  std::memset(packed, 0, pq4_packed_bytes(n, m));
  for (size_t i = 0; i < n; ++i) {
    uint8_t* block = packed + (i / kPq4Block) * pairs * kPq4Block;
    for (size_t j = 0; j < m; ++j) {
      const uint8_t c = codes[i * m + j];
      if (c > 15) fail("codes must be < 16");
      block[(j / 2) * kPq4Block + i % kPq4Block] |= static_cast<uint8_t>(j % 2 ? c << 4 : c);
    }
  }
}

void pq4_encode(const float* x, size_t n, size_t d, const float* by_dim, size_t m,
                uint8_t* codes, int n_threads) {
  if (m == 0 || m > kMaxM || d == 0 || d % m) fail("m must divide d and be 1..256");
  if (n && (!x || !by_dim || !codes)) fail("missing arrays");
  const size_t dsub = d / m;
  // Rows per task: thousands of sub-vector distances, so spawning a thread pays off.
  constexpr size_t kRowsPerTask = 512;
  const size_t tasks = (n + kRowsPerTask - 1) / kRowsPerTask;
#ifdef RAGCORE_X86
  const bool avx512 = best_simd_level() == SimdLevel::Avx512;  // the same codes, 16 lanes
#endif
  parallel_for(tasks, tasks > 1 ? n_threads : 1, [&](size_t t, int) {
    const size_t end = std::min(n, (t + 1) * kRowsPerTask);
#ifdef RAGCORE_X86
    if (avx512) return pq4_encode_rows_avx512(x, t * kRowsPerTask, end, d, by_dim, m, codes);
#endif
    for (size_t i = t * kRowsPerTask; i < end; ++i) {
      const float* row = x + i * d;
      for (size_t j = 0; j < m; ++j) {
        float dist[16] = {};
        for (size_t p = 0; p < dsub; ++p) {
          const float v = row[j * dsub + p];
          const float* col = by_dim + (j * dsub + p) * 16;
          for (size_t c = 0; c < 16; ++c) {
            const float e = v - col[c];
            dist[c] += e * e;
          }
        }
        uint8_t best = 0;
        for (uint8_t c = 1; c < 16; ++c)
          if (dist[c] < dist[best]) best = c;
        codes[i * m + j] = best;
      }
    }
  });
}

void pq4_scan_scalar(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                     uint16_t* losses) {
  for (size_t i = 0; i < n; ++i)
    losses[i] = static_cast<uint16_t>(scalar_loss(packed, i, pq4_pairs(m), luts));
}

void pq4_scan(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts, uint16_t* losses,
              SimdLevel level) {
  if (m == 0 || m > kMaxM) fail("m must be between 1 and 256");
  if (!simd_level_available(level)) fail("SIMD level not available here");
#ifdef RAGCORE_X86
  if (level != SimdLevel::Scalar) return pq4_scan_avx2(packed, n, m, luts, losses);
#endif
  pq4_scan_scalar(packed, n, m, luts, losses);
}

void pq4_select_scalar(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                       uint32_t first_row, const AllowFilter& allow, const int64_t* ids,
                       Pq4Candidates& out) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t loss = scalar_loss(packed, i, pq4_pairs(m), luts);
    if (loss > out.bound()) continue;
    const uint32_t row = first_row + static_cast<uint32_t>(i);
    if (allow.active() && !allow.allows(row, ids[row])) continue;
    out.offer(loss, row);
  }
}

namespace {

void check_select(size_t n, size_t m, uint32_t first_row, const AllowFilter& allow,
                  const int64_t* ids, SimdLevel level) {
  if (m == 0 || m > kMaxM) fail("m must be between 1 and 256");
  if (!simd_level_available(level)) fail("SIMD level not available here");
  if (n > std::numeric_limits<uint32_t>::max() - first_row) fail("rows must fit in 32 bits");
  if (allow.active() && !ids) fail("a filter needs the ids");
}

// The AVX-512 path also needs BMI2 (pdep), which every AVX-512 CPU has; checked anyway.
bool use_avx512(SimdLevel level) {
#ifdef RAGCORE_X86
  return level == SimdLevel::Avx512 && __builtin_cpu_supports("bmi2");
#else
  (void)level;
  return false;
#endif
}

}  // namespace

void pq4_scan_select(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                     uint32_t first_row, const AllowFilter& allow, const int64_t* ids,
                     Pq4Candidates& out, SimdLevel level) {
  check_select(n, m, first_row, allow, ids, level);
#ifdef RAGCORE_X86
  if (use_avx512(level)) return pq4_select_avx512(packed, n, m, luts, first_row, allow, ids, out);
  if (level != SimdLevel::Scalar) return pq4_select_avx2(packed, n, m, luts, first_row, allow, ids, out);
#endif
  pq4_select_scalar(packed, n, m, luts, first_row, allow, ids, out);
}

void pq4_scan_select_many(const uint8_t* packed, size_t n, size_t m, const uint8_t* const* luts,
                          size_t nq, uint32_t first_row, const AllowFilter& allow,
                          const int64_t* ids, Pq4Candidates* const* outs, SimdLevel level) {
  check_select(n, m, first_row, allow, ids, level);
#ifdef RAGCORE_X86
  if (use_avx512(level)) return pq4_select_avx512_many(packed, n, m, luts, nq, first_row, allow, ids, outs);
#endif
  for (size_t i = 0; i < nq; ++i) pq4_scan_select(packed, n, m, luts[i], first_row, allow, ids, *outs[i], level);
}

float pq4_quantize_tables(const float* t, size_t m, uint8_t* luts) {
  if (m == 0 || m > kMaxM) fail("m must be between 1 and 256");
  float loss[kMaxM * 16];
  float top = 0.0f;
  for (size_t j = 0; j < m; ++j) {
    const float best = *std::max_element(t + j * 16, t + j * 16 + 16);
    for (size_t c = 0; c < 16; ++c) {
      loss[j * 16 + c] = best - t[j * 16 + c];
      top = std::max(top, loss[j * 16 + c]);
    }
  }
  const float scale = top > 0.0f ? 255.0f / top : 0.0f;
  std::memset(luts, 0, pq4_pairs(m) * 2 * 16);
  // Round to nearest, ties to even, as nearbyint does in the default rounding mode, but
  // inline and vectorisable: adding and subtracting 2**23 leaves no fraction bits to a
  // value in [0, 2**23) (nearbyint was a library call per entry, 4,096 of them at m = 256).
  constexpr float kRound = 8388608.0f;
  for (size_t e = 0; e < m * 16; ++e) {
    const float v = std::min(255.0f, loss[e] * scale);
    luts[e] = static_cast<uint8_t>((v + kRound) - kRound);
  }
  return scale;
}

Pq4Candidates::Pq4Candidates(size_t want)
    : want_(want), cap_(want > (SIZE_MAX - 64) / 2 ? SIZE_MAX : std::max<size_t>(2 * want, want + 64)) {
  keys_.reserve(std::min<size_t>(cap_, 1 << 16));
}

void Pq4Candidates::make_room() {
  // used_ < cap_ here (offer shrinks at cap_), so this always adds room.
  const size_t size = keys_.size();
  keys_.resize(size > cap_ / 2 ? cap_ : std::max<size_t>(2 * size, 64));  // zero-fills only the new room
}

void Pq4Candidates::shrink() {
  std::nth_element(keys_.begin(), keys_.begin() + (want_ - 1), keys_.begin() + used_);
  used_ = want_;
  bound_ = static_cast<uint32_t>(keys_[want_ - 1] >> 32);  // the largest kept (nth_element)
}

const std::vector<uint64_t>& Pq4Candidates::sorted() {
  keys_.resize(used_);
  std::sort(keys_.begin(), keys_.end());
  if (keys_.size() > want_) keys_.resize(want_);
  used_ = keys_.size();
  return keys_;
}

Pq4TableMaker::Pq4TableMaker(const float* by_dim, size_t m, size_t d, Metric metric)
    : by_dim_(by_dim), m_(m), dsub_(d / m), metric_(metric),
      sq_norms_(metric == Metric::L2 ? m * 16 : 0, 0.0f) {
  if (metric != Metric::L2) return;
  for (size_t j = 0; j < m; ++j)
    for (size_t p = 0; p < dsub_; ++p) {
      const float* col = by_dim + (j * dsub_ + p) * 16;
      for (size_t c = 0; c < 16; ++c) sq_norms_[j * 16 + c] += col[c] * col[c];
    }
}

void Pq4TableMaker::luts(const float* q, uint8_t* luts) const {
  float t[kMaxM * 16];
  for (size_t j = 0; j < m_; ++j) {
    float* tj = t + j * 16;
    for (size_t c = 0; c < 16; ++c) tj[c] = 0.0f;
    for (size_t p = 0; p < dsub_; ++p) {
      const float qp = q[j * dsub_ + p];
      const float* col = by_dim_ + (j * dsub_ + p) * 16;
      for (size_t c = 0; c < 16; ++c) tj[c] += qp * col[c];
    }
    if (metric_ == Metric::L2)
      for (size_t c = 0; c < 16; ++c) tj[c] = 2.0f * tj[c] - sq_norms_[j * 16 + c];
  }
  pq4_quantize_tables(t, m_, luts);
}

void pq4_rescore(const std::vector<uint64_t>& candidates, const float* q, const float* exact,
                 const float* sq_norms, const int64_t* ids, size_t d, Metric metric,
                 size_t k, const DenseKernels& kern, float* out_scores, int64_t* out_ids) {
  float qn = 0.0f;
  if (metric == Metric::L2)
    for (size_t p = 0; p < d; ++p) qn += q[p] * q[p];
  TopKQueue top(k);
  // The candidate rows are scattered over the exact rows (which rarely sit in cache):
  // fetching a few rows ahead overlaps their memory latencies instead of paying each.
  constexpr size_t kAhead = 4;
  const size_t line_floats = 16, lines = (d + line_floats - 1) / line_floats;
  auto prefetch = [&](size_t c) {
    if (c >= candidates.size()) return;
    const float* r = exact + static_cast<size_t>(static_cast<uint32_t>(candidates[c])) * d;
    for (size_t l = 0; l < lines; ++l) __builtin_prefetch(r + l * line_floats);
  };
  for (size_t c = 0; c < kAhead; ++c) prefetch(c);
  for (size_t c = 0; c < candidates.size(); ++c) {
    prefetch(c + kAhead);
    const size_t row = static_cast<uint32_t>(candidates[c]);
    float dot;
    kern.dot_rows[static_cast<int>(Storage::F32)](q, exact + row * d, d, 1, d, &dot);
    top.push(metric == Metric::L2 ? 2.0f * dot - sq_norms[row] - qn : dot, ids[row]);
  }
  top.finish(out_scores, out_ids);
}

void pq4_search(const Pq4SearchArgs& a) {
  if (a.m == 0 || a.m > kMaxM) fail("m must be between 1 and 256");
  if (a.d == 0 || a.d % a.m) fail("d must be a multiple of m");
  if (a.k == 0 || a.rescore == 0) fail("k and rescore must be >= 1");
  if (a.n && (!a.packed || !a.exact || !a.ids || !a.centroids)) fail("missing arrays");
  if (a.metric == Metric::L2 && a.n && !a.sq_norms) fail("L2 needs sq_norms");
  if (a.n > std::numeric_limits<uint32_t>::max()) fail("at most 2**32 - 1 vectors");
  const SimdLevel level = a.simd_level < 0 ? best_simd_level() : static_cast<SimdLevel>(a.simd_level);
  const DenseKernels& kern = dense_kernels(level);
  const size_t want = pq4_candidates_wanted(a.n, a.k, a.rescore);
  const int threads = a.nq * a.n < 20000 ? 1 : resolve_threads(a.n_threads);
  const Pq4TableMaker tables(a.centroids, a.m, a.d, a.metric);
  const size_t lut_bytes = pq4_pairs(a.m) * 2 * 16, block_bytes = pq4_pairs(a.m) * kPq4Block;
  // Queries in groups of kGroupQueries, the corpus in chunks of kChunkBlocks blocks: each
  // chunk is scanned for the whole group while it sits in cache, so a batch reads the
  // codes from memory once per group, not once per query, and the AVX-512 scan loads
  // each block's codes once for the group (FAISS's qbs; 8 and 64 measured best of
  // 4..16 and 8..128: PQIndex, N = 100,000, m = 96, batch 256).
  constexpr size_t kGroupQueries = 8, kChunkBlocks = 64;
  const size_t groups = (a.nq + kGroupQueries - 1) / kGroupQueries;
  parallel_for(groups, std::min<int>(threads, static_cast<int>(groups)), [&](size_t g, int) {
    const size_t q0 = g * kGroupQueries, nq = std::min(kGroupQueries, a.nq - q0);
    std::vector<uint8_t> luts(nq * lut_bytes);
    std::vector<Pq4Candidates> candidates(nq, Pq4Candidates(want));
    std::vector<const uint8_t*> lut_of(nq);
    std::vector<Pq4Candidates*> out_of(nq);
    for (size_t i = 0; i < nq; ++i) {
      tables.luts(a.queries + (q0 + i) * a.d, luts.data() + i * lut_bytes);
      lut_of[i] = luts.data() + i * lut_bytes;
      out_of[i] = &candidates[i];
    }
    for (size_t b = 0; b < pq4_blocks(a.n); b += kChunkBlocks) {
      const size_t rows = std::min(a.n - b * kPq4Block, kChunkBlocks * kPq4Block);
      pq4_scan_select_many(a.packed + b * block_bytes, rows, a.m, lut_of.data(), nq,
                           static_cast<uint32_t>(b * kPq4Block), a.allow, a.ids, out_of.data(), level);
    }
    for (size_t i = 0; i < nq; ++i)
      pq4_rescore(candidates[i].sorted(), a.queries + (q0 + i) * a.d, a.exact, a.sq_norms, a.ids,
                  a.d, a.metric, a.k, kern, a.out_scores + (q0 + i) * a.k, a.out_ids + (q0 + i) * a.k);
  });
}

}  // namespace ragcore
