// What every level of the 1-bit fast scan shares (rabitq_fastscan.h): the estimates
// from the sums, written once as a plain loop and compiled in each kernel's file with
// that file's target flags, so the compiler vectorises it at that level.
#pragma once

#include <cmath>
#include <cstring>

#include "ragcore/dense/rabitq.h"
#include "ragcore/dense/rabitq_fastscan.h"

namespace ragcore {
// Internal linkage: each kernel's file keeps its own build of this (an inline function
// of external linkage would be merged by the linker into one, of any one level).
namespace {

void rabitq_fast_estimates_impl(const uint8_t* blocks, size_t nblocks, size_t dp,
                                       const uint16_t* sums, const RabitqFastTerms& t, float* est,
                                       float* width) {
  const size_t block_bytes = rabitq_fast_block_bytes(dp), code_bytes = rabitq_fast_code_bytes(dp);
  for (size_t b = 0; b < nblocks; ++b) {
    float f[kRabitqFactors][kRabitqFastBlock];  // copied: the blocks are bytes (no aliasing)
    std::memcpy(f, blocks + b * block_bytes + code_bytes, sizeof(f));
    const uint16_t* s = sums + b * kRabitqFastBlock;
    float* e = est + b * kRabitqFastBlock;
    float* w = width + b * kRabitqFastBlock;
    for (size_t i = 0; i < kRabitqFastBlock; ++i) {
      e[i] = t.base + f[0][i] + f[1][i] * (t.shift + t.delta * static_cast<float>(s[i]));
      w[i] = t.width * f[2][i] + t.qwidth * std::fabs(f[1][i]);
    }
  }
}

}  // namespace
}  // namespace ragcore
