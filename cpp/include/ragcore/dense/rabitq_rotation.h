// The structured random rotation of RaBitQ codes: a few rounds of random sign
// flips and a normalised fast Walsh-Hadamard transform (the design of rabitqlib's
// FhtKacRotator), O(dp log dp) per vector instead of a dense dp x d mat-vec.
//
// A vector of d values is zero-padded to dp (rabitq_padded_dim(d), a multiple of
// 8) and goes through `rounds` rounds; round r:
//   1. negate coordinate p where bit p of signs[r] is set (bytes little-endian);
//   2. Walsh-Hadamard transform, divided by sqrt(T), of the T = 2^floor(log2 dp)
//      leading coordinates (even r) or trailing ones (odd r);
//   3. when T < dp, one Kac step mixing the halves:
//      (x_i, x_{i + dp/2}) -> ((x_i + x_{i + dp/2}) / sqrt 2, (x_i - x_{i + dp/2}) / sqrt 2).
// Every step is orthogonal, so the whole map keeps norms and inner products; the
// leading/trailing alternation and the Kac steps mix all dp coordinates when dp
// is not a power of two.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ragcore/simd/simd.h"

namespace ragcore {

constexpr size_t kRabitqRotationRounds = 4;

// Rotates n rows of d floats (row stride d) into n rows of dp floats; signs holds
// rounds x dp / 8 bytes. Threads over rows (<= 0: all cores).
void rabitq_fht_rotate(const uint8_t* signs, size_t rounds, size_t d, size_t dp, const float* in,
                       size_t n, float* out, int n_threads, SimdLevel level);

// One vector, in the calling thread (a query's rotation inside its search).
void rabitq_fht_rotate_one(const uint8_t* signs, size_t rounds, size_t d, size_t dp,
                           const float* in, float* out, SimdLevel level);

namespace rabitq_rotation_detail {
using RotateOne = void (*)(const uint8_t*, size_t, size_t, size_t, const float*, float*);
RotateOne rotate_scalar();
#ifdef RAGCORE_X86
RotateOne rotate_avx512();
#endif
}  // namespace rabitq_rotation_detail

}  // namespace ragcore
