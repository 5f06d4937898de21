// nearest_l2's kernel on AVX2 + FMA: 6 rows x 16 centroids, 12 accumulators of the 16
// registers. Compiled with -mavx2 -mfma; runs only where the CPU has them.
#include <immintrin.h>

#include "nearest_l2_impl.h"

namespace ragcore {
namespace {

struct Avx2 {
  using Reg = __m256;
  static constexpr size_t kWidth = 8;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg set1(float v) { return _mm256_set1_ps(v); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
};

}  // namespace

extern const nearest_l2_impl::TileFn kNearestL2Avx2 = nearest_l2_impl::tile<Avx2, 6>;

}  // namespace ragcore
