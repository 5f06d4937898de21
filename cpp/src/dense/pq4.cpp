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

namespace ragcore {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("PQ4: " + what); }

constexpr size_t kMaxM = 256;  // 16-bit sums of m bytes cannot overflow
constexpr size_t kHistogramBins = 1024;

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

void pq4_scan_scalar(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                     uint16_t* losses) {
  const size_t pairs = pq4_pairs(m);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* block = packed + (i / kPq4Block) * pairs * kPq4Block + i % kPq4Block;
    uint32_t sum = 0;
    for (size_t p = 0; p < pairs; ++p) {
      const uint8_t byte = block[p * kPq4Block];
      sum += luts[(2 * p) * 16 + (byte & 15)] + luts[(2 * p + 1) * 16 + (byte >> 4)];
    }
    losses[i] = static_cast<uint16_t>(sum);
  }
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

float pq4_quantize_tables(const float* t, size_t m, uint8_t* luts) {
  std::vector<float> loss(m * 16);
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
  for (size_t e = 0; e < m * 16; ++e)
    luts[e] = static_cast<uint8_t>(std::min(255.0f, std::nearbyint(loss[e] * scale)));
  return scale;
}

void pq4_search(const Pq4SearchArgs& a) {
  if (a.m == 0 || a.m > kMaxM) fail("m must be between 1 and 256");
  if (a.d == 0 || a.d % a.m) fail("d must be a multiple of m");
  if (a.k == 0 || a.rescore == 0) fail("k and rescore must be >= 1");
  if (a.n && (!a.packed || !a.exact || !a.ids || !a.centroids)) fail("missing arrays");
  if (a.metric == Metric::L2 && a.n && !a.sq_norms) fail("L2 needs sq_norms");
  const SimdLevel level = a.simd_level < 0 ? best_simd_level() : static_cast<SimdLevel>(a.simd_level);
  const DenseKernels& kern = dense_kernels(level);
  const size_t dsub = a.d / a.m, want = std::min(a.n, a.rescore * a.k);
  const int threads = a.nq * a.n < 20000 ? 1 : resolve_threads(a.n_threads);
  parallel_for(a.nq, threads, [&](size_t qi, int) {
    const float* q = a.queries + qi * a.d;
    float qn = 0.0f;
    if (a.metric == Metric::L2)
      for (size_t p = 0; p < a.d; ++p) qn += q[p] * q[p];
    // Tables: per sub-quantiser, the score of each centroid for the query's part.
    std::vector<float> t(a.m * 16);
    for (size_t j = 0; j < a.m; ++j) {
      const float* qs = q + j * dsub;
      for (size_t c = 0; c < 16; ++c) {
        const float* cent = a.centroids + (j * 16 + c) * dsub;
        float dot = 0.0f, cn = 0.0f;
        for (size_t p = 0; p < dsub; ++p) {
          dot += qs[p] * cent[p];
          cn += cent[p] * cent[p];
        }
        t[j * 16 + c] = a.metric == Metric::L2 ? 2.0f * dot - cn : dot;
      }
    }
    std::vector<uint8_t> luts(pq4_pairs(a.m) * 2 * 16);
    pq4_quantize_tables(t.data(), a.m, luts.data());
    std::vector<uint16_t> losses(pq4_blocks(a.n) * kPq4Block);
    pq4_scan(a.packed, a.n, a.m, luts.data(), losses.data(), level);
    // The `want` smallest losses (ties: lower row). A histogram of the losses finds
    // the bucket that holds the want-th, so only the rows up to it are sorted.
    const size_t shift = [&] {
      size_t sh = 0;
      while ((255 * a.m) >> sh >= kHistogramBins) ++sh;
      return sh;
    }();
    std::vector<uint32_t> hist(kHistogramBins, 0);
    for (size_t i = 0; i < a.n; ++i) ++hist[losses[i] >> shift];
    size_t last_bin = 0;
    for (size_t seen = 0; last_bin < kHistogramBins; ++last_bin) {
      seen += hist[last_bin];
      if (seen >= want) break;
    }
    std::vector<uint64_t> keyed;
    keyed.reserve(want * 2);
    for (size_t i = 0; i < a.n; ++i)
      if ((losses[i] >> shift) <= last_bin) keyed.push_back((static_cast<uint64_t>(losses[i]) << 32) | i);
    if (want < keyed.size()) std::nth_element(keyed.begin(), keyed.begin() + want, keyed.end());
    TopKQueue top(a.k);
    for (size_t c = 0; c < want; ++c) {
      const size_t row = static_cast<uint32_t>(keyed[c]);
      float dot;
      kern.dot_rows[static_cast<int>(Storage::F32)](q, a.exact + row * a.d, a.d, 1, a.d, &dot);
      top.push(a.metric == Metric::L2 ? 2.0f * dot - a.sq_norms[row] - qn : dot, a.ids[row]);
    }
    top.finish(a.out_scores + qi * a.k, a.out_ids + qi * a.k);
  });
}

}  // namespace ragcore
