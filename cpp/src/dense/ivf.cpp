#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "ragcore/dense/ivf.h"
#include "ragcore/dense/flat.h"
#include "ivf_lists.h"
#include "ragcore/dense/kmeans.h"
#include "ragcore/util/parallel.h"
#include "ragcore/topk/topk_batch.h"

namespace ragcore {
namespace {

// Rows per scan block, sized so a block stays in L1 while every query of the
// batch that probes the list is scored against it.
constexpr size_t kScanBlockBytes = 32 * 1024;
constexpr size_t kMaxBlockRows = 1024;  // bounds the score buffer for tiny rows
// Queries gathered per blocked call: with a piece of the list they fill the L2.
constexpr size_t kBlockedQueries = 256;
// bf16 compute: rows per call of the bf16 kernel (FlatIndex's tile).
constexpr size_t kBf16TileRows = 240;
// Below this many multiply-adds per thread a call runs on fewer threads. Higher
// than FlatIndex's: probed lists are scattered in memory and a batch-1 search
// is short, so a second thread's start and merge cost more than it saves.
constexpr double kMinWorkPerThread = 4e6;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// rescore * k candidates for SQ8 (k otherwise), at most n; the product saturates
// instead of wrapping (rescore = 2**62 keeps every row, not a few).
size_t candidates_kept(const IvfSearchArgs& a) {
  const size_t factor = a.storage == Storage::SQ8 ? a.rescore : 1;
  if (a.k != 0 && factor > a.n / a.k) return a.n;
  return std::min(factor * a.k, a.n);
}

class IvfSearch {
 public:
  explicit IvfSearch(const IvfSearchArgs& a)
      : a_(a),
        kern_(dense_kernels(a.simd_level < 0 ? best_simd_level()
                                             : static_cast<SimdLevel>(a.simd_level))),
        bf16_(a.bf16_compute ? &bf16_kernels(a.bf16_level < 0
                                                  ? best_bf16_level()
                                                  : static_cast<Bf16Level>(a.bf16_level))
                             : nullptr),
        quantised_(a.storage == Storage::SQ8),
        kk_(candidates_kept(a)),
        probes_(a.allow.active() ? a.nlist : a.nprobe) {}

  void run() {
    IvfStageTimes times;
    if (kk_ == 0 || a_.nq == 0) {  // empty index: all padding
      TopKBatch none(a_.nq, 1);
      for (size_t i = 0; i < a_.nq; ++i) none.finish(i, out_scores(i), out_ids(i), a_.k);
      if (a_.stages) *a_.stages = times;
      return;
    }
    auto t0 = Clock::now();
    prepare_queries();
    choose_lists();
    times.coarse = seconds_since(t0);

    t0 = Clock::now();
    TopKBatch top(a_.nq, kk_);
    std::vector<size_t> seen(a_.nq, 0);  // allowed rows scanned per query (filter only)
    scan_probed_lists(top, seen);
    if (a_.allow.active()) probe_further(top, seen);
    times.scan = seconds_since(t0);

    t0 = Clock::now();
    write_results(top);
    times.rescore = seconds_since(t0);
    if (a_.stages) *a_.stages = times;
  }

 private:
  float* out_scores(size_t i) const { return a_.out_scores + i * a_.k; }
  int64_t* out_ids(size_t i) const { return a_.out_ids + i * a_.k; }
  const float* query(size_t i) const { return a_.queries + i * a_.query_stride; }
  size_t row_bytes() const { return a_.d * storage_bytes(a_.storage); }
  const void* row(size_t j) const { return static_cast<const unsigned char*>(a_.rows) + j * row_bytes(); }
  size_t list_begin(size_t l) const { return static_cast<size_t>(a_.list_offsets[l]); }
  size_t list_end(size_t l) const { return static_cast<size_t>(a_.list_offsets[l + 1]); }

  int threads_for(double multiply_adds) const {
    // Work for one thread runs inline without asking how many cores there are
    // (hardware_concurrency costs microseconds: the single-query path pays it).
    if (multiply_adds < 2 * kMinWorkPerThread) return 1;
    const int most = resolve_threads(a_.n_threads);
    return static_cast<int>(std::max(1.0, std::min<double>(most, multiply_adds / kMinWorkPerThread)));
  }

  // ---- setup -------------------------------------------------------------

  // Query norms (L2) and, for SQ8 codes, queries with the scale folded in plus
  // their constant term <q, code_min>, so the scan is one dot product per row.
  void prepare_queries() {
    if (a_.metric == Metric::L2) {
      qnorms_.resize(a_.nq);
      for (size_t i = 0; i < a_.nq; ++i) row_sq_norms(query(i), 1, a_.d, &qnorms_[i]);
    }
    if (bf16_ && bf16_->level != Bf16Level::Amx)
      bf16_all_ = prepare_bf16_queries(bf16_->level, a_.queries, a_.query_stride, a_.nq, a_.d);
    if (!quantised_) return;
    scaled_.resize(a_.nq * a_.d);
    offset_.resize(a_.nq);
    for (size_t i = 0; i < a_.nq; ++i) {
      const float* q = query(i);
      float offset = 0.0f;
      for (size_t p = 0; p < a_.d; ++p) {
        scaled_[i * a_.d + p] = q[p] * a_.code_scale[p];
        offset += q[p] * a_.code_min[p];
      }
      offset_[i] = offset;
    }
  }

  // A probe is a list number only if the coarse search found one: a centroid
  // distance that is NaN (which validation should have made impossible) leaves
  // padding (-1) instead, and that is skipped, never indexed.
  bool valid_probe(size_t i, size_t r) const { return valid_list(probe_[i * probes_ + r], a_.nlist); }

  // probe_[i * probes_ + r]: the r-th nearest list of query i.
  void choose_lists() {
    probe_.resize(a_.nq * probes_);
    coarse_probes(a_.centroids, a_.centroid_sq_norms, a_.nlist, a_.d, a_.queries, a_.nq,
                  a_.query_stride, probes_, threads_for(static_cast<double>(a_.nq) * a_.nlist * a_.d),
                  a_.simd_level, probe_.data());
  }

  // ---- scan --------------------------------------------------------------

  // The first nprobe probes of every query, grouped by list: each list is read
  // once for all its queries; the lists are shared among the threads, each
  // keeping candidates for every query, merged at the end.
  void scan_probed_lists(TopKBatch& top, std::vector<size_t>& seen) {
    const QueriesByList by_list(probe_.data(), a_.nq, probes_, a_.nprobe, a_.nlist);
    const std::vector<size_t>& start = by_list.start;

    std::vector<size_t> tasks;
    double work = 0.0;
    for (size_t l = 0; l < a_.nlist; ++l) {
      const size_t queries = start[l + 1] - start[l];
      if (queries == 0 || list_end(l) == list_begin(l)) continue;
      tasks.push_back(l);
      work += static_cast<double>(queries) * (list_end(l) - list_begin(l)) * a_.d;
    }
    // Largest lists first, so that no thread is left with a big one at the end.
    auto cost = [&](size_t l) { return (start[l + 1] - start[l]) * (list_end(l) - list_begin(l)); };
    std::stable_sort(tasks.begin(), tasks.end(), [&](size_t x, size_t y) { return cost(x) > cost(y); });

    const int threads = threads_for(work);
    if (threads == 1) {
      for (size_t l : tasks)
        scan_list(l, by_list.of(l), start[l + 1] - start[l], top, seen.data());
      return;
    }
    std::vector<TopKBatch> per_worker;
    std::vector<std::vector<size_t>> seen_per_worker(threads, std::vector<size_t>(a_.nq, 0));
    per_worker.reserve(threads);
    for (int w = 0; w < threads; ++w) per_worker.emplace_back(a_.nq, kk_);
    parallel_for(tasks.size(), threads, [&](size_t t, int w) {
      const size_t l = tasks[t];
      scan_list(l, by_list.of(l), start[l + 1] - start[l], per_worker[w],
                seen_per_worker[w].data());
    });
    for (size_t i = 0; i < a_.nq; ++i)
      for (int w = 0; w < threads; ++w) {
        top.merge_from(per_worker[w], i, i);
        seen[i] += seen_per_worker[w][i];
      }
  }

  // Filtered search: a query that has seen fewer than k allowed rows scans its
  // next-nearest lists, one at a time, until it has k or has scanned them all.
  void probe_further(TopKBatch& top, std::vector<size_t>& seen) {
    std::vector<uint32_t> short_of_k;
    for (size_t i = 0; i < a_.nq; ++i)
      if (seen[i] < a_.k) short_of_k.push_back(static_cast<uint32_t>(i));
    // Each task writes only its own query's slot of `top` and `seen`.
    parallel_for(short_of_k.size(), threads_for(static_cast<double>(short_of_k.size()) * a_.n * a_.d),
                 [&](size_t t, int) {
                   const uint32_t i = short_of_k[t];
                   for (size_t r = a_.nprobe; r < probes_ && seen[i] < a_.k; ++r)
                     if (valid_probe(i, r)) scan_list(probe_[i * probes_ + r], &i, 1, top, seen.data());
                 });
  }

  // Scores rows of list l against the queries qs[0..count) and offers them to top.
  void scan_list(size_t l, const uint32_t* qs, size_t count, TopKBatch& top, size_t* seen) const {
    const size_t j0 = list_begin(l), j1 = list_end(l);
    if (a_.allow.active()) {
      size_t allowed = 0;
      for (size_t j = j0; j < j1; ++j) allowed += a_.allow.allows(j, a_.ids[j]);
      for (size_t c = 0; c < count; ++c) seen[qs[c]] += allowed;
      if (allowed == 0) return;
    }
    // bf16 compute: one kernel whatever the count, so a query's scores do not depend on it.
    // Many queries probe this list: FlatIndex's blocked kernel, from FlatIndex's crossover
    // (sq8 codes are converted piece by piece, as fp16 rows are).
    const Storage crossover_of = quantised_ ? Storage::F16 : a_.storage;
    if (bf16_ || count >= blocked_path_min_batch(kern_.level, crossover_of)) {
      scan_list_blocked(j0, j1, qs, count, top);
      return;
    }
    // One query: no reuse to keep in L1, so the longest calls (fewest tails).
    const size_t block = count == 1 ? kMaxBlockRows
                                    : std::clamp<size_t>(kScanBlockBytes / row_bytes(), 16, kMaxBlockRows);
    float scores[kMaxBlockRows];
    auto dot_rows = quantised_ ? kern_.dot_rows_sq8 : kern_.dot_rows[static_cast<int>(a_.storage)];
    // One query for this list: the one-query kernel (the same sums, longer streams).
    if (count == 1 && !quantised_)
      dot_rows = kern_.dot_rows_one_query[static_cast<int>(a_.storage)];
    for (size_t jb = j0; jb < j1; jb += block) {
      const size_t rows = std::min(block, j1 - jb);
      for (size_t c = 0; c < count; ++c) {
        const size_t i = qs[c];
        dot_rows(quantised_ ? &scaled_[i * a_.d] : query(i), row(jb), a_.d, rows, a_.d, scores);
        offer(i, jb, rows, scores, top);
      }
    }
  }

  // Buffers of scan_list_blocked, kept by each thread from list to list (and search to
  // search): allocated per list, they cost more than the products of a small list.
  struct ListScratch {
    std::vector<float> gathered, tile, thresholds, converted;
    std::vector<uint32_t> hits;
    Bf16Queries bf16;
  };

  template <class T>
  static T* at_least_size(std::vector<T>& v, size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
  }

  // scan_list for many queries: the queries gathered into one block, the list in pieces
  // that stay in L1 while the block passes over them, as FlatIndex's blocked path does
  // (dot_rows_batch reduces each pair as dot_rows does: the same scores, bit for bit; sq8
  // codes are converted to their float values, exactly, and the scaled queries gathered).
  // bf16 compute runs here for every count, its rows multiplied as stored in FlatIndex's
  // bf16 tiles (the kernel repacks them).
  void scan_list_blocked(size_t j0, size_t j1, const uint32_t* qs, size_t count,
                         TopKBatch& top) const {
    thread_local ListScratch s;
    const size_t d = a_.d;
    const size_t piece = bf16_ ? kBf16TileRows
                               : std::max<size_t>(4, kScanBlockBytes / (d * sizeof(float)) / 4 * 4);
    const size_t per_call = std::min(count, kBlockedQueries);
    const bool convert = !bf16_ && a_.storage != Storage::F32;  // exact: the scan path's values
    float* tile = at_least_size(s.tile, piece * per_call);
    float* thresholds = at_least_size(s.thresholds, per_call);
    uint32_t* hits = at_least_size(s.hits, per_call);
    float* converted = convert ? at_least_size(s.converted, piece * d) : nullptr;
    for (size_t c0 = 0; c0 < count; c0 += per_call) {
      const size_t nc = std::min(per_call, count - c0);
      for (size_t c = 0; c < nc; ++c) thresholds[c] = top.threshold(qs[c0 + c]);
      const float* gathered = nullptr;
      if (bf16_) {
        gather_bf16_queries(qs + c0, nc, s);
      } else {
        float* q = at_least_size(s.gathered, per_call * d);
        for (size_t c = 0; c < nc; ++c) {
          const size_t i = qs[c0 + c];
          std::memcpy(q + c * d, quantised_ ? &scaled_[i * d] : query(i), d * sizeof(float));
        }
        gathered = q;
      }
      for (size_t jb = j0; jb < j1; jb += piece) {
        const size_t rows = std::min(piece, j1 - jb);
        if (bf16_) {
          bf16_->dot_rows_batch(s.bf16, 0, nc, static_cast<const uint16_t*>(row(jb)), d, rows, d,
                                tile, nc);
        } else {
          const float* x = static_cast<const float*>(row(jb));
          if (convert) {
            if (quantised_) kern_.to_f32_sq8(row(jb), d, rows, d, converted);
            else kern_.to_f32[static_cast<int>(a_.storage)](row(jb), d, rows, d, converted);
            x = converted;
          }
          kern_.dot_rows_batch(gathered, d, nc, x, d, rows, d, tile, nc);
        }
        offer_tile(tile, nc, jb, rows, qs + c0, thresholds, hits, top);
      }
    }
  }

  // s.bf16 = the bf16 queries qs[0..nc): rows of the queries rounded once per search
  // (bf16_all_), copied; the AMX layout interleaves 16 queries, so it is made anew.
  void gather_bf16_queries(const uint32_t* qs, size_t nc, ListScratch& s) const {
    const size_t d = a_.d;
    if (bf16_->level == Bf16Level::Amx) {
      float* q = at_least_size(s.gathered, nc * d);
      for (size_t c = 0; c < nc; ++c) std::memcpy(q + c * d, query(qs[c]), d * sizeof(float));
      s.bf16 = prepare_bf16_queries(bf16_->level, q, d, nc, d);
      return;
    }
    const size_t depth = bf16_all_.depth;
    s.bf16.level = bf16_all_.level;
    s.bf16.nq = nc;
    s.bf16.depth = depth;
    s.bf16.data.resize(nc * depth);
    for (size_t c = 0; c < nc; ++c)
      std::memcpy(&s.bf16.data[c * depth], &bf16_all_.data[qs[c] * depth], depth * sizeof(uint16_t));
  }

  // Offers the tile's rows (tile[r * nc + c]: row jb + r with query qs[c]) to top, as
  // FlatIndex's blocked path does: one SIMD compare of a row's scores with the queries'
  // thresholds (kept in step with top) rejects most of them.
  void offer_tile(float* tile, size_t nc, size_t jb, size_t rows, const uint32_t* qs,
                  float* thresholds, uint32_t* hits, TopKBatch& top) const {
    for (size_t r = 0; r < rows; ++r) {
      const size_t j = jb + r;
      if (a_.allow.active() && !a_.allow.allows(j, a_.ids[j])) continue;
      float* scores = tile + r * nc;
      if (a_.metric == Metric::L2 || quantised_)
        for (size_t c = 0; c < nc; ++c) scores[c] = score(scores[c], qs[c], j);
      const size_t n = kern_.at_least(scores, thresholds, nc, hits);
      for (size_t h = 0; h < n; ++h) {
        const size_t c = hits[h];
        // SQ8 candidates carry their row until re-scoring; others their id.
        top.push(qs[c], scores[c], quantised_ ? static_cast<int64_t>(j) : a_.ids[j]);
        thresholds[c] = top.threshold(qs[c]);
      }
    }
  }

  // Offers rows jb.. (their dot products with query i: scores[0..rows)) to top.
  void offer(size_t i, size_t jb, size_t rows, const float* scores, TopKBatch& top) const {
    float threshold = top.threshold(i);
    for (size_t r = 0; r < rows; ++r) {
      const size_t j = jb + r;
      const float s = score(scores[r], i, j);
      if (s < threshold) continue;  // rejects most rows with one compare
      if (a_.allow.active() && !a_.allow.allows(j, a_.ids[j])) continue;
      // SQ8 candidates carry their row until re-scoring; others their id.
      top.push(i, s, quantised_ ? static_cast<int64_t>(j) : a_.ids[j]);
      threshold = top.threshold(i);
    }
  }

  // The metric's score from a dot product (as FlatIndex computes it).
  float score(float dot, size_t i, size_t j) const {
    if (quantised_) dot += offset_[i];
    return a_.metric == Metric::L2 ? 2.0f * dot - a_.sq_norms[j] - qnorms_[i] : dot;
  }

  // ---- results -----------------------------------------------------------

  void write_results(TopKBatch& top) {
    if (!quantised_) {
      for (size_t i = 0; i < a_.nq; ++i) top.finish(i, out_scores(i), out_ids(i), a_.k);
      return;
    }
    std::vector<float> cand_scores(a_.nq * kk_);
    std::vector<int64_t> cand_rows(a_.nq * kk_);
    for (size_t i = 0; i < a_.nq; ++i)
      top.finish(i, &cand_scores[i * kk_], &cand_rows[i * kk_], kk_);
    const int threads = threads_for(static_cast<double>(a_.nq) * kk_ * a_.d);
    parallel_for(a_.nq, threads, [&](size_t i, int) { rescore(i, &cand_rows[i * kk_]); });
  }

  // Exact scores of query i's candidate rows; the best k are its results.
  void rescore(size_t i, const int64_t* rows) const {
    TopKBatch exact(1, a_.k);
    const auto dot_f32 = kern_.dot_rows[static_cast<int>(Storage::F32)];
    // The candidates' rows are scattered: request them all before the first is
    // used, so their cache misses overlap instead of queueing one row at a time.
    const size_t row_bytes_f32 = a_.d * sizeof(float);
    for (size_t c = 0; c < kk_ && rows[c] != kPaddingId; ++c) {
      const char* p = reinterpret_cast<const char*>(a_.exact_rows + rows[c] * a_.d);
      for (size_t b = 0; b < row_bytes_f32; b += 64) __builtin_prefetch(p + b);
    }
    for (size_t c = 0; c < kk_ && rows[c] != kPaddingId; ++c) {
      const size_t j = static_cast<size_t>(rows[c]);
      float dot;
      dot_f32(query(i), a_.exact_rows + j * a_.d, a_.d, 1, a_.d, &dot);
      const float s = a_.metric == Metric::L2 ? 2.0f * dot - a_.sq_norms[j] - qnorms_[i] : dot;
      exact.push(0, s, a_.ids[j]);
    }
    exact.finish(0, out_scores(i), out_ids(i), a_.k);
  }

  const IvfSearchArgs& a_;
  const DenseKernels& kern_;
  const Bf16Kernels* bf16_;  // null: float32 compute
  const bool quantised_;
  const size_t kk_;      // candidates kept per query during the scan
  const size_t probes_;  // lists ranked per query: nprobe, or all with a filter
  std::vector<float> qnorms_;
  std::vector<float> scaled_;
  std::vector<float> offset_;
  std::vector<int64_t> probe_;
  Bf16Queries bf16_all_;  // bf16 compute: every query rounded once (not for AMX's layout)
};

void check_args(const IvfSearchArgs& a) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("ivf_search: " + what); };
  if (a.k == 0) fail("k must be >= 1");
  if (a.d == 0) fail("d must be >= 1");
  if (a.nlist == 0 || !a.centroids || !a.centroid_sq_norms || !a.list_offsets)
    fail("the index is not trained (no centroids)");
  if (a.nprobe < 1 || a.nprobe > a.nlist)
    fail("nprobe must be in [1, nlist = " + std::to_string(a.nlist) + "], got " + std::to_string(a.nprobe));
  if (a.list_offsets[0] != 0 || static_cast<size_t>(a.list_offsets[a.nlist]) != a.n)
    fail("list_offsets must run from 0 to n");
  for (size_t l = 0; l < a.nlist; ++l)
    if (a.list_offsets[l + 1] < a.list_offsets[l]) fail("list_offsets must be non-decreasing");
  if (a.n > 0 && (!a.rows || !a.ids)) fail("rows or ids is null");
  if (a.metric == Metric::L2 && a.n > 0 && !a.sq_norms) fail("L2 needs sq_norms");
  if (a.storage == Storage::SQ8 && a.n > 0 && (!a.code_min || !a.code_scale || !a.exact_rows))
    fail("SQ8 storage needs code_min, code_scale and exact_rows");
  if (a.storage == Storage::SQ8 && a.rescore == 0) fail("rescore must be >= 1");
  if (a.bf16_compute && a.storage != Storage::BF16) fail("bf16 compute needs BF16 storage");
  if (a.nq > 0 && (!a.queries || a.query_stride < a.d)) fail("queries null or query_stride < d");
  if (a.nq > 0 && (!a.out_scores || !a.out_ids)) fail("outputs are null");
}

}  // namespace

void ivf_search(const IvfSearchArgs& args) {
  check_args(args);
  IvfSearch(args).run();
}

}  // namespace ragcore
