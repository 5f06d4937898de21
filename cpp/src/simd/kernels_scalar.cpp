// Scalar kernels: the portable baseline, and what the SIMD levels are tested against.
#include <cstring>

#include "ragcore/simd/simd.h"

namespace ragcore {

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      int shift = 0;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        ++shift;
      }
      mantissa &= 0x3ffu;
      bits = sign | static_cast<uint32_t>(127 - 15 + 1 - shift) << 23 | mantissa << 13;
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | mantissa << 13;
  } else {
    bits = sign | (exponent + 127 - 15) << 23 | mantissa << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

namespace {

inline float load_one(const float* x) { return *x; }
inline float load_one(const uint16_t* x, Storage s) {
  return s == Storage::F16 ? half_to_float(*x) : bf16_to_float(*x);
}

template <Storage S>
float element(const void* x, size_t i) {
  if constexpr (S == Storage::F32) {
    return load_one(static_cast<const float*>(x) + i);
  } else if constexpr (S == Storage::SQ8) {
    return static_cast<float>(static_cast<const uint8_t*>(x)[i]);
  } else {
    return load_one(static_cast<const uint16_t*>(x) + i, S);
  }
}

template <Storage S>
void dot_rows(const float* q, const void* x, size_t ldx, size_t n_rows, size_t d, float* out) {
  for (size_t j = 0; j < n_rows; ++j) {
    float acc = 0.0f;
    for (size_t p = 0; p < d; ++p) acc += q[p] * element<S>(x, j * ldx + p);
    out[j] = acc;
  }
}

template <Storage S>
void to_f32(const void* x, size_t ldx, size_t n_rows, size_t d, float* dst) {
  for (size_t j = 0; j < n_rows; ++j)
    for (size_t p = 0; p < d; ++p) dst[j * d + p] = element<S>(x, j * ldx + p);
}

// The scalar dot_rows sum, query by query: the same expression, so the same rounding.
void dot_rows_batch(const float* q, size_t ldq, size_t nq, const float* x, size_t ldx,
                    size_t n_rows, size_t d, float* out, size_t ldo) {
  for (size_t j = 0; j < n_rows; ++j)
    for (size_t i = 0; i < nq; ++i) dot_rows<Storage::F32>(q + i * ldq, x + j * ldx, ldx, 1, d,
                                                          out + j * ldo + i);
}

size_t at_least(const float* s, const float* thr, size_t n, uint32_t* idx) {
  size_t count = 0;
  for (size_t i = 0; i < n; ++i)
    if (s[i] >= thr[i]) idx[count++] = static_cast<uint32_t>(i);
  return count;
}

template <Storage S>
void dot_gather(const float* q, const void* const* rows, size_t n, size_t d, float* out) {
  for (size_t j = 0; j < n; ++j) dot_rows<S>(q, rows[j], d, 1, d, out + j);
}

}  // namespace

extern const DenseKernels kScalarKernels = {
    SimdLevel::Scalar,
    "scalar",
    {dot_rows<Storage::F32>, dot_rows<Storage::F16>, dot_rows<Storage::BF16>},
    dot_rows<Storage::SQ8>,
    {to_f32<Storage::F32>, to_f32<Storage::F16>, to_f32<Storage::BF16>},
    to_f32<Storage::SQ8>,
    dot_rows_batch,
    at_least,
    {dot_gather<Storage::F32>, dot_gather<Storage::F16>, dot_gather<Storage::BF16>},
    {dot_rows<Storage::F32>, dot_rows<Storage::F16>, dot_rows<Storage::BF16>},
    nullptr,  // no packed batch: dot_rows_batch
    nullptr,
};

}  // namespace ragcore
