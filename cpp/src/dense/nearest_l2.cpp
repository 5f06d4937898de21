#include "ragcore/dense/nearest_l2.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include "nearest_l2_impl.h"
#include "ragcore/simd/simd.h"
#include "ragcore/util/parallel.h"

namespace ragcore {

#ifdef RAGCORE_X86
extern const nearest_l2_impl::TileFn kNearestL2Avx512;
extern const nearest_l2_impl::TileFn kNearestL2Avx2;
#endif

namespace {

// The portable level: one float a "register" (panels of 2 centroids), multiply then add.
struct Scalar {
  using Reg = float;
  static constexpr size_t kWidth = 1;
  static Reg zero() { return 0.0f; }
  static Reg load(const float* p) { return *p; }
  static Reg set1(float v) { return v; }
  static Reg add(Reg a, Reg b) { return a + b; }
  static Reg fma(Reg a, Reg b, Reg c) { return a * b + c; }
  static void keep_smaller(Reg dist, Reg lab, float* best, float* label) {
    if (dist < *best) {
      *best = dist;
      *label = lab;
    }
  }
  static void lowest(const float* best, const float* label, float& v, int64_t& l) {
    const bool second = best[1] < best[0] || (best[1] == best[0] && label[1] < label[0]);
    v = best[second];
    l = v < std::numeric_limits<float>::infinity() ? static_cast<int64_t>(label[second]) : -1;
  }
};

// Rows of a tile and centroids of a chunk: each about 256 KiB, so that a tile's rows and
// a chunk's panels stay in L2 while every block of rows passes over every panel.
constexpr size_t kTileBytes = 256 * 1024;
constexpr size_t kChunkBytes = 256 * 1024;
constexpr size_t kRowMultiple = 12;  // of every level's rows per register block

struct Level {
  nearest_l2_impl::TileFn fn;
  size_t width;  // floats per SIMD register
};

Level level_for(int simd_level, size_t k) {
  SimdLevel level = simd_level < 0 ? best_simd_level() : static_cast<SimdLevel>(simd_level);
  // At most 16 centroids fill one AVX2 panel and half an AVX-512 one: AVX2 is then the
  // faster (the 4-bit PQ codebooks), with the same bits (the same FMAs in the same order).
  if (simd_level < 0 && level == SimdLevel::Avx512 && k <= 16) level = SimdLevel::Avx2;
  if (!simd_level_available(level)) throw std::invalid_argument("nearest_l2: SIMD level not available here");
#ifdef RAGCORE_X86
  if (level == SimdLevel::Avx512) return {kNearestL2Avx512, 16};
  if (level == SimdLevel::Avx2) return {kNearestL2Avx2, 8};
#endif
  return {nearest_l2_impl::tile<Scalar, 4>, 1};
}

}  // namespace

void nearest_l2(const float* x, size_t n, size_t ldx, size_t d, const float* centroids,
                const float* centroid_sq_norms, size_t k, const float* x_sq_norms,
                int n_threads, int simd_level, int64_t* out_label, float* out_dist) {
  auto fail = [](const char* what) { throw std::invalid_argument(std::string("nearest_l2: ") + what); };
  if (d == 0) fail("d must be >= 1");
  if (k == 0) fail("no centroids");
  if (ldx < d) fail("row stride must be >= d");
  if (k >= (size_t{1} << 24)) fail("at most 2^24 - 1 centroids (labels are kept in float lanes)");
  if (n == 0) return;
  if (!x || !centroids || !centroid_sq_norms || !out_label || !out_dist) fail("null pointer");
  const Level level = level_for(simd_level, k);
  const size_t panel = 2 * level.width, panels = (k + panel - 1) / panel;
  // Panel b, dimension p: centroids b * panel .. + panel - 1 side by side; missing
  // centroids are zeros of norm +inf, so they never win.
  std::vector<float> packed(panels * d * panel, 0.0f);
  std::vector<float> norms(panels * panel, std::numeric_limits<float>::infinity());
  for (size_t c = 0; c < k; ++c) {
    const size_t b = c / panel, t = c % panel;
    for (size_t p = 0; p < d; ++p) packed[(b * d + p) * panel + t] = centroids[c * d + p];
    norms[c] = centroid_sq_norms[c];
  }
  const size_t row_bytes = d * sizeof(float);
  const size_t tile_rows = std::max<size_t>(1, kTileBytes / row_bytes / kRowMultiple) * kRowMultiple;
  const size_t chunk = std::max<size_t>(1, kChunkBytes / (row_bytes * panel));
  const size_t tasks = (n + tile_rows - 1) / tile_rows;
  parallel_for(tasks, tasks > 1 ? n_threads : 1, [&](size_t task, int) {
    const size_t i0 = task * tile_rows, rows = std::min(tile_rows, n - i0);
    float* best = out_dist + i0;
    int64_t* label = out_label + i0;
    std::fill(best, best + rows, std::numeric_limits<float>::infinity());
    std::fill(label, label + rows, int64_t{-1});
    for (size_t p0 = 0; p0 < panels; p0 += chunk)
      level.fn(x + i0 * ldx, ldx, rows, d, packed.data(), norms.data(), k, p0,
               std::min(panels, p0 + chunk), best, label);
    for (size_t i = 0; i < rows; ++i) {
      float sq = 0.0f;
      if (x_sq_norms) {
        sq = x_sq_norms[i0 + i];
      } else {
        const float* row = x + (i0 + i) * ldx;
        for (size_t p = 0; p < d; ++p) sq += row[p] * row[p];
      }
      best[i] = label[i] < 0 ? std::numeric_limits<float>::quiet_NaN() : std::max(0.0f, sq + best[i]);
    }
  });
}

}  // namespace ragcore
