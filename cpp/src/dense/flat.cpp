#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "ragcore/dense/flat.h"
#include "ragcore/util/parallel.h"
#include "ragcore/topk/topk_batch.h"

namespace ragcore {
namespace {

// From this batch the blocked path wins, as bench/calibrate/crossover.py finds. Narrow storage crosses later because its scan reads
// half the bytes while its blocked path converts every tile.
constexpr size_t kBlockedFromBatchAvx512[kNumStorage] = {8, 16, 16};
constexpr size_t kBlockedFromBatchAvx2[kNumStorage] = {6, 12, 12};
constexpr size_t kBlockedFromBatchScalar = 4;
// bf16 compute: the AMX tile unit works on 16 queries at once, and the AVX512_BF16 kernel
// repacks the rows of each call into panels, so one pass over the rows for the whole batch
// wins from two queries on (the scan path would repack them for every query).
constexpr size_t kBf16BlockedFromBatch[3] = {4, 2, 2};
// Scan path: corpus rows per block, sized so a block stays in L1 across queries.
constexpr size_t kScanBlockBytes = 32 * 1024;
// One query reuses no row: a block only bounds the score buffer; its quarters are the
// one-query kernel's streams (smaller and larger blocks measured alike).
constexpr size_t kOneQueryBlockRows = 1024;
// Blocked path: corpus rows per tile and queries per block, sized so the corpus
// tile, the query block and the score tile fit in a 1 MiB L2.
constexpr size_t kTileRows = 240;
constexpr size_t kTileQueries = 256;
// Below this many queries per worker the corpus is split rather than the queries.
constexpr size_t kQueriesPerWorker = 64;
// Below this many multiply-adds a call runs on one thread: spawning costs more.
constexpr double kMinWorkPerThread = 1e6;

size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

class FlatSearch {
 public:
  explicit FlatSearch(const FlatSearchArgs& a)
      : a_(a),
        kern_(dense_kernels(a.simd_level < 0 ? best_simd_level()
                                             : static_cast<SimdLevel>(a.simd_level))),
        kk_(std::min(a.k, a.n)),
        bf16_(a.bf16_compute ? &bf16_kernels(a.bf16_level < 0
                                                  ? best_bf16_level()
                                                  : static_cast<Bf16Level>(a.bf16_level))
                             : nullptr) {}

  void run() {
    if (kk_ == 0 || a_.nq == 0) {  // empty corpus: all padding
      TopKBatch none(a_.nq, 1);
      for (size_t i = 0; i < a_.nq; ++i) none.finish(i, out_scores(i), out_ids(i), a_.k);
      return;
    }
    const size_t min_batch = bf16_ ? bf16_blocked_path_min_batch(bf16_->level)
                                   : blocked_path_min_batch(kern_.level, a_.storage);
    blocked_ = a_.path == DensePath::Blocked || (a_.path == DensePath::Auto && a_.nq >= min_batch);
    if (a_.metric == Metric::L2) compute_query_norms();
    if (bf16_) bf16_queries_ = prepare_bf16_queries(bf16_->level, a_.queries, a_.query_stride, a_.nq, a_.d);

    double work = static_cast<double>(a_.n) * a_.nq * a_.d;
    // Work for one thread skips hardware_concurrency (a call that costs microseconds).
    int threads = work < 2 * kMinWorkPerThread ? 1 : resolve_threads(a_.n_threads);
    threads = static_cast<int>(std::max(1.0, std::min<double>(threads, work / kMinWorkPerThread)));

    // Split the corpus when each worker would get too few queries to fill its
    // panels; from two wide panels per worker on, splitting the queries is faster,
    // as no worker then keeps candidates for every query.
    const size_t rows_per_tile = corpus_tile_rows();
    const bool few_queries = a_.nq < static_cast<size_t>(threads) * kQueriesPerWorker;
    if (threads > 1 && few_queries && a_.n >= static_cast<size_t>(threads) * 2 * rows_per_tile) {
      search_split_corpus(threads, rows_per_tile);
    } else {
      search_split_queries(threads);
    }
  }

 private:
  float* out_scores(size_t i) const { return a_.out_scores + i * a_.k; }
  int64_t* out_ids(size_t i) const { return a_.out_ids + i * a_.k; }

  // ---- setup -------------------------------------------------------------

  void compute_query_norms() {
    qnorms_.resize(a_.nq);
    for (size_t i = 0; i < a_.nq; ++i) {
      const float* q = a_.queries + i * a_.query_stride;
      float s = 0.0f;
      for (size_t p = 0; p < a_.d; ++p) s += q[p] * q[p];
      qnorms_[i] = s;
    }
  }

  size_t corpus_tile_rows() const {
    if (a_.tile_rows) return a_.tile_rows;
    if (blocked_) return kTileRows;
    size_t row_bytes = a_.d * storage_bytes(a_.storage);
    return std::max<size_t>(16, kScanBlockBytes / std::max<size_t>(row_bytes, 1));
  }

  int64_t id_of(size_t row) const {
    return a_.ids ? a_.ids[row] : static_cast<int64_t>(row);
  }

  bool allowed(size_t row) const { return !a_.allow.active() || a_.allow.allows(row, id_of(row)); }

  // ---- work split --------------------------------------------------------

  // Each worker keeps candidates for every query over its share of the corpus;
  // they are merged at the end (the order does not matter: ranking is total).
  void search_split_corpus(int threads, size_t rows_per_tile) {
    const size_t tasks_wanted = static_cast<size_t>(threads) * 16;  // fine grain: balances a core that is busy elsewhere
    const size_t rows_per_task =
        ceil_div(ceil_div(a_.n, tasks_wanted), rows_per_tile) * rows_per_tile;
    const size_t n_tasks = ceil_div(a_.n, rows_per_task);
    std::vector<TopKBatch> per_worker;
    per_worker.reserve(threads);
    for (int w = 0; w < threads; ++w) per_worker.emplace_back(a_.nq, kk_);

    parallel_for(n_tasks, threads, [&](size_t task, int worker) {
      size_t j0 = task * rows_per_task, j1 = std::min(a_.n, j0 + rows_per_task);
      search_range(0, a_.nq, j0, j1, per_worker[worker]);
    });

    TopKBatch& merged = per_worker[0];
    for (size_t i = 0; i < a_.nq; ++i) {
      for (int w = 1; w < threads; ++w) merged.merge_from(per_worker[w], i, i);
      merged.finish(i, out_scores(i), out_ids(i), a_.k);
    }
  }

  // Each task owns a block of queries and scans the whole corpus for them.
  void search_split_queries(int threads) {
    size_t per_task = ceil_div(a_.nq, static_cast<size_t>(threads));
    if (blocked_) per_task = std::min(per_task, kTileQueries);
    if (bf16_) per_task = ceil_div(per_task, kBf16TileQueries) * kBf16TileQueries;  // whole tiles
    const size_t n_tasks = ceil_div(a_.nq, per_task);
    parallel_for(n_tasks, threads, [&](size_t task, int) {
      size_t q0 = task * per_task, q1 = std::min(a_.nq, q0 + per_task);
      TopKBatch top(q1 - q0, kk_);
      search_range(q0, q1, 0, a_.n, top);
      for (size_t i = q0; i < q1; ++i) top.finish(i - q0, out_scores(i), out_ids(i), a_.k);
    });
  }

  // Queries [q0, q1) against corpus rows [j0, j1); query i is top's query i - q0
  // in split-queries mode and i in split-corpus mode (where q0 = 0).
  void search_range(size_t q0, size_t q1, size_t j0, size_t j1, TopKBatch& top) {
    if (blocked_) {
      blocked_range(q0, q1, j0, j1, top);
    } else {
      scan_range(q0, q1, j0, j1, top);
    }
  }

  const void* corpus_row(size_t j) const {
    return static_cast<const unsigned char*>(a_.corpus) +
           j * a_.corpus_stride * storage_bytes(a_.storage);
  }

  // Turns inner products into the metric's score.
  float finish_score(float dot, size_t i, size_t j) const {
    return a_.metric == Metric::L2 ? 2.0f * dot - a_.sq_norms[j] - qnorms_[i] : dot;
  }

  // ---- scan path ---------------------------------------------------------

  void scan_range(size_t q0, size_t q1, size_t j0, size_t j1, TopKBatch& top) {
    const bool one_query = q1 - q0 == 1;
    const size_t block = one_query ? kOneQueryBlockRows : corpus_tile_rows();
    auto dot_rows = one_query ? kern_.dot_rows_one_query[static_cast<int>(a_.storage)]
                              : kern_.dot_rows[static_cast<int>(a_.storage)];
    std::vector<float> scores(block);
    for (size_t jb = j0; jb < j1; jb += block) {
      const size_t rows = std::min(block, j1 - jb);
      for (size_t i = q0; i < q1; ++i) {
        if (bf16_) {
          bf16_->dot_rows_batch(bf16_queries_, i, 1, static_cast<const uint16_t*>(corpus_row(jb)),
                                a_.corpus_stride, rows, a_.d, scores.data(), 1);
        } else {
          dot_rows(a_.queries + i * a_.query_stride, corpus_row(jb), a_.corpus_stride, rows,
                   a_.d, scores.data());
        }
        const size_t slot = i - q0;
        float threshold = top.threshold(slot);
        for (size_t r = 0; r < rows; ++r) {
          float s = finish_score(scores[r], i, jb + r);
          if (s < threshold) continue;  // rejects most rows with one compare
          if (!allowed(jb + r)) continue;
          top.push(slot, s, id_of(jb + r));
          threshold = top.threshold(slot);
        }
      }
    }
  }

  // ---- blocked path ------------------------------------------------------

  void blocked_range(size_t q0, size_t q1, size_t j0, size_t j1, TopKBatch& top) {
    const size_t d = a_.d;
    const size_t tile_rows = corpus_tile_rows();
    const size_t ld_tile = kTileQueries;  // score tile: [corpus row][query]

    std::vector<float> tile(tile_rows * ld_tile);
    // fp16/bf16 tiles are converted once, then reused by every query of the batch
    // (conversion is exact: the scores are those of the scan path).
    const bool convert_tiles = a_.storage != Storage::F32 && !bf16_;
    std::vector<float> converted(convert_tiles ? tile_rows * d : 0);
    std::vector<uint32_t> hits(kTileQueries);
    // float32 products: the queries packed once, for every tile, where the level has a
    // packed batch (blocks of 6 rows; dot_rows_batch's take 4) and a query block fills
    // its panels of 16 well enough (fills_panels); both give the same bits.
    const bool packed = !bf16_ && kern_.dot_packed_batch != nullptr &&
                        fills_panels(std::min(kTileQueries, q1 - q0));
    std::vector<float> packed_queries(packed ? packed_query_floats(q1 - q0, d) : 0);
    if (packed) kern_.pack_queries(a_.queries + q0 * a_.query_stride, a_.query_stride, q1 - q0, d,
                                   packed_queries.data());

    for (size_t jc = j0; jc < j1; jc += tile_rows) {
      const size_t nc = std::min(tile_rows, j1 - jc);
      if (bf16_) {  // bf16 rows are multiplied as stored
        for (size_t qb = q0; qb < q1; qb += kTileQueries) {
          const size_t nqb = std::min(kTileQueries, q1 - qb);
          bf16_->dot_rows_batch(bf16_queries_, qb, nqb, static_cast<const uint16_t*>(corpus_row(jc)),
                                a_.corpus_stride, nc, d, tile.data(), ld_tile);
          select_from_tile(tile.data(), ld_tile, nc, jc, qb, nqb, qb - q0, hits.data(), top);
        }
        continue;
      }
      const float* x;
      size_t ldx;
      if (!convert_tiles) {
        x = static_cast<const float*>(corpus_row(jc));
        ldx = a_.corpus_stride;
      } else {
        kern_.to_f32[static_cast<int>(a_.storage)](corpus_row(jc), a_.corpus_stride, nc, d,
                                                    converted.data());
        x = converted.data();
        ldx = d;
      }
      for (size_t qb = q0; qb < q1; qb += kTileQueries) {
        const size_t nqb = std::min(kTileQueries, q1 - qb);
        const bool packed_block = packed && fills_panels(nqb);
        const size_t row_block = packed_block ? 6 : 4;
        // Rows in pieces that stay in L1 while every query of the block passes over them.
        const size_t l1_rows = std::max<size_t>(
            row_block, kScanBlockBytes / (d * sizeof(float)) / row_block * row_block);
        for (size_t r0 = 0; r0 < nc; r0 += l1_rows) {
          // The first block of queries reads the tile from memory: request the next piece
          // into L2 while this one is multiplied (the later blocks find the tile there).
          if (qb == q0 && !convert_tiles) prefetch_rows(jc + r0 + l1_rows, std::min(jc + r0 + 2 * l1_rows, j1));
          const size_t rows = std::min(l1_rows, nc - r0);
          if (packed_block)  // a block of kTileQueries (a multiple of 16) starts a panel
            kern_.dot_packed_batch(packed_queries.data() + packed_query_floats(qb - q0, d), nqb,
                                   x + r0 * ldx, ldx, rows, d, tile.data() + r0 * ld_tile, ld_tile);
          else
            kern_.dot_rows_batch(a_.queries + qb * a_.query_stride, a_.query_stride, nqb,
                                 x + r0 * ldx, ldx, rows, d, tile.data() + r0 * ld_tile, ld_tile);
        }
        select_from_tile(tile.data(), ld_tile, nc, jc, qb, nqb, qb - q0, hits.data(), top);
      }
    }
  }

  // Whether nq queries suit the packed batch: two panels of 16 or more (one panel keeps
  // too few sums in flight), filled to at least 7/8 (with more lanes empty, 24 queries
  // say, dot_rows_batch was faster; measured on a Zen 5).
  static bool fills_panels(size_t nq) {
    const size_t lanes = (nq + 15) / 16 * 16;
    return nq >= 32 && (lanes - nq) * 8 <= lanes;
  }

  // A hint to bring rows [r0, r1) of the corpus into L2 (never faults).
  void prefetch_rows(size_t r0, size_t r1) const {
    const size_t row_bytes = a_.d * storage_bytes(a_.storage);
    for (size_t r = r0; r < r1; ++r) {
      const char* row = static_cast<const char*>(corpus_row(r));
      for (size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(row + b, 0, 2);
    }
  }

  // Row r of the tile holds the scores of corpus row jc + r for queries qb.. (top
  // slots slot0..); the SIMD filter compares a whole row with the thresholds.
  void select_from_tile(float* tile, size_t ld_tile, size_t nc, size_t jc, size_t qb, size_t nqb,
                        size_t slot0, uint32_t* hits, TopKBatch& top) {
    for (size_t r = 0; r < nc; ++r) {
      if (!allowed(jc + r)) continue;
      float* row = tile + r * ld_tile;
      if (a_.metric == Metric::L2)
        for (size_t l = 0; l < nqb; ++l) row[l] = finish_score(row[l], qb + l, jc + r);
      const size_t count = kern_.at_least(row, top.thresholds() + slot0, nqb, hits);
      for (size_t h = 0; h < count; ++h) top.push(slot0 + hits[h], row[hits[h]], id_of(jc + r));
    }
  }

  const FlatSearchArgs& a_;
  const DenseKernels& kern_;
  const size_t kk_;  // slots filled by real rows: min(k, n)
  const Bf16Kernels* bf16_;  // null: float32 compute
  bool blocked_ = false;
  std::vector<float> qnorms_;
  Bf16Queries bf16_queries_;
};

void check_args(const FlatSearchArgs& a) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("flat_search: " + what); };
  if (a.k == 0) fail("k must be >= 1");
  if (a.d == 0) fail("d must be >= 1");
  if (a.n > 0 && !a.corpus) fail("corpus is null");
  if (a.nq > 0 && !a.queries) fail("queries is null");
  if (a.corpus_stride < a.d) fail("corpus_stride must be >= d");
  if (a.query_stride < a.d) fail("query_stride must be >= d");
  if (a.metric == Metric::L2 && a.n > 0 && !a.sq_norms) fail("L2 needs sq_norms");
  if (a.nq > 0 && (!a.out_scores || !a.out_ids)) fail("outputs are null");
  if (a.bf16_compute && a.storage != Storage::BF16) fail("bf16 compute needs BF16 storage");
}

}  // namespace

size_t blocked_path_min_batch(SimdLevel level, Storage storage) {
  switch (level) {
    case SimdLevel::Avx512:
      return kBlockedFromBatchAvx512[static_cast<int>(storage)];
    case SimdLevel::Avx2:
      return kBlockedFromBatchAvx2[static_cast<int>(storage)];
    default:
      return kBlockedFromBatchScalar;
  }
}

size_t bf16_blocked_path_min_batch(Bf16Level level) {
  return kBf16BlockedFromBatch[static_cast<int>(level)];
}

void flat_search(const FlatSearchArgs& args) {
  check_args(args);
  FlatSearch(args).run();
}

}  // namespace ragcore
