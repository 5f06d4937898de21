#include "ragcore/dense/ivf_pq4.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ivf_lists.h"
#include "ragcore/dense/pq4.h"
#include "ragcore/util/parallel.h"

namespace ragcore {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("IVF-PQ4: " + what); }

// Every list's rows and blocks must agree, so no scan reads outside packed or exact.
void check_layout(const IvfPq4SearchArgs& a) {
  if (a.list_offsets[0] != 0 || a.block_offsets[0] != 0) fail("offsets must start at 0");
  for (size_t l = 0; l < a.nlist; ++l) {
    const int64_t rows = a.list_offsets[l + 1] - a.list_offsets[l];
    const int64_t blocks = a.block_offsets[l + 1] - a.block_offsets[l];
    if (rows < 0 || blocks != (rows + static_cast<int64_t>(kPq4Block) - 1) / static_cast<int64_t>(kPq4Block))
      fail("list " + std::to_string(l) + ": rows and blocks disagree");
  }
  if (static_cast<size_t>(a.list_offsets[a.nlist]) != a.n ||
      static_cast<size_t>(a.block_offsets[a.nlist]) != a.n_blocks)
    fail("offsets must end at n rows and n_blocks blocks");
}

// Up to this many queries the coarse step scores the centroids directly: for a batch
// of one, FlatIndex's search (thread choice, top-k queues, result padding) costs more
// than the dot products themselves.
constexpr size_t kFewQueries = 4;

// The `probes` lists nearest to q (squared L2, ties to the lower list), nearest first.
void nearest_lists(const IvfPq4SearchArgs& a, const DenseKernels& kern, const float* q,
                   size_t probes, int64_t* out) {
  std::vector<float> dots(a.nlist);
  kern.dot_rows[static_cast<int>(Storage::F32)](q, a.centroids, a.d, a.nlist, a.d, dots.data());
  std::vector<std::pair<float, int64_t>> dist(a.nlist);
  for (size_t l = 0; l < a.nlist; ++l) {
    const float v = a.centroid_sq_norms[l] - 2.0f * dots[l];  // + |q|^2, the same for all
    dist[l] = {std::isnan(v) ? std::numeric_limits<float>::infinity() : v, static_cast<int64_t>(l)};
  }
  std::partial_sort(dist.begin(), dist.begin() + probes, dist.end());
  for (size_t r = 0; r < probes; ++r) out[r] = dist[r].second;
}

// From this many queries (without a filter) a search scans list by list (scan_by_list).
constexpr size_t kGroupedQueries = 8;

// A batch without a filter: each thread takes a share of the queries, finds their
// lists (the coarse step, on its own thread: done once for the whole batch before the
// shares, it kept the other threads waiting) and
// scans every list its queries probe once, for all of them at a time (up to 8 per load
// of the codes: pq4_scan_select_many), as faiss's IVF fast scan does for batches. A
// query's candidates are the want smallest (loss, row) keys offered, whatever the order
// of the lists, so the answers are those of the scan query by query, nearest list first;
// and a query's lists do not depend on the batch it is in (coarse_probes).
void scan_by_list(const IvfPq4SearchArgs& a, const Pq4TableMaker& tables, size_t want,
                  int threads, SimdLevel level, const DenseKernels& kern) {
  const size_t lut_bytes = pq4_pairs(a.m) * 2 * 16, pair_bytes = pq4_pairs(a.m) * kPq4Block;
  const size_t shares = static_cast<size_t>(threads);
  parallel_for(shares, threads, [&](size_t s, int) {
    const size_t q0 = s * a.nq / shares, nq = (s + 1) * a.nq / shares - q0;
    std::vector<int64_t> probe(nq * a.nprobe);
    coarse_probes(a.centroids, a.centroid_sq_norms, a.nlist, a.d, a.queries + q0 * a.d, nq, a.d,
                  a.nprobe, 1, a.simd_level, probe.data());
    std::vector<uint8_t> luts(nq * lut_bytes);
    std::vector<Pq4Candidates> candidates(nq, Pq4Candidates(want));
    for (size_t i = 0; i < nq; ++i) tables.luts(a.queries + (q0 + i) * a.d, luts.data() + i * lut_bytes);
    const QueriesByList by_list(probe.data(), nq, a.nprobe, a.nprobe, a.nlist);
    std::vector<const uint8_t*> lut_of;
    std::vector<Pq4Candidates*> out_of;
    for (size_t l = 0; l < a.nlist; ++l) {
      const size_t first = static_cast<size_t>(a.list_offsets[l]);
      const size_t rows = static_cast<size_t>(a.list_offsets[l + 1]) - first;
      if (rows == 0 || by_list.count(l) == 0) continue;
      lut_of.clear();
      out_of.clear();
      for (size_t j = 0; j < by_list.count(l); ++j) {
        lut_of.push_back(luts.data() + by_list.of(l)[j] * lut_bytes);
        out_of.push_back(&candidates[by_list.of(l)[j]]);
      }
      pq4_scan_select_many(a.packed + static_cast<size_t>(a.block_offsets[l]) * pair_bytes, rows, a.m,
                           lut_of.data(), lut_of.size(), static_cast<uint32_t>(first), a.allow,
                           a.ids, out_of.data(), level);
    }
    for (size_t i = 0; i < nq; ++i)
      pq4_rescore(candidates[i].sorted(), a.queries + (q0 + i) * a.d, a.exact, a.sq_norms, a.ids,
                  a.d, a.metric, a.k, kern, a.out_scores + (q0 + i) * a.k, a.out_ids + (q0 + i) * a.k);
  });
}

}  // namespace

void ivf_pq4_search(const IvfPq4SearchArgs& a) {
  if (a.m == 0 || a.m > 256 || a.d == 0 || a.d % a.m) fail("m must divide d and be 1..256");
  if (a.nlist == 0 || a.nprobe == 0 || a.nprobe > a.nlist) fail("nprobe must be 1..nlist");
  if (a.k == 0 || a.rescore == 0) fail("k and rescore must be >= 1");
  if (a.n > std::numeric_limits<uint32_t>::max()) fail("at most 2**32 - 1 vectors");
  if (!a.list_offsets || !a.block_offsets || !a.centroids || !a.centroid_sq_norms) fail("missing arrays");
  if (a.n && (!a.packed || !a.exact || !a.ids || !a.codebooks)) fail("missing arrays");
  if (a.metric == Metric::L2 && a.n && !a.sq_norms) fail("L2 needs sq_norms");
  check_layout(a);
  const SimdLevel level = a.simd_level < 0 ? best_simd_level() : static_cast<SimdLevel>(a.simd_level);
  const DenseKernels& kern = dense_kernels(level);
  const size_t want = pq4_candidates_wanted(a.n, a.k, a.rescore);
  const int threads = a.nq > 1 ? std::min<int>(resolve_threads(a.n_threads), static_cast<int>(a.nq)) : 1;
  const Pq4TableMaker tables(a.codebooks, a.m, a.d, a.metric);
  if (!a.allow.active() && a.nq >= kGroupedQueries)
    return scan_by_list(a, tables, want, threads, level, kern);

  // Coarse step: lists by squared L2 to their centroid (how vectors were assigned);
  // a filtered search orders all of them, to go on past nprobe when it must.
  const size_t probes = a.allow.active() ? a.nlist : a.nprobe;
  std::vector<int64_t> probe(a.nq * probes);
  if (a.nq <= kFewQueries) {
    for (size_t i = 0; i < a.nq; ++i)
      nearest_lists(a, kern, a.queries + i * a.d, probes, probe.data() + i * probes);
  } else {
    coarse_probes(a.centroids, a.centroid_sq_norms, a.nlist, a.d, a.queries, a.nq, a.d, probes,
                  a.n_threads, a.simd_level, probe.data());
  }

  const size_t pair_bytes = pq4_pairs(a.m) * kPq4Block;
  parallel_for(a.nq, threads, [&](size_t qi, int) {
    const float* q = a.queries + qi * a.d;
    std::vector<uint8_t> luts(pq4_pairs(a.m) * 2 * 16);
    tables.luts(q, luts.data());
    Pq4Candidates candidates(want);
    for (size_t r = 0; r < probes; ++r) {
      // Past nprobe (filtered search only): until k allowed rows have been seen. The
      // candidates keep every allowed row offered until there are 2 * want >= k of
      // them, and want after that, so fewer than k kept means fewer than k seen.
      if (r >= a.nprobe && candidates.size() >= a.k) break;
      const int64_t l = probe[qi * probes + r];
      if (!valid_list(l, a.nlist)) continue;  // padding of the coarse step
      const size_t first = static_cast<size_t>(a.list_offsets[l]);
      const size_t rows = static_cast<size_t>(a.list_offsets[l + 1]) - first;
      if (rows == 0) continue;
      pq4_scan_select(a.packed + static_cast<size_t>(a.block_offsets[l]) * pair_bytes, rows, a.m,
                      luts.data(), static_cast<uint32_t>(first), a.allow, a.ids, candidates, level);
    }
    pq4_rescore(candidates.sorted(), q, a.exact, a.sq_norms, a.ids, a.d, a.metric, a.k, kern,
                a.out_scores + qi * a.k, a.out_ids + qi * a.k);
  });
}

}  // namespace ragcore
