// The FHT-Kac rotation's arithmetic (see rabitq_rotation.h), written as plain
// loops over contiguous coordinates so that each including file's target flags
// decide the vector width; included by rabitq_rotation.cpp (baseline) and
// rabitq_rotation_avx512.cpp (-mavx512f), each inside its own namespace; they
// include <cmath>, <cstddef>, <cstdint> and <cstring> first, outside it.

namespace {

void flip_signs(const uint8_t* bits, float* x, size_t dp) {
  for (size_t p = 0; p < dp; ++p) {
    const bool set = (bits[p >> 3] >> (p & 7)) & 1u;
    x[p] = set ? -x[p] : x[p];
  }
}

// In-place Walsh-Hadamard transform of t = 2^k values, times `scale`: butterflies of
// stride h pair i and i + h inside each block of 2h, natural (Hadamard) order.
void fwht(float* x, size_t t, float scale) {
  for (size_t h = 1; h < t; h <<= 1) {
    for (size_t b = 0; b < t; b += 2 * h) {
      float* __restrict lo = x + b;
      float* __restrict hi = x + b + h;
      for (size_t j = 0; j < h; ++j) {
        const float a = lo[j], c = hi[j];
        lo[j] = a + c;
        hi[j] = a - c;
      }
    }
  }
  for (size_t p = 0; p < t; ++p) x[p] *= scale;
}

void kac_step(float* x, size_t dp) {
  const size_t half = dp / 2;
  const float s = static_cast<float>(1.0 / std::sqrt(2.0));
  float* __restrict lo = x;
  float* __restrict hi = x + half;
  for (size_t j = 0; j < half; ++j) {
    const float a = lo[j], c = hi[j];
    lo[j] = (a + c) * s;
    hi[j] = (a - c) * s;
  }
}

void rotate_one_impl(const uint8_t* signs, size_t rounds, size_t d, size_t dp, const float* in,
                     float* out) {
  std::memcpy(out, in, d * sizeof(float));
  std::memset(out + d, 0, (dp - d) * sizeof(float));
  size_t t = 1;
  while (2 * t <= dp) t *= 2;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(t)));
  for (size_t r = 0; r < rounds; ++r) {
    flip_signs(signs + r * (dp / 8), out, dp);
    fwht(out + (r % 2 == 0 ? 0 : dp - t), t, scale);
    if (t < dp) kac_step(out, dp);
  }
}

}  // namespace
