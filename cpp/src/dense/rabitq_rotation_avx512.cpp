// The FHT-Kac rotation with AVX-512 (see rabitq_rotation.h): the Walsh-Hadamard
// butterflies of stride 1, 2, 4 and 8 inside one 16-float register (a permute and a
// masked blend of the sum and the difference), wider strides between registers,
// sign flips as one masked negation per 16 coordinates. The same arithmetic per
// coordinate as the baseline loops (rabitq_rotation_impl.h), which handle the
// transforms shorter than 16 and the tails.
#include "ragcore/dense/rabitq_rotation.h"

#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ragcore::rabitq_rotation_detail {
namespace avx512 {
#include "rabitq_rotation_impl.h"

// One butterfly pass of stride h < 16 inside v: lanes with bit h set take lo - hi
// (their partner, swapped in, minus themselves), the others lo + hi.
template <int H>
inline __m512 in_register(__m512 v) {
  __m512 swapped;
  __mmask16 upper;
  if constexpr (H == 1) {
    swapped = _mm512_permute_ps(v, 0xB1);
    upper = 0xAAAA;
  } else if constexpr (H == 2) {
    swapped = _mm512_permute_ps(v, 0x4E);
    upper = 0xCCCC;
  } else if constexpr (H == 4) {
    swapped = _mm512_shuffle_f32x4(v, v, 0xB1);
    upper = 0xF0F0;
  } else {
    swapped = _mm512_shuffle_f32x4(v, v, 0x4E);
    upper = 0xFF00;
  }
  return _mm512_mask_blend_ps(upper, _mm512_add_ps(v, swapped), _mm512_sub_ps(swapped, v));
}

void fwht16(float* x, size_t t, float scale) {
  for (size_t b = 0; b < t; b += 16) {
    __m512 v = _mm512_loadu_ps(x + b);
    v = in_register<8>(in_register<4>(in_register<2>(in_register<1>(v))));
    _mm512_storeu_ps(x + b, v);
  }
  for (size_t h = 16; h < t; h <<= 1) {
    for (size_t b = 0; b < t; b += 2 * h) {
      for (size_t j = 0; j < h; j += 16) {
        const __m512 a = _mm512_loadu_ps(x + b + j), c = _mm512_loadu_ps(x + b + h + j);
        _mm512_storeu_ps(x + b + j, _mm512_add_ps(a, c));
        _mm512_storeu_ps(x + b + h + j, _mm512_sub_ps(a, c));
      }
    }
  }
  const __m512 s = _mm512_set1_ps(scale);
  for (size_t p = 0; p < t; p += 16) _mm512_storeu_ps(x + p, _mm512_mul_ps(_mm512_loadu_ps(x + p), s));
}

void flip16(const uint8_t* bits, float* x, size_t dp) {
  const __m512 zero = _mm512_setzero_ps();
  size_t p = 0;
  for (; p + 16 <= dp; p += 16) {
    uint16_t m;
    std::memcpy(&m, bits + p / 8, sizeof(m));
    const __m512 v = _mm512_loadu_ps(x + p);
    _mm512_storeu_ps(x + p, _mm512_mask_sub_ps(v, m, zero, v));
  }
  if (p < dp) flip_signs(bits + p / 8, x + p, dp - p);  // dp - p = 8: one byte
}

void kac16(float* x, size_t dp) {
  const size_t half = dp / 2;
  const __m512 s = _mm512_set1_ps(static_cast<float>(1.0 / std::sqrt(2.0)));
  size_t j = 0;
  for (; j + 16 <= half; j += 16) {
    const __m512 a = _mm512_loadu_ps(x + j), c = _mm512_loadu_ps(x + half + j);
    _mm512_storeu_ps(x + j, _mm512_mul_ps(_mm512_add_ps(a, c), s));
    _mm512_storeu_ps(x + half + j, _mm512_mul_ps(_mm512_sub_ps(a, c), s));
  }
  const float sf = static_cast<float>(1.0 / std::sqrt(2.0));
  for (; j < half; ++j) {
    const float a = x[j], c = x[half + j];
    x[j] = (a + c) * sf;
    x[half + j] = (a - c) * sf;
  }
}

void rotate_one(const uint8_t* signs, size_t rounds, size_t d, size_t dp, const float* in,
                float* out) {
  size_t t = 1;
  while (2 * t <= dp) t *= 2;
  if (t < 16) return rotate_one_impl(signs, rounds, d, dp, in, out);
  std::memcpy(out, in, d * sizeof(float));
  std::memset(out + d, 0, (dp - d) * sizeof(float));
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(t)));
  for (size_t r = 0; r < rounds; ++r) {
    flip16(signs + r * (dp / 8), out, dp);
    fwht16(out + (r % 2 == 0 ? 0 : dp - t), t, scale);
    if (t < dp) kac16(out, dp);
  }
}

}  // namespace avx512

RotateOne rotate_avx512() { return avx512::rotate_one; }

}  // namespace ragcore::rabitq_rotation_detail
