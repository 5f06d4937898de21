// The scalar int8 kernel, the quantiser and the run-time choice (int8_dot.h).
#include "ragcore/simd/int8_dot.h"

#include <cmath>

#include "ragcore/simd/simd.h"

namespace ragcore {

#ifdef RAGCORE_X86
extern const Int8Kernel kInt8Avx512Vnni;
extern const Int8Kernel kInt8Avx512Bw;
extern const Int8Kernel kInt8Avx2;
#endif

namespace {

void dot_gather_scalar(const int8_t* q, const int8_t* const* rows, size_t n, size_t d,
                       int32_t* out) {
  for (size_t j = 0; j < n; ++j) {
    int32_t acc = 0;
    for (size_t p = 0; p < d; ++p) acc += static_cast<int32_t>(q[p]) * rows[j][p];
    out[j] = acc;
  }
}

const Int8Kernel kInt8Scalar = {"scalar", dot_gather_scalar};

}  // namespace

const Int8Kernel& int8_kernel(SimdLevel level) {
  dense_kernels(level);  // throws if the level is not available
  switch (level) {
#ifdef RAGCORE_X86
    case SimdLevel::Avx512:
      return __builtin_cpu_supports("avx512vnni") ? kInt8Avx512Vnni : kInt8Avx512Bw;
    case SimdLevel::Avx2:
      return kInt8Avx2;
#endif
    default:
      return kInt8Scalar;
  }
}

float quantize_int8(const float* x, size_t d, int8_t* codes) {
  float s = 0.0f;
  for (size_t p = 0; p < d; ++p) s = std::fmax(s, std::fabs(x[p]));
  const float inv = s > 0.0f ? 127.0f / s : 0.0f;
  for (size_t p = 0; p < d; ++p) {
    const float v = std::nearbyint(x[p] * inv);  // the default rounding: half to even
    codes[p] = static_cast<int8_t>(std::fmin(127.0f, std::fmax(-127.0f, v)));
  }
  return s;
}

}  // namespace ragcore
