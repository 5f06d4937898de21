// The register-blocked kernel of nearest_l2 (ragcore/dense/nearest_l2.h), one template
// for every SIMD level; each level's file instantiates it with its own vector type V
// (Reg, kWidth, zero, load, set1, add, fma, keep_smaller, lowest) and compile flags.
// lowest(best, label, v, l): over 2 kWidth lanes, v the smallest best and l the lowest
// label among the lanes holding it (l = -1 when v is not finite).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace ragcore {
namespace nearest_l2_impl {

// Signature of one level's kernel: rows [0, n) of x against panels [p0, p1), updating
// best[i] / label[i] (ties to the lower centroid: panels come in increasing order).
using TileFn = void (*)(const float* x, size_t ldx, size_t n, size_t d, const float* panels,
                        const float* panel_norms, size_t k, size_t p0, size_t p1, float* best,
                        int64_t* label);

// Per row of a block, each lane keeps the smallest distance it has seen and its centroid
// (as a float: exact below 2^24 centroids); a lane sees its centroids in increasing
// order and replaces only on strictly smaller, so it holds the lowest of equal ones.
template <class V, size_t kRowsPerBlock>
void tile(const float* x, size_t ldx, size_t n, size_t d, const float* panels,
          const float* panel_norms, size_t k, size_t p0, size_t p1, float* best,
          int64_t* label) {
  using Reg = typename V::Reg;
  constexpr size_t W = V::kWidth, kPanel = 2 * W;
  alignas(64) float lane_best[kRowsPerBlock][kPanel];
  alignas(64) float lane_label[kRowsPerBlock][kPanel];
  alignas(64) float lane_offset[kPanel];
  for (size_t t = 0; t < kPanel; ++t) lane_offset[t] = static_cast<float>(t);
  const Reg minus_two = V::set1(-2.0f), offset0 = V::load(lane_offset), offset1 = V::load(lane_offset + W);
  for (size_t i0 = 0; i0 < n; i0 += kRowsPerBlock) {
    const size_t rows = std::min(kRowsPerBlock, n - i0);
    const float* row[kRowsPerBlock];
    for (size_t i = 0; i < kRowsPerBlock; ++i) {  // a short block repeats its last row
      row[i] = x + (i0 + std::min(i, rows - 1)) * ldx;
      for (size_t t = 0; t < kPanel; ++t) {
        lane_best[i][t] = std::numeric_limits<float>::infinity();
        lane_label[i][t] = -1.0f;
      }
    }
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
      const Reg first = V::set1(static_cast<float>(b * kPanel));
      const Reg label0 = V::add(first, offset0), label1 = V::add(first, offset1);
      for (size_t i = 0; i < rows; ++i) {
        V::keep_smaller(V::fma(minus_two, acc[i][0], n0), label0, lane_best[i], lane_label[i]);
        V::keep_smaller(V::fma(minus_two, acc[i][1], n1), label1, lane_best[i] + W, lane_label[i] + W);
      }
    }
    for (size_t i = 0; i < rows; ++i) {  // across lanes: smallest, then lowest centroid
      float v;
      int64_t l;
      V::lowest(lane_best[i], lane_label[i], v, l);
      const bool take = l >= 0 && (v < best[i0 + i] || (v == best[i0 + i] && l < label[i0 + i]));
      if (take) {
        best[i0 + i] = v;
        label[i0 + i] = l;
      }
    }
  }
}

}  // namespace nearest_l2_impl
}  // namespace ragcore
