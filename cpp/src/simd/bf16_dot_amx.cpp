// AMX level: tdpbf16ps on tiles of 16 stored rows x 32 elements (taken in place from the
// row-major rows) times 16 queries (laid out by prepare_bf16_queries). This file alone is
// compiled with AMX flags; it runs only after bf16_dot.cpp has checked the CPU and obtained
// the kernel's permission.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "bf16_dot_impl.h"

namespace ragcore {
namespace {

constexpr size_t kTileRows = 16;
constexpr size_t kPrefetchAhead = 64;  // rows

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3: scores (row tile a, query block b) at 2a + b; 4-5: row tiles; 6-7: query blocks.
void configure() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
}

// Chunk c of rows [r, r + 16) as a tile operand (pointer, byte stride): in place when
// whole, else a zero-padded copy in pad (the last rows of the corpus, the last elements
// of a row). The tile number of _tile_loadd must be a literal, so the caller loads it.
const uint16_t* rows_operand(const uint16_t* x, size_t ldx, size_t n_rows, size_t d, size_t r,
                             size_t c, uint16_t* pad, int* stride) {
  if (r + kTileRows <= n_rows && c + kBf16Chunk <= d) {
    *stride = static_cast<int>(ldx * 2);
    return x + r * ldx + c;
  }
  std::memset(pad, 0, kTileRows * kBf16Chunk * 2);
  const size_t rows = std::min(kTileRows, n_rows - r), cols = std::min(kBf16Chunk, d - c);
  for (size_t j = 0; j < rows; ++j)
    std::memcpy(pad + j * kBf16Chunk, x + (r + j) * ldx + c, cols * 2);
  *stride = static_cast<int>(kBf16Chunk * 2);
  return pad;
}

// Copies the wanted scores of one score tile (rows r.., queries of block b) to out.
void copy_out(const float* tile, size_t r, size_t n_rows, size_t block, size_t i0, size_t nq,
              float* out, size_t ldo) {
  const size_t rows = std::min(kTileRows, n_rows - r);
  const size_t first = std::max(i0, block * kBf16TileQueries);
  const size_t last = std::min(i0 + nq, (block + 1) * kBf16TileQueries);
  for (size_t j = 0; j < rows; ++j)
    for (size_t i = first; i < last; ++i)
      out[(r + j) * ldo + (i - i0)] = tile[j * kBf16TileQueries + (i - block * kBf16TileQueries)];
}

void dot_rows_batch(const Bf16Queries& q, size_t i0, size_t nq, const uint16_t* x, size_t ldx,
                    size_t n_rows, size_t d, float* out, size_t ldo) {
  if (nq == 0 || n_rows == 0) return;
  configure();
  alignas(64) uint16_t pad[2][kTileRows * kBf16Chunk];
  alignas(64) float tile[kTileRows * kBf16TileQueries];
  const size_t chunks = q.depth / kBf16Chunk;
  const size_t block_end = (i0 + nq - 1) / kBf16TileQueries + 1;
  for (size_t r = 0; r < n_rows; r += 2 * kTileRows) {
    const bool two_row_tiles = r + kTileRows < n_rows;
    for (size_t b = i0 / kBf16TileQueries; b < block_end; b += 2) {
      const bool two_blocks = b + 1 < block_end;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (size_t c = 0; c < chunks; ++c) {
        // A tile load reads 16 rows' lines at once, too many streams for the hardware
        // prefetchers: request the same lines of the next 32 rows (a hint: never faults).
        for (size_t j = r + kPrefetchAhead; j < std::min(n_rows, r + kPrefetchAhead + 2 * kTileRows); ++j)
          __builtin_prefetch(x + j * ldx + c * kBf16Chunk);
        int stride = 0;
        const uint16_t* rows0 = rows_operand(x, ldx, n_rows, d, r, c * kBf16Chunk, pad[0], &stride);
        _tile_loadd(4, rows0, stride);
        _tile_loadd(6, bf16_query_tile(q, b, c), 64);
        _tile_dpbf16ps(0, 4, 6);
        if (two_blocks) {
          _tile_loadd(7, bf16_query_tile(q, b + 1, c), 64);
          _tile_dpbf16ps(1, 4, 7);
        }
        if (two_row_tiles) {
          const uint16_t* rows1 =
              rows_operand(x, ldx, n_rows, d, r + kTileRows, c * kBf16Chunk, pad[1], &stride);
          _tile_loadd(5, rows1, stride);
          _tile_dpbf16ps(2, 5, 6);
          if (two_blocks) _tile_dpbf16ps(3, 5, 7);
        }
      }
      _tile_stored(0, tile, 64);
      copy_out(tile, r, n_rows, b, i0, nq, out, ldo);
      if (two_blocks) {
        _tile_stored(1, tile, 64);
        copy_out(tile, r, n_rows, b + 1, i0, nq, out, ldo);
      }
      if (two_row_tiles) {
        _tile_stored(2, tile, 64);
        copy_out(tile, r + kTileRows, n_rows, b, i0, nq, out, ldo);
        if (two_blocks) {
          _tile_stored(3, tile, 64);
          copy_out(tile, r + kTileRows, n_rows, b + 1, i0, nq, out, ldo);
        }
      }
    }
  }
  _tile_release();
}

}  // namespace

extern const Bf16Kernels kBf16AmxKernels = {Bf16Level::Amx, "amx", dot_rows_batch};

}  // namespace ragcore
