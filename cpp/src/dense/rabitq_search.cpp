// IVF search over RaBitQ codes: estimate every probed row from its code, keep
// those whose error bound leaves them a chance, re-score those exactly.
//
// Bound rule (the RaBitQ paper's re-ranking): while scanning, the k-th best
// lower bound L is a lower bound of the k-th exact score, so a row whose upper
// bound is below L is dropped at once; the rest are re-scored in order of upper
// bound, stopping at the first whose upper bound is below the k-th exact score.
// Scan kernels: at 1 bit with fast_blocks, 4-bit table look-ups (rabitq_fastscan.h),
// whose quantisation error widens each bound; else the bit-plane kernel (rabitq_scan.h).
// Threads over queries (one query per task, or groups of queries scanned list by list
// for batches): each writes only its own results.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "ragcore/simd/simd.h"
#include "ragcore/dense/kmeans.h"
#include "ragcore/dense/rabitq.h"
#include "ragcore/dense/rabitq_fastscan.h"
#include "ragcore/dense/rabitq_rotation.h"
#include "ragcore/dense/rabitq_scan.h"
#include "ragcore/topk/topk_batch.h"
#include "ragcore/topk/topk_queue.h"
#include "ragcore/util/parallel.h"

namespace ragcore {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kFloatMax = std::numeric_limits<float>::max();
constexpr size_t kScanBlock = 256;  // rows estimated per kernel call
static_assert(kScanBlock % kRabitqFastBlock == 0, "the fast scan estimates whole blocks");
// Batches: queries scanned list by list in groups (search_group) of at most kGroupMax
// (their per-query state, ~20 KB each, stays in memory until the group ends), from
// kGroupMin queries up.
constexpr size_t kGroupMin = 8;
constexpr size_t kGroupMax = 256;
constexpr size_t kPrefetchAhead = 4;  // exact rows requested ahead of their re-scoring

// The best `k` candidates seen, exactly (a heap whose top is the worst kept; the
// comparison as a type, RanksBefore, so that the heap operations inline it).
class KBest {
 public:
  explicit KBest(size_t k) : k_(k) { heap_.reserve(k); }
  float threshold() const { return heap_.size() < k_ ? -kInf : heap_.front().score; }
  void push(float score, int64_t id) {
    const Candidate c{score, id};
    if (heap_.size() < k_) {
      heap_.push_back(c);
      std::push_heap(heap_.begin(), heap_.end(), RanksBefore{});
    } else if (ranks_before(c, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), RanksBefore{});
      heap_.back() = c;
      std::push_heap(heap_.begin(), heap_.end(), RanksBefore{});
    }
  }
  // Best first, padded with (-inf, -1) to k_out.
  void write(float* scores, int64_t* ids, size_t k_out) {
    std::sort(heap_.begin(), heap_.end(), RanksBefore{});
    for (size_t c = 0; c < k_out; ++c) {
      scores[c] = c < heap_.size() ? heap_[c].score : -kInf;
      ids[c] = c < heap_.size() ? heap_[c].id : kPaddingId;
    }
  }
  const std::vector<Candidate>& items() const { return heap_; }

 private:
  size_t k_;
  std::vector<Candidate> heap_;
};

// Per-query state: rotated query, its look-up tables, candidates.
struct QueryWork {
  std::vector<float> rotated;  // dp
  std::vector<float> tables;   // what the scan kernel reads (see rabitq_scan.h)
  RabitqFastTables fast;       // the fast scan's quantised tables (rabitq_fastscan.h)
  std::vector<uint8_t> laid;   // them in its kernel's layout
  std::vector<uint16_t> sums;  // kScanBlock: a block's quantised sums
  std::vector<uint32_t> survivors;  // kScanBlock: rows of a block left by bound_survivors
  std::vector<float> dots;     // kScanBlock: <x_j, P q> of a block
  std::vector<float> est;      // kScanBlock: the block's estimates
  std::vector<float> width;    // kScanBlock: their error bounds times epsilon
  std::vector<Candidate> candidates;
  std::vector<float> centre_dots;  // nlist: <q, c_l>
  std::vector<uint32_t> probes;    // nlist: list numbers, nearest first (the first probes_ sorted)
};

class RabitqSearch {
 public:
  explicit RabitqSearch(const RabitqSearchArgs& a)
      : a_(a),
        level_(best_simd_level()),
        kern_(dense_kernels(level_)),
        scan_(rabitq_scan_kernel(a.simd_level < 0 ? best_simd_level()
                                                  : static_cast<SimdLevel>(a.simd_level))),
        fast_(rabitq_fast_kernel(a.simd_level < 0 ? best_simd_level()
                                                  : static_cast<SimdLevel>(a.simd_level))),
        row_bytes_(rabitq_row_bytes(a.dp, a.bits)),
        half_(0.5f * static_cast<float>((1u << a.bits) - 1)),
        probes_(a.allow.active() ? a.nlist : a.nprobe) {
    if (a.fast_blocks) rabitq_fast_block_starts(a.list_offsets, a.nlist, block_starts_);
  }

  void run() {
    if (a_.nq == 0) return;
    const int threads = a_.nq == 1 ? 1
                                   : static_cast<int>(std::min<size_t>(
                                         static_cast<size_t>(resolve_threads(a_.n_threads)), a_.nq));
    std::atomic<uint64_t> scanned{0}, rescored{0};
    if (a_.nq >= kGroupMin && !a_.allow.active() && a_.rescore != RabitqRescore::All) {
      // Groups of queries that share the loads of the blocks they probe (search_group):
      // four a thread, taken as threads free up (a core slowed by other work takes fewer).
      const size_t want = std::max<size_t>(1, a_.nq / (4 * static_cast<size_t>(threads)));
      const size_t per = std::min(kGroupMax, std::max(kGroupMin, want));
      const size_t groups = (a_.nq + per - 1) / per;
      std::vector<std::vector<QueryWork>> work(threads);
      auto group = [&](size_t t, int w) {
        uint64_t s = 0, r = 0;
        const size_t q0 = t * per, q1 = std::min(a_.nq, q0 + per);
        if (q0 < q1) search_group(q0, q1, work[w], s, r);
        scanned += s;
        rescored += r;
      };
      if (threads == 1) {
        for (size_t t = 0; t < groups; ++t) group(t, 0);
      } else {
        parallel_for(groups, threads, group);
      }
    } else {
      std::vector<QueryWork> work(threads);
      auto one = [&](size_t i, int w) {
        uint64_t s = 0, r = 0;
        search_one(i, work[w], s, r);
        scanned += s;
        rescored += r;
      };
      // One thread runs inline (parallel_for would ask the hardware's thread count).
      if (threads == 1) {
        for (size_t i = 0; i < a_.nq; ++i) one(i, 0);
      } else {
        parallel_for(a_.nq, threads, one);
      }
    }
    if (a_.stats) {
      a_.stats->scanned = scanned;
      a_.stats->rescored = rescored;
    }
  }

  // Estimates and bounds (epsilon 1) of every row of list l for query q.
  void estimates(const float* q, size_t l, float* est, float* err) const {
    QueryWork w;
    prepare(q, w);
    const float qn = query_sq_norm(q);
    nearest_lists(q, w);
    const ListTerms t = list_terms(qn, l, centring(w), w);
    const size_t j0 = a_.list_offsets[l], j1 = a_.list_offsets[l + 1];
    for (size_t jb = j0; jb < j1; jb += kScanBlock) {
      const size_t rows = std::min(kScanBlock, j1 - jb);
      estimate(l, jb, rows, t, qn, 1.0f, w);
      std::copy(w.est.begin(), w.est.begin() + rows, est + (jb - j0));
      std::copy(w.width.begin(), w.width.begin() + rows, err + (jb - j0));
    }
  }

 private:
  struct ListTerms {
    float cq;       // <c_l, q>
    float qc_norm;  // |q - c_l|
    float centre;   // -(2^bits - 1) / 2 * sum(P q): the centring of the grid
  };

  const float* query(size_t i) const { return a_.queries + i * a_.query_stride; }
  // Copied out: a row's factors follow bits * dp / 8 code bytes, so they are not
  // float-aligned for every bits and dp (a cast would be undefined behaviour).
  std::array<float, kRabitqFactors> factors(size_t j) const {
    std::array<float, kRabitqFactors> f;
    std::memcpy(f.data(), a_.rows + j * row_bytes_ + a_.bits * a_.dp / 8, sizeof(f));
    return f;
  }
  float query_sq_norm(const float* q) const {
    float qn = 0.0f;
    row_sq_norms(q, 1, a_.d, &qn);
    return qn;
  }

  // w.centre_dots: <q, c_l> for every list; w.probes: the lists nearest first by squared
  // L2 to the centroid (as vectors were assigned), ties by list number: the first
  // probes_ of them. One dot_rows pass, per query, in the query's own thread.
  void nearest_lists(const float* q, QueryWork& w) const {
    w.centre_dots.resize(a_.nlist);
    kern_.dot_rows[static_cast<int>(Storage::F32)](q, a_.centroids, a_.d, a_.nlist, a_.d,
                                                   w.centre_dots.data());
    w.probes.resize(a_.nlist);
    std::iota(w.probes.begin(), w.probes.end(), 0u);
    const float* dots = w.centre_dots.data();
    const float* norms = a_.centroid_sq_norms;
    // -|q - c|^2 + |q|^2: the query's norm does not change the order.
    auto nearer = [&](uint32_t x, uint32_t y) {
      const float sx = 2.0f * dots[x] - norms[x], sy = 2.0f * dots[y] - norms[y];
      return sx > sy || (sx == sy && x < y);
    };
    std::partial_sort(w.probes.begin(), w.probes.begin() + probes_, w.probes.end(), nearer);
  }

  // Rotated query (P q) and the scan kernel's tables of it.
  void prepare(const float* q, QueryWork& w) const {
    w.rotated.resize(a_.dp);
    w.dots.resize(kScanBlock);
    w.est.resize(kScanBlock);
    w.width.resize(kScanBlock);
    w.survivors.resize(kScanBlock);
    if (a_.rotation_signs) {
      rabitq_fht_rotate_one(a_.rotation_signs, a_.rotation_rounds, a_.d, a_.dp, q,
                            w.rotated.data(), level_);
    } else {
      kern_.dot_rows[static_cast<int>(Storage::F32)](q, a_.rotation, a_.d, a_.dp, a_.d,
                                                     w.rotated.data());
    }
    if (a_.fast_blocks) {
      w.sums.resize(kScanBlock);
      rabitq_fast_tables(w.rotated.data(), a_.dp, w.fast);
      fast_.layout(w.fast.luts.data(), a_.dp, w.laid);
    } else {
      scan_.tables(w.rotated.data(), a_.dp, a_.bits, w.tables);
    }
  }

  // <y, P q> = <x, P q> - (2^bits - 1) / 2 * sum(P q): the second term.
  float centring(const QueryWork& w) const {
    float sum = 0.0f;
    for (float v : w.rotated) sum += v;
    return -half_ * sum;
  }

  ListTerms list_terms(float qn, size_t l, float centre, const QueryWork& w) const {
    const float cq = w.centre_dots[l];
    const double qc2 = static_cast<double>(qn) - 2.0 * cq + a_.centroid_sq_norms[l];
    return {cq, static_cast<float>(std::sqrt(std::max(qc2, 0.0))), centre};
  }

  // The metric's estimates (w.est) and error bounds times eps (w.width) of rows
  // [j0, j0 + rows) from their dot products w.dots: one branch-free pass per block.
  void estimate_block(size_t j0, size_t rows, const ListTerms& t, float qn, float eps,
                      QueryWork& w) const {
    const bool l2 = a_.metric == Metric::L2;
    const float width = (l2 ? 2.0f : 1.0f) * eps * t.qc_norm;
    for (size_t r = 0; r < rows; ++r) {
      const auto f = factors(j0 + r);
      const float ip = t.cq + f[0] + f[1] * (w.dots[r] + t.centre);
      w.est[r] = l2 ? 2.0f * ip - a_.sq_norms[j0 + r] - qn : ip;
      w.width[r] = width * f[2];
    }
  }

  // The fast scan's estimates of rows [j0, j0 + rows) of list l (j0 - the list's first
  // row a multiple of kScanBlock): its sums are <x, P q> up to max_error, which widens
  // each bound by f_scale times it (the estimate is linear in <x, P q>).
  void estimate_fast(size_t l, size_t j0, size_t rows, const ListTerms& t, float qn, float eps,
                     QueryWork& w) const {
    const size_t first = static_cast<size_t>(block_starts_[l]) +
                         (j0 - static_cast<size_t>(a_.list_offsets[l])) / kRabitqFastBlock;
    const size_t blocks = rabitq_fast_blocks(rows);
    const uint8_t* at = a_.fast_blocks + first * rabitq_fast_block_bytes(a_.dp);
    fast_.sums(at, blocks, a_.dp, w.laid.data(), w.sums.data());
    const bool l2 = a_.metric == Metric::L2;
    const float times = l2 ? 2.0f : 1.0f;
    const RabitqFastTerms terms{t.cq, w.fast.bias + t.centre, w.fast.delta, times * eps * t.qc_norm,
                                times * w.fast.max_error};
    fast_.estimates(at, blocks, a_.dp, w.sums.data(), terms, w.est.data(), w.width.data());
    if (l2)
      for (size_t r = 0; r < rows; ++r) w.est[r] = 2.0f * w.est[r] - a_.sq_norms[j0 + r] - qn;
  }

  // w.est and w.width of rows [j0, j0 + rows) of list l, by whichever kernel the index has.
  void estimate(size_t l, size_t j0, size_t rows, const ListTerms& t, float qn, float eps,
                QueryWork& w) const {
    if (a_.fast_blocks) return estimate_fast(l, j0, rows, t, qn, eps, w);
    scan_.scan(a_.rows + j0 * row_bytes_, row_bytes_, rows, a_.dp, a_.bits, w.tables.data(),
               w.dots.data());
    estimate_block(j0, rows, t, qn, eps, w);
  }

  // The rows of a block that the Bound rule must look at: all but those whose bounds are
  // finite and whose upper bound is below floor (the k-th lower bound when the block
  // began: it only rises, so no row skipped here could enter later). Branch-free: most
  // rows are skipped, and a branch per row would be mispredicted at every survivor.
  static size_t bound_survivors(const float* est, const float* width, size_t rows, float floor,
                                uint32_t* out) {
    size_t n = 0;
    for (size_t r = 0; r < rows; ++r) {
      out[n] = static_cast<uint32_t>(r);
      const float upper = est[r] + width[r], lower = est[r] - width[r];
      n += !(upper < floor && lower >= -kFloatMax);
    }
    return n;
  }

  // Candidates' exact rows are scattered: requested a few candidates ahead, their
  // cache misses overlap instead of queueing one row at a time.
  void prefetch_row(int64_t j) const {
    const char* p = reinterpret_cast<const char*>(a_.exact_rows + static_cast<size_t>(j) * a_.d);
    for (size_t b = 0; b < a_.d * sizeof(float); b += 64) __builtin_prefetch(p + b);
  }

  float exact_score(const float* q, float qn, size_t j) const {
    float dot;
    kern_.dot_rows[static_cast<int>(Storage::F32)](q, a_.exact_rows + j * a_.d, a_.d, 1, a_.d, &dot);
    return a_.metric == Metric::L2 ? 2.0f * dot - a_.sq_norms[j] - qn : dot;
  }

  // One query's search across the lists it probes: its candidates, and the counts.
  struct QueryRun {
    QueryRun(size_t keep, size_t k) : ranked(keep), exact(k) {}
    const float* q = nullptr;
    float qn = 0.0f, centre = 0.0f;
    size_t seen = 0;  // rows scanned (allowed ones)
    uint64_t rescored = 0;
    KBest ranked;  // Bound: lower bounds; Count: estimates
    KBest exact;
  };

  size_t keep() const {
    const size_t keep = a_.rescore == RabitqRescore::Count
                            ? (a_.rescore_count > a_.n / a_.k ? a_.n : a_.rescore_count * a_.k)
                            : a_.k;
    return std::max<size_t>(keep, 1);
  }

  // The query's rotation, tables and nearest lists.
  void start(size_t i, QueryRun& s, QueryWork& w) const {
    s.q = query(i);
    s.qn = query_sq_norm(s.q);
    const bool all = a_.rescore == RabitqRescore::All;
    if (!all) prepare(s.q, w);
    s.centre = all ? 0.0f : centring(w);
    w.candidates.clear();
    nearest_lists(s.q, w);
  }

  // Rows [jb, jb + rows) of list l (terms t) offered to the query's candidates.
  void scan_rows(QueryRun& s, QueryWork& w, size_t l, size_t jb, size_t rows, const ListTerms& t) const {
    const bool all = a_.rescore == RabitqRescore::All, count = a_.rescore == RabitqRescore::Count;
    const bool filtered = a_.allow.active();
    const int64_t* ids = a_.ids;
    KBest& ranked = s.ranked;
    if (!all) estimate(l, jb, rows, t, s.qn, a_.epsilon, w);
    // Locals, not members: the pushes below could alias them, and this loop runs per row.
    const float* est_of = w.est.data();
    const float* width_of = w.width.data();
    float floor = ranked.threshold();  // Bound: the k-th lower bound, refreshed after a push
    size_t n_rows = rows;
    const uint32_t* order = nullptr;  // the rows to look at (null: all)
    if (!all && !count && !filtered) {
      n_rows = bound_survivors(est_of, width_of, rows, floor, w.survivors.data());
      order = w.survivors.data();
      s.seen += rows;
    }
    for (size_t o = 0; o < n_rows; ++o) {
      const size_t rr = order ? order[o] : o;
      const size_t j = jb + rr;
      if (!order) {  // (survivors: no filter, counted above)
        if (filtered && !a_.allow.allows(j, ids[j])) continue;
        ++s.seen;
        if (all) {
          s.exact.push(exact_score(s.q, s.qn, j), ids[j]);
          ++s.rescored;
          continue;
        }
      }
      float est = est_of[rr], upper = est + width_of[rr], lower = est - width_of[rr];
      // Most rows: both bounds finite, the upper one below the k-th lower bound.
      if (!count && upper < floor && lower >= -kFloatMax) continue;
      // Factors of a crafted file can overflow: such a row is re-scored, never ranked by NaN.
      if (!(std::fabs(upper) <= kFloatMax && std::fabs(lower) <= kFloatMax))
        est = upper = kInf, lower = -kInf;
      if (count) {
        ranked.push(est, static_cast<int64_t>(j));
        continue;
      }
      if (upper < floor) continue;  // then so is lower
      ranked.push(lower, static_cast<int64_t>(j));
      floor = ranked.threshold();
      if (upper >= floor) w.candidates.push_back({upper, static_cast<int64_t>(j)});
    }
  }

  // The exact re-scoring of the candidates, and the query's results.
  void finish(size_t i, QueryRun& s, QueryWork& w) const {
    KBest& exact = s.exact;
    if (a_.rescore == RabitqRescore::Count) {
      const std::vector<Candidate>& cands = s.ranked.items();
      for (size_t c = 0; c < cands.size(); ++c) {
        if (c + kPrefetchAhead < cands.size()) prefetch_row(cands[c + kPrefetchAhead].id);
        exact.push(exact_score(s.q, s.qn, static_cast<size_t>(cands[c].id)), a_.ids[cands[c].id]);
        ++s.rescored;
      }
    } else if (a_.rescore == RabitqRescore::Bound) {
      const float floor = s.ranked.threshold();
      auto& cands = w.candidates;
      cands.erase(std::remove_if(cands.begin(), cands.end(),
                                 [&](const Candidate& c) { return c.score < floor; }),
                  cands.end());
      std::sort(cands.begin(), cands.end(), RanksBefore{});
      for (size_t c = 0; c < std::min(kPrefetchAhead, cands.size()); ++c) prefetch_row(cands[c].id);
      for (size_t c = 0; c < cands.size(); ++c) {
        if (cands[c].score < exact.threshold()) break;  // no later candidate can enter either
        if (c + kPrefetchAhead < cands.size()) prefetch_row(cands[c + kPrefetchAhead].id);
        exact.push(exact_score(s.q, s.qn, static_cast<size_t>(cands[c].id)), a_.ids[cands[c].id]);
        ++s.rescored;
      }
    }
    exact.write(a_.out_scores + i * a_.k, a_.out_ids + i * a_.k, a_.k);
  }

  void search_one(size_t i, QueryWork& w, uint64_t& scanned, uint64_t& rescored) const {
    QueryRun s(keep(), a_.k);
    start(i, s, w);
    for (size_t r = 0; r < probes_; ++r) {
      if (r >= a_.nprobe && s.seen >= a_.k) break;
      const size_t l = w.probes[r];
      const size_t j0 = a_.list_offsets[l], j1 = a_.list_offsets[l + 1];
      if (j0 == j1) continue;
      const ListTerms t = list_terms(s.qn, l, s.centre, w);
      for (size_t jb = j0; jb < j1; jb += kScanBlock) scan_rows(s, w, l, jb, std::min(kScanBlock, j1 - jb), t);
    }
    finish(i, s, w);
    scanned += s.seen;
    rescored += s.rescored;
  }

  // Queries [q0, q1) list by list: each block of a list is scanned for every query of
  // the group that probes it while the block is in cache (a query alone reads every
  // block from memory). The lists' order does not change any query's result: its
  // candidates are those the bound leaves after all its lists (see search_one).
  // No filter (a filtered query may probe further lists: search_one).
  void search_group(size_t q0, size_t q1, std::vector<QueryWork>& work, uint64_t& scanned,
                    uint64_t& rescored) const {
    const size_t g = q1 - q0;
    if (work.size() < g) work.resize(g);
    std::vector<QueryRun> runs(g, QueryRun(keep(), a_.k));
    // by_list[at[l] .. at[l + 1]): the queries (of the group) probing list l.
    std::vector<uint32_t> at(a_.nlist + 1, 0), by_list(g * a_.nprobe);
    for (size_t i = 0; i < g; ++i) {
      start(q0 + i, runs[i], work[i]);
      for (size_t r = 0; r < a_.nprobe; ++r) ++at[work[i].probes[r] + 1];
    }
    for (size_t l = 0; l < a_.nlist; ++l) at[l + 1] += at[l];
    std::vector<uint32_t> fill(at.begin(), at.end() - 1);
    for (size_t i = 0; i < g; ++i)
      for (size_t r = 0; r < a_.nprobe; ++r) by_list[fill[work[i].probes[r]]++] = static_cast<uint32_t>(i);
    std::vector<ListTerms> terms;
    for (size_t l = 0; l < a_.nlist; ++l) {
      const size_t j0 = a_.list_offsets[l], j1 = a_.list_offsets[l + 1];
      if (j0 == j1 || at[l] == at[l + 1]) continue;
      terms.clear();
      for (size_t p = at[l]; p < at[l + 1]; ++p) {
        const size_t i = by_list[p];
        terms.push_back(list_terms(runs[i].qn, l, runs[i].centre, work[i]));
      }
      for (size_t jb = j0; jb < j1; jb += kScanBlock)
        for (size_t p = at[l]; p < at[l + 1]; ++p) {
          const size_t i = by_list[p];
          scan_rows(runs[i], work[i], l, jb, std::min(kScanBlock, j1 - jb), terms[p - at[l]]);
        }
    }
    for (size_t i = 0; i < g; ++i) {
      finish(q0 + i, runs[i], work[i]);
      scanned += runs[i].seen;
      rescored += runs[i].rescored;
    }
  }

  const RabitqSearchArgs& a_;
  const SimdLevel level_;
  const DenseKernels& kern_;
  const RabitqScanKernel& scan_;
  const RabitqFastScanKernel& fast_;
  std::vector<int64_t> block_starts_;  // fast scan: each list's first block
  const size_t row_bytes_;
  const float half_;
  const size_t probes_;
};

void check_args(const RabitqSearchArgs& a) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("rabitq_ivf_search: " + what); };
  if (a.k == 0) fail("k must be >= 1");
  if (a.d == 0 || a.dp != rabitq_padded_dim(a.d)) fail("dp must be d rounded up to a multiple of 8");
  if (a.bits < 1 || a.bits > 8) fail("bits must be in [1, 8]");
  if (a.nlist == 0 || !a.centroids || !a.centroid_sq_norms || !a.list_offsets ||
      !(a.rotation || (a.rotation_signs && a.rotation_rounds > 0)))
    fail("the index is not trained (no centroids or rotation)");
  if (a.nprobe < 1 || a.nprobe > a.nlist)
    fail("nprobe must be in [1, nlist = " + std::to_string(a.nlist) + "], got " + std::to_string(a.nprobe));
  if (a.list_offsets[0] != 0 || static_cast<size_t>(a.list_offsets[a.nlist]) != a.n)
    fail("list_offsets must run from 0 to n");
  for (size_t l = 0; l < a.nlist; ++l)
    if (a.list_offsets[l + 1] < a.list_offsets[l]) fail("list_offsets must be non-decreasing");
  if (a.n > 0 && (!a.rows || !a.ids || !a.exact_rows)) fail("rows, ids or exact_rows is null");
  if (a.metric == Metric::L2 && a.n > 0 && !a.sq_norms) fail("L2 needs sq_norms");
  if (a.rescore == RabitqRescore::Count && a.rescore_count == 0) fail("rescore_count must be >= 1");
  if (a.rescore == RabitqRescore::Bound && !(a.epsilon >= 0.0f)) fail("epsilon must be >= 0");
  if (a.nq > 0 && (!a.queries || a.query_stride < a.d)) fail("queries null or query_stride < d");
  if (a.nq > 0 && (!a.out_scores || !a.out_ids)) fail("outputs are null");
  if (a.fast_blocks) {
    if (a.bits != 1 || a.dp > kRabitqFastMaxDim) fail("fast_blocks need bits 1 and dp <= 1024");
    std::vector<int64_t> starts;
    const size_t blocks = rabitq_fast_block_starts(a.list_offsets, a.nlist, starts);
    if (a.fast_bytes != blocks * rabitq_fast_block_bytes(a.dp))
      fail("fast_blocks must be rabitq_fast_pack of the rows (" +
           std::to_string(blocks * rabitq_fast_block_bytes(a.dp)) + " bytes)");
  }
}

}  // namespace

void rabitq_ivf_search(const RabitqSearchArgs& args) {
  check_args(args);
  RabitqSearch(args).run();
}

void rabitq_estimates(const RabitqSearchArgs& args, const float* query, size_t list, float* est,
                      float* err) {
  RabitqSearchArgs a = args;
  a.nq = 0;  // no result arrays: the estimates are the output
  check_args(a);
  if (list >= a.nlist) throw std::invalid_argument("rabitq_estimates: list outside [0, nlist)");
  RabitqSearch(a).estimates(query, list, est, err);
}

}  // namespace ragcore
