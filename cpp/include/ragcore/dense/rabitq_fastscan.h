// The 1-bit RaBitQ fast scan: <x_j, P q> by 4-bit table look-ups in SIMD registers
// (the technique of FAISS's IndexIVFRaBitQFastScan, taken from 4-bit PQ fast scan:
// pq4.h). A 1-bit code is dp bits; each nibble (4 dimensions) indexes a table of the
// 16 partial sums of those 4 rotated query coordinates, quantised to bytes, and
// vpshufb looks up 32 codes at once, summed in 16-bit lanes.
//
// Blocks: the rows of each list in blocks of 32 (a list's last block padded with
// zero rows); a block is the codes, pair p = byte p of every row's bit plane (dims
// 8p .. 8p + 7: low nibble = nibble 2p, high = nibble 2p + 1; byte i = row i, as in
// pq4.h's layout with m = dp / 4), then the rows' float32 f_add[32], f_scale[32],
// f_err[32] (rabitq.h): a scan reads one contiguous block and nothing else.
// Built in memory from the stored rows (rabitq_fast_pack); never written to a file.
//
// Quantisation: per group g of 4 coordinates, T_g[v] = sum of the coordinates whose
// bit is set in v; lo_g = min_v T_g[v]; delta = max_g (max T_g - lo_g) / 255 (at
// least FLT_MIN);
// luts[g][v] = round((T_g[v] - lo_g) / delta). Then
//   <x, P q> = bias + delta * sum_g luts[g][x_g] + e,  bias = sum_g lo_g,
// |e| <= max_error = dp / 4 * delta / 2 (each look-up rounds by at most delta / 2),
// which the search adds to each row's error bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ragcore/simd/simd.h"

namespace ragcore {

constexpr size_t kRabitqFastBlock = 32;
// 16-bit sums: dp / 4 look-ups of at most 255 stay below 2^16 up to dp = 1024.
constexpr size_t kRabitqFastMaxDim = 1024;

inline size_t rabitq_fast_code_bytes(size_t dp) { return dp / 8 * kRabitqFastBlock; }
inline size_t rabitq_fast_block_bytes(size_t dp) {
  return rabitq_fast_code_bytes(dp) + 3 * kRabitqFastBlock * sizeof(float);
}
inline size_t rabitq_fast_blocks(size_t rows) { return (rows + kRabitqFastBlock - 1) / kRabitqFastBlock; }

// starts[l] = the first block of list l (starts[nlist] = all blocks) for lists given
// by list_offsets (nlist + 1, non-decreasing from 0); returns the number of blocks.
size_t rabitq_fast_block_starts(const int64_t* list_offsets, size_t nlist, std::vector<int64_t>& starts);

// Packs 1-bit rows (n x row_bytes, rabitq_row_bytes(dp, 1), in list order) into
// blocks: out holds rabitq_fast_block_starts(...) * rabitq_fast_block_bytes(dp) bytes.
// Throws std::invalid_argument for dp not a multiple of 8 or above kRabitqFastMaxDim.
void rabitq_fast_pack(const uint8_t* rows, size_t row_bytes, const int64_t* list_offsets,
                      size_t nlist, size_t dp, uint8_t* out);

struct RabitqFastTables {
  std::vector<uint8_t> luts;  // dp / 4 x 16
  float bias = 0.0f;
  float delta = 1.0f;
  float max_error = 0.0f;  // worst |e| of the quantised sum, above
};

// The quantised tables of one rotated query (dp floats).
void rabitq_fast_tables(const float* rotated, size_t dp, RabitqFastTables& t);

// What turns a row's sum S into its inner-product estimate and bound width (rabitq.h):
//   est = base + f_add + f_scale * (shift + delta * S),
//   width = width * f_err + qwidth * |f_scale|.
struct RabitqFastTerms {
  float base;    // <c_l, q>
  float shift;   // bias + the centring of the grid (-sum(P q) / 2)
  float delta;   // the tables' step
  float width;   // epsilon * |q - c_l| (times 2 for L2)
  float qwidth;  // max_error (times 2 for L2)
};

struct RabitqFastScanKernel {
  // The luts (dp / 4 x 16) in the layout `sums` reads (per query).
  void (*layout)(const uint8_t* luts, size_t dp, std::vector<uint8_t>& laid);
  // out[32 b + i] = sum_g luts[g][nibble g of row i of block b], b < nblocks.
  void (*sums)(const uint8_t* blocks, size_t nblocks, size_t dp, const uint8_t* laid,
               uint16_t* out);
  // est[32 b + i], width[32 b + i] of every row of the blocks (padding rows too) from
  // their sums and the blocks' factors; one plain loop compiled at each level.
  void (*estimates)(const uint8_t* blocks, size_t nblocks, size_t dp, const uint16_t* sums,
                    const RabitqFastTerms& t, float* est, float* width);
};

// The kernel of this SIMD level (AVX-512BW, AVX2, else scalar); all give equal sums.
const RabitqFastScanKernel& rabitq_fast_kernel(SimdLevel level);

const RabitqFastScanKernel& rabitq_fast_scalar();
#ifdef RAGCORE_X86
const RabitqFastScanKernel& rabitq_fast_avx2();
const RabitqFastScanKernel& rabitq_fast_avx512();
#endif

}  // namespace ragcore
