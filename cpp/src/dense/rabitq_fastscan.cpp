// The 1-bit fast scan's packing, tables, scalar kernel and run-time choice of kernel
// (see rabitq_fastscan.h).
#include "ragcore/dense/rabitq_fastscan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "ragcore/dense/rabitq.h"
#include "rabitq_fastscan_impl.h"

namespace ragcore {

size_t rabitq_fast_block_starts(const int64_t* list_offsets, size_t nlist, std::vector<int64_t>& starts) {
  starts.resize(nlist + 1);
  size_t total = 0;
  for (size_t l = 0; l < nlist; ++l) {
    starts[l] = static_cast<int64_t>(total);
    total += rabitq_fast_blocks(static_cast<size_t>(list_offsets[l + 1] - list_offsets[l]));
  }
  starts[nlist] = static_cast<int64_t>(total);
  return total;
}

void rabitq_fast_pack(const uint8_t* rows, size_t row_bytes, const int64_t* list_offsets,
                      size_t nlist, size_t dp, uint8_t* out) {
  if (dp == 0 || dp % 8 || dp > kRabitqFastMaxDim)
    throw std::invalid_argument("rabitq_fast_pack: dp must be a multiple of 8 in [8, 1024]");
  if (row_bytes != rabitq_row_bytes(dp, 1))
    throw std::invalid_argument("rabitq_fast_pack: rows must be 1-bit rows of dp dimensions");
  std::vector<int64_t> starts;
  const size_t blocks = rabitq_fast_block_starts(list_offsets, nlist, starts);
  const size_t block_bytes = rabitq_fast_block_bytes(dp), code_bytes = rabitq_fast_code_bytes(dp);
  const size_t pairs = dp / 8;
  std::memset(out, 0, blocks * block_bytes);
  for (size_t l = 0; l < nlist; ++l) {
    const size_t j0 = static_cast<size_t>(list_offsets[l]), j1 = static_cast<size_t>(list_offsets[l + 1]);
    for (size_t j = j0; j < j1; ++j) {
      const size_t r = j - j0, i = r % kRabitqFastBlock;
      uint8_t* block = out + (static_cast<size_t>(starts[l]) + r / kRabitqFastBlock) * block_bytes;
      const uint8_t* row = rows + j * row_bytes;
      for (size_t p = 0; p < pairs; ++p) block[p * kRabitqFastBlock + i] = row[p];
      for (size_t f = 0; f < kRabitqFactors; ++f)
        std::memcpy(block + code_bytes + (f * kRabitqFastBlock + i) * sizeof(float),
                    row + pairs + f * sizeof(float), sizeof(float));
    }
  }
}

void rabitq_fast_tables(const float* rotated, size_t dp, RabitqFastTables& t) {
  const size_t groups = dp / 4;
  std::vector<float> sums(groups * 16), lows(groups);
  float top = 0.0f;
  double bias = 0.0;
  for (size_t g = 0; g < groups; ++g) {
    float* s = &sums[g * 16];
    const float* v = rotated + 4 * g;
    s[0] = 0.0f;
    for (unsigned e = 1; e < 16; ++e) s[e] = s[e & (e - 1)] + v[__builtin_ctz(e)];
    const auto [lo, hi] = std::minmax_element(s, s + 16);
    lows[g] = *lo;
    bias += *lo;
    top = std::max(top, *hi - *lo);
  }
  // Never below the smallest normal float: a subnormal step loses its relative
  // precision and 1 / delta overflows to inf under ~3e-39 (the tables were then
  // garbage and max_error far below their error, for queries of norm ~1e-37).
  t.delta = std::max(top / 255.0f, std::numeric_limits<float>::min());
  t.bias = static_cast<float>(bias);
  // Half a level per look-up, and 1/1024 of a level for the float rounding of the
  // partial sums and the division (a few units in the last place of `top`).
  t.max_error = static_cast<float>(groups) * t.delta * (0.5f + 1.0f / 1024.0f);
  t.luts.resize(groups * 16);
  const float inv = 1.0f / t.delta;  // a relative error of 2^-23: within the margin above
  for (size_t g = 0; g < groups; ++g)
    for (size_t e = 0; e < 16; ++e) {
      // Round to nearest (ties to even, as nearbyint) inline: adding and subtracting
      // 2^23 leaves no fraction bits to a value in [0, 2^23) (nearbyint: a call an entry).
      // NaN (a non-finite query reaching the native call) becomes 0, not an undefined
      // float-to-integer conversion.
      const float y = (sums[g * 16 + e] - lows[g]) * inv;
      const float x = y > 0.0f ? std::min(y, 255.0f) : 0.0f;
      t.luts[g * 16 + e] = static_cast<uint8_t>((x + 0x1p23f) - 0x1p23f);
    }
}

namespace {

void scalar_layout(const uint8_t* luts, size_t dp, std::vector<uint8_t>& laid) {
  laid.assign(luts, luts + dp / 4 * 16);
}

void scalar_sums(const uint8_t* blocks, size_t nblocks, size_t dp, const uint8_t* luts, uint16_t* out) {
  const size_t pairs = dp / 8, block_bytes = rabitq_fast_block_bytes(dp);
  for (size_t b = 0; b < nblocks; ++b) {
    const uint8_t* block = blocks + b * block_bytes;
    for (size_t i = 0; i < kRabitqFastBlock; ++i) {
      unsigned sum = 0;
      for (size_t p = 0; p < pairs; ++p) {
        const uint8_t c = block[p * kRabitqFastBlock + i];
        sum += luts[(2 * p) * 16 + (c & 15)] + luts[(2 * p + 1) * 16 + (c >> 4)];
      }
      out[b * kRabitqFastBlock + i] = static_cast<uint16_t>(sum);
    }
  }
}

}  // namespace

const RabitqFastScanKernel& rabitq_fast_scalar() {
  static const RabitqFastScanKernel k{scalar_layout, scalar_sums, rabitq_fast_estimates_impl};
  return k;
}

const RabitqFastScanKernel& rabitq_fast_kernel(SimdLevel level) {
#ifdef RAGCORE_X86
  if (level == SimdLevel::Avx512 && simd_level_available(SimdLevel::Avx512)) return rabitq_fast_avx512();
  if (level != SimdLevel::Scalar && simd_level_available(SimdLevel::Avx2)) return rabitq_fast_avx2();
#endif
  (void)level;
  return rabitq_fast_scalar();
}

}  // namespace ragcore
