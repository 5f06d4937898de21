// nearest_l2's kernel on AVX-512: 12 rows x 32 centroids, 24 accumulators of the 32
// registers. Compiled with -mavx512f alone; runs only where the CPU has it.
#include <immintrin.h>

#include "nearest_l2_impl.h"

namespace ragcore {
namespace {

struct Avx512 {
  using Reg = __m512;
  static constexpr size_t kWidth = 16;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg set1(float v) { return _mm512_set1_ps(v); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
};

}  // namespace

extern const nearest_l2_impl::TileFn kNearestL2Avx512 = nearest_l2_impl::tile<Avx512, 12>;

}  // namespace ragcore
