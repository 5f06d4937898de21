// The register-blocked kernel of nearest_l2 (ragcore/dense/nearest_l2.h), one template
// for every SIMD level; each level's file instantiates it with its own vector type V
// (Reg, kWidth, zero, load, store, set1, fma) and compile flags.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace ragcore {
namespace nearest_l2_impl {

// Signature of one level's kernel: rows [0, n) of x against panels [p0, p1), updating
// best[i] / label[i] (ties to the lower centroid: panels come in increasing order).
using TileFn = void (*)(const float* x, size_t ldx, size_t n, size_t d, const float* panels,
                        const float* panel_norms, size_t k, size_t p0, size_t p1, float* best,
                        int64_t* label);

template <class V, size_t kRowsPerBlock>
void tile(const float* x, size_t ldx, size_t n, size_t d, const float* panels,
          const float* panel_norms, size_t k, size_t p0, size_t p1, float* best,
          int64_t* label) {
  using Reg = typename V::Reg;
  constexpr size_t W = V::kWidth, kPanel = 2 * W;
  alignas(64) float out[kRowsPerBlock][kPanel];
  const Reg minus_two = V::set1(-2.0f);
  for (size_t i0 = 0; i0 < n; i0 += kRowsPerBlock) {
    const size_t rows = std::min(kRowsPerBlock, n - i0);
    const float* row[kRowsPerBlock];
    for (size_t i = 0; i < kRowsPerBlock; ++i)  // a short block repeats its last row
      row[i] = x + (i0 + std::min(i, rows - 1)) * ldx;
    for (size_t b = p0; b < p1; ++b) {
      const float* panel = panels + b * d * kPanel;
      Reg acc[kRowsPerBlock][2];
      for (size_t i = 0; i < kRowsPerBlock; ++i) acc[i][0] = acc[i][1] = V::zero();
      for (size_t p = 0; p < d; ++p) {
        const Reg c0 = V::load(panel + p * kPanel), c1 = V::load(panel + p * kPanel + W);
        for (size_t i = 0; i < kRowsPerBlock; ++i) {
          const Reg xv = V::set1(row[i][p]);
          acc[i][0] = V::fma(xv, c0, acc[i][0]);
          acc[i][1] = V::fma(xv, c1, acc[i][1]);
        }
      }
      const Reg n0 = V::load(panel_norms + b * kPanel), n1 = V::load(panel_norms + b * kPanel + W);
      for (size_t i = 0; i < rows; ++i) {
        V::store(out[i], V::fma(minus_two, acc[i][0], n0));
        V::store(out[i] + W, V::fma(minus_two, acc[i][1], n1));
      }
      const size_t first = b * kPanel, cols = std::min(kPanel, k - first);
      for (size_t i = 0; i < rows; ++i) {
        float v = best[i0 + i];
        int64_t l = label[i0 + i];
        for (size_t t = 0; t < cols; ++t)
          if (out[i][t] < v) {
            v = out[i][t];
            l = static_cast<int64_t>(first + t);
          }
        best[i0 + i] = v;
        label[i0 + i] = l;
      }
    }
  }
}

}  // namespace nearest_l2_impl
}  // namespace ragcore
