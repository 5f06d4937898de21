// nearest_l2's kernel on AVX2 + FMA: 6 rows x 16 centroids, 12 accumulators of the 16
// registers. Compiled with -mavx2 -mfma; runs only where the CPU has them.
#include <immintrin.h>

#include <limits>

#include "nearest_l2_impl.h"

namespace ragcore {
namespace {

struct Avx2 {
  using Reg = __m256;
  static constexpr size_t kWidth = 8;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static Reg set1(float v) { return _mm256_set1_ps(v); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  // Where dist < best (ordered: never for NaN), best and label take dist's and label's.
  static void keep_smaller(Reg dist, Reg lab, float* best, float* label) {
    const Reg b = _mm256_load_ps(best);
    const Reg less = _mm256_cmp_ps(dist, b, _CMP_LT_OQ);
    _mm256_store_ps(best, _mm256_blendv_ps(b, dist, less));
    _mm256_store_ps(label, _mm256_blendv_ps(_mm256_load_ps(label), lab, less));
  }
  static float min_lane(Reg a) {
    a = _mm256_min_ps(a, _mm256_permute2f128_ps(a, a, 1));
    a = _mm256_min_ps(a, _mm256_shuffle_ps(a, a, _MM_SHUFFLE(1, 0, 3, 2)));
    a = _mm256_min_ps(a, _mm256_shuffle_ps(a, a, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm256_cvtss_f32(a);
  }
  static void lowest(const float* best, const float* label, float& v, int64_t& l) {
    const Reg b0 = _mm256_load_ps(best), b1 = _mm256_load_ps(best + 8);
    const Reg l0 = _mm256_load_ps(label), l1 = _mm256_load_ps(label + 8);
    const Reg second = _mm256_or_ps(_mm256_cmp_ps(b1, b0, _CMP_LT_OQ),
                                    _mm256_and_ps(_mm256_cmp_ps(b1, b0, _CMP_EQ_OQ), _mm256_cmp_ps(l1, l0, _CMP_LT_OQ)));
    const Reg b = _mm256_blendv_ps(b0, b1, second), lab = _mm256_blendv_ps(l0, l1, second);
    v = min_lane(b);
    if (!(v < std::numeric_limits<float>::infinity())) {
      l = -1;
      return;
    }
    const Reg inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
    l = static_cast<int64_t>(min_lane(_mm256_blendv_ps(inf, lab, _mm256_cmp_ps(b, _mm256_set1_ps(v), _CMP_EQ_OQ))));
  }
};

}  // namespace

extern const nearest_l2_impl::TileFn kNearestL2Avx2 = nearest_l2_impl::tile<Avx2, 6>;

}  // namespace ragcore
