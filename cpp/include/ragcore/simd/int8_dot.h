// Dot products of int8 codes (HNSWIndex dtype="int8": the walk scores codes, then
// re-scores its final candidates with the float32 vectors). The sums are exact in
// int32 (|code| <= 127 and d <= 65536 keep them below 2^31), so every kernel gives
// the scalar loop's result exactly. Chosen at run time: AVX-512 VNNI (vpdpwssd), else
// AVX-512BW (vpmaddwd + vpaddd), else AVX2 (vpmaddubsw + vpmaddwd), else the scalar loop.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ragcore/simd/simd.h"

namespace ragcore {

struct Int8Kernel {
  const char* name;  // "avx512vnni", "avx512bw", "avx2" or "scalar"
  // out[j] = sum_p q[p] * rows[j][p] for j < n (rows anywhere in memory). Every code
  // must lie in [-127, 127] (quantize_int8's range; the AVX2 kernel relies on it).
  void (*dot_gather)(const int8_t* q, const int8_t* const* rows, size_t n, size_t d, int32_t* out);
};

// The widest kernel of a SIMD level (Avx512: VNNI where the CPU has it, else BW);
// throws std::invalid_argument if this CPU or build lacks the level.
const Int8Kernel& int8_kernel(SimdLevel level);

// Symmetric per-vector quantisation: s = max |x[p]|, inv = 127.0f / s (float32), codes[p] =
// x[p] * inv (float32) rounded half to even, so x ~ codes * s / 127. Returns s; a zero row
// gets s = 0 and zero codes.
float quantize_int8(const float* x, size_t d, int8_t* codes);

}  // namespace ragcore
