// nearest_l2's kernel on AVX-512: 12 rows x 32 centroids, 24 accumulators of the 32
// registers. Compiled with -mavx512f alone; runs only where the CPU has it.
#include <immintrin.h>

#include <limits>

#include "nearest_l2_impl.h"

namespace ragcore {
namespace {

struct Avx512 {
  using Reg = __m512;
  static constexpr size_t kWidth = 16;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static Reg set1(float v) { return _mm512_set1_ps(v); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  // Where dist < best (ordered: never for NaN), best and label take dist's and label's.
  static void keep_smaller(Reg dist, Reg lab, float* best, float* label) {
    const Reg b = _mm512_load_ps(best);
    const __mmask16 less = _mm512_cmp_ps_mask(dist, b, _CMP_LT_OQ);
    _mm512_store_ps(best, _mm512_mask_blend_ps(less, b, dist));
    _mm512_store_ps(label, _mm512_mask_blend_ps(less, _mm512_load_ps(label), lab));
  }
  static void lowest(const float* best, const float* label, float& v, int64_t& l) {
    const Reg b0 = _mm512_load_ps(best), b1 = _mm512_load_ps(best + 16);
    const Reg l0 = _mm512_load_ps(label), l1 = _mm512_load_ps(label + 16);
    const __mmask16 second = _mm512_cmp_ps_mask(b1, b0, _CMP_LT_OQ) |
                             (_mm512_cmp_ps_mask(b1, b0, _CMP_EQ_OQ) & _mm512_cmp_ps_mask(l1, l0, _CMP_LT_OQ));
    const Reg b = _mm512_mask_blend_ps(second, b0, b1), lab = _mm512_mask_blend_ps(second, l0, l1);
    v = _mm512_reduce_min_ps(b);
    if (!(v < std::numeric_limits<float>::infinity())) {
      l = -1;
      return;
    }
    l = static_cast<int64_t>(_mm512_mask_reduce_min_ps(_mm512_cmp_ps_mask(b, _mm512_set1_ps(v), _CMP_EQ_OQ), lab));
  }
};

}  // namespace

extern const nearest_l2_impl::TileFn kNearestL2Avx512 = nearest_l2_impl::tile<Avx512, 12>;

}  // namespace ragcore
