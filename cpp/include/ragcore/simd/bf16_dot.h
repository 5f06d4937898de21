// Dot products computed in bfloat16: the query is rounded to bf16 and multiplied with
// bf16-stored rows by the CPU's bf16 instructions, two products per fp32 lane and step.
//
// Levels, chosen at run time:
//  - Scalar: the arithmetic of vdpbf16ps written out (the reference the others are tested
//    against, and the path on CPUs without bf16 instructions);
//  - Avx512Bf16: vdpbf16ps with one row per lane (rows repacked side by side, the query's
//    element pairs broadcast); bit-identical to Scalar;
//  - Amx: AMX tiles (tdpbf16ps). The tile unit accumulates in its own order, so its scores
//    differ from the other levels in the last bits, within the bound checked in the tests.
// Scalar and Avx512Bf16 reduce a (query, row) pair by one float32 chain over the element
// pairs (2p, 2p + 1) in order, odd product first, each step rounded (vdpbf16ps's lane).
// Within a level each (query, row) pair is reduced by one fixed sequence, whatever the other
// queries and rows of the call: a query's scores do not depend on its batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ragcore {

enum class Bf16Level : int { Scalar = 0, Avx512Bf16 = 1, Amx = 2 };

// Elements per step of every level: a query is zero-padded to a multiple of this.
constexpr size_t kBf16Chunk = 32;
// Queries per AMX tile (the columns of its query operand).
constexpr size_t kBf16TileQueries = 16;

inline size_t bf16_depth(size_t d) { return (d + kBf16Chunk - 1) / kBf16Chunk * kBf16Chunk; }

// Round to nearest even, as bfloat16 storage rounds (finite input).
uint16_t float_to_bf16(float f);

// The queries of one call, rounded to bf16 and laid out for one level's kernels:
// Scalar / Avx512Bf16: row i at data[i * depth], zero-padded;
// Amx: blocks of 16 queries; in block b, chunk c holds 16 pairs x 16 queries of 32-bit
// (element 2p, 2p + 1) pairs, the tile unit's operand layout, zero-padded.
struct Bf16Queries {
  Bf16Level level = Bf16Level::Scalar;
  size_t nq = 0;
  size_t depth = 0;
  std::vector<uint16_t> data;
};
Bf16Queries prepare_bf16_queries(Bf16Level level, const float* q, size_t ldq, size_t nq, size_t d);

struct Bf16Kernels {
  Bf16Level level;
  const char* name;
  // out[r * ldo + (i - i0)] = <query i, x_r> for queries i0 <= i < i0 + nq and rows r <
  // n_rows of d bf16 elements (row stride ldx elements).
  void (*dot_rows_batch)(const Bf16Queries& q, size_t i0, size_t nq, const uint16_t* x,
                         size_t ldx, size_t n_rows, size_t d, float* out, size_t ldo);
};

// Kernels of one level; throws std::invalid_argument if this CPU or build lacks it.
const Bf16Kernels& bf16_kernels(Bf16Level level);
// Amx needs the kernel's permission to use tile state: requested once, on first check.
bool bf16_level_available(Bf16Level level);
// The fastest available level; AMX only if it passes bf16_level_self_check.
Bf16Level best_bf16_level();
// Whether a level's kernel gives a fixed problem's scores (37 queries x 41 rows, d = 77)
// within float32's summation bound of the exact sums. corrupt_one_score: one score moved
// by 0.01 first (for the tests of the check itself, which must then fail).
bool bf16_level_self_check(Bf16Level level, bool corrupt_one_score = false);

}  // namespace ragcore
