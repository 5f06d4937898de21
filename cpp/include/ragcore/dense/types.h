// The enumerations that describe stored dense rows and how they are scored,
// shared by the CPU kernels and the CUDA module. Each crosses to Python as one
// py::enum_ of ragcore._core (cpp/bindings/module.cpp), which ragcore._cuda reuses.
#pragma once

#include <cstddef>

namespace ragcore {

// Scores are "higher is better": inner product, or minus the squared L2
// distance. Cosine is inner product over normalised vectors (the caller
// normalises).
enum class Metric : int { InnerProduct = 0, L2 = 1 };

// Element type of stored rows. SQ8 rows are per-dimension 8-bit scalar-quantised
// codes (IVFIndex dtype="sq8"), read by dot_rows_sq8.
enum class Storage : int { F32 = 0, F16 = 1, BF16 = 2, SQ8 = 3 };
// The float storages F32, F16 and BF16 (tables indexed by Storage in simd.h).
constexpr int kNumStorage = 3;

constexpr size_t storage_bytes(Storage s) {
  return s == Storage::F32 ? 4 : s == Storage::SQ8 ? 1 : 2;
}

}  // namespace ragcore
