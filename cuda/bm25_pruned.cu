// DeviceBm25::search_pruned: the pruned plan (gpu_bm25.h). The host splits each
// query's terms into essential (sparse) and dense ones and bounds what the dense
// ones can add; the device gathers the candidates, scores them exactly and sorts
// them; the host keeps the rows whose k-th best beats the bound.
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <cmath>
#include <vector>

#include "bm25_pruned_kernels.cuh"
#include "bm25_state.cuh"
#include "device_limits.h"

namespace ragcore::gpu {
namespace {

template <class T>
void to_device(Scratch& dst, const std::vector<T>& src, cudaStream_t stream) {
  if (!src.empty())
    RAGCORE_CUDA_CHECK(cudaMemcpyAsync(dst.as<void>(), src.data(), src.size() * sizeof(T),
                                       cudaMemcpyHostToDevice, stream));
}

}  // namespace

// Per query: the number of postings of its essential (not dense) terms, and the bound on
// what the dense terms can add to a document's score (base included).
struct DeviceBm25::PrunedBounds {
  std::vector<int64_t> essential;
  std::vector<float> bound;
};

DeviceBm25::PrunedBounds DeviceBm25::pruned_bounds(const Bm25SearchArgs& a) const {
  PrunedBounds out{std::vector<int64_t>(a.nq, 0), std::vector<float>(a.nq)};
  for (size_t q = 0; q < a.nq; ++q) {
    double dense = 0.0;
    for (int64_t i = a.offsets[q]; i < a.offsets[q + 1]; ++i) {
      const int64_t t = a.terms[i];
      if (t < 0) continue;
      if (!is_dense(t)) out.essential[q] += offsets_[t + 1] - offsets_[t];
      else if (a.weights[i] > 0) dense += a.weights[i] * static_cast<double>(list_max_[t]);
    }
    // As reference.bm25_dense_bound: a margin for the order of the additions.
    out.bound[q] = static_cast<float>(a.base[q] + dense * (1.0 + 1e-9));
  }
  return out;
}

// The host arrays of a group of queries (rows): row r's essential postings are numbered
// from cand_begin[r], term by term (the segments' `first`, and r's room for candidates);
// every live term of row r with its weight in [q_begin[r], q_begin[r + 1]).
struct DeviceBm25::GroupQueries {
  std::vector<int64_t> cand_begin{0}, q_begin{0}, q_terms;
  std::vector<double> q_weights, base;
  std::vector<Bm25Segment> segs;
};

DeviceBm25::GroupQueries DeviceBm25::group_queries(const Bm25SearchArgs& a,
                                                   const std::vector<size_t>& rows) const {
  GroupQueries g;
  for (size_t r = 0; r < rows.size(); ++r) {
    const size_t q = rows[r];
    int64_t first = g.cand_begin.back();
    for (int64_t i = a.offsets[q]; i < a.offsets[q + 1]; ++i) {
      const int64_t t = a.terms[i];
      if (t < 0) continue;
      g.q_terms.push_back(t);
      g.q_weights.push_back(a.weights[i]);
      if (is_dense(t)) continue;
      g.segs.push_back({offsets_[t], first, a.weights[i], static_cast<int64_t>(r)});
      first += offsets_[t + 1] - offsets_[t];
    }
    g.q_begin.push_back(static_cast<int64_t>(g.q_terms.size()));
    g.base.push_back(a.base[q]);
    g.cand_begin.push_back(first);
  }
  return g;
}

std::vector<uint8_t> DeviceBm25::search_pruned(const Bm25SearchArgs& a) const {
  std::vector<uint8_t> exact(a.nq, 0);
  const cudaStream_t stream = 0;  // the caller made the device current
  const auto k = static_cast<int64_t>(a.k);
  const PrunedBounds pb = pruned_bounds(a);
  const std::vector<int64_t>& essential = pb.essential;
  const std::vector<float>& bound = pb.bound;

  const DeviceLimits lim = device_limits(device_);
  const int64_t budget = static_cast<int64_t>(std::min<size_t>(lim.free_bytes / 4, size_t{4} << 30));
  const int64_t seen_words = static_cast<int64_t>(n_slots_ / 32 + 1);
  auto bytes_of = [&](size_t q) { return 4 * seen_words + 20 * essential[q] + 64; };
  const size_t max_rows = a.max_group ? std::min<size_t>(a.max_group, 65535) : 65535;
  const Buffers& buf = *buffers_;

  size_t next = 0;
  while (next < a.nq) {
    // The next group: queries that can have k candidates, within the budget.
    std::vector<size_t> rows;
    int64_t bytes = 0;
    for (; next < a.nq && rows.size() < max_rows; ++next) {
      if (essential[next] < k || bytes_of(next) > budget) continue;  // left to the exhaustive plan
      if (bytes + bytes_of(next) > budget) break;
      bytes += bytes_of(next);
      rows.push_back(next);
    }
    if (rows.empty()) continue;
    const int n_rows = static_cast<int>(rows.size());
    const GroupQueries g = group_queries(a, rows);
    const std::vector<int64_t>& cand_begin = g.cand_begin;
    const std::vector<int64_t>& q_begin = g.q_begin;
    const std::vector<int64_t>& q_terms = g.q_terms;
    const std::vector<double>& q_weights = g.q_weights;
    const std::vector<double>& base = g.base;
    const std::vector<Bm25Segment>& segs = g.segs;
    const int64_t total = cand_begin.back();

    Scratch d_segs(segs.size() * sizeof(Bm25Segment), stream), d_cand_begin(cand_begin.size() * 8, stream),
        d_q_begin(q_begin.size() * 8, stream), d_q_terms(q_terms.size() * 8, stream),
        d_q_weights(q_weights.size() * 8, stream), d_base(base.size() * 8, stream);
    to_device(d_segs, segs, stream);
    to_device(d_cand_begin, cand_begin, stream);
    to_device(d_q_begin, q_begin, stream);
    to_device(d_q_terms, q_terms, stream);
    to_device(d_q_weights, q_weights, stream);
    to_device(d_base, base, stream);
    Scratch seen(static_cast<size_t>(n_rows) * seen_words * 4, stream), counts(n_rows * 4, stream),
        docs(total * 4, stream), keys(total * 8, stream), sorted(total * 8, stream),
        bounds(n_rows * 16, stream), kth(n_rows * 4, stream), out_scores(n_rows * k * 4, stream),
        out_ids(n_rows * k * 8, stream);
    RAGCORE_CUDA_CHECK(cudaMemsetAsync(seen.as<void>(), 0, static_cast<size_t>(n_rows) * seen_words * 4, stream));
    RAGCORE_CUDA_CHECK(cudaMemsetAsync(counts.as<void>(), 0, n_rows * 4, stream));

    CandidateLists c{d_cand_begin.as<int64_t>(), counts.as<uint32_t>(), docs.as<uint32_t>(),
                     keys.as<uint64_t>(), total, n_rows};
    bm25_gather_kernel<<<bm25_blocks(total, 16 * lim.sms), kBm25Threads, 0, stream>>>(
        d_segs.as<Bm25Segment>(), static_cast<int>(segs.size()), total, buf.docs->as<uint32_t>(),
        seen.as<uint32_t>(), seen_words, c);
    RAGCORE_CUDA_CHECK(cudaGetLastError());
    ProbeParams p{d_q_begin.as<int64_t>(), d_q_terms.as<int64_t>(), d_q_weights.as<double>(),
                  d_base.as<double>(), buf.offsets->as<int64_t>(), buf.docs->as<uint32_t>(),
                  buf.values->as<float>(), buf.dense_index->as<int32_t>(), buf.bits->as<uint64_t>(),
                  buf.rank_before->as<uint32_t>(), buf.n_words, buf.ranks->as<int32_t>()};
    bm25_score_candidates_kernel<<<bm25_blocks(total, 16 * lim.sms), kBm25Threads, 0, stream>>>(c, p);
    RAGCORE_CUDA_CHECK(cudaGetLastError());
    int64_t* seg_begin = bounds.as<int64_t>();
    int64_t* seg_end = seg_begin + n_rows;
    bm25_candidate_bounds_kernel<<<bm25_blocks(n_rows, n_rows), kBm25Threads, 0, stream>>>(c, seg_begin, seg_end);
    RAGCORE_CUDA_CHECK(cudaGetLastError());
    size_t temp_bytes = 0;
    RAGCORE_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeysDescending(
        nullptr, temp_bytes, keys.as<uint64_t>(), sorted.as<uint64_t>(), total, n_rows, seg_begin,
        seg_end, stream));
    Scratch temp(temp_bytes, stream);
    RAGCORE_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeysDescending(
        temp.as<void>(), temp_bytes, keys.as<uint64_t>(), sorted.as<uint64_t>(), total, n_rows,
        seg_begin, seg_end, stream));
    const dim3 grid(bm25_blocks(k, 1 << 20), static_cast<unsigned>(n_rows));
    bm25_candidate_write_kernel<<<grid, kBm25Threads, 0, stream>>>(
        c, sorted.as<uint64_t>(), k, buf.sorted_ids->as<int64_t>(), out_scores.as<float>(),
        out_ids.as<int64_t>(), kth.as<float>());
    RAGCORE_CUDA_CHECK(cudaGetLastError());

    std::vector<float> h_scores(n_rows * k), h_kth(n_rows);
    std::vector<int64_t> h_ids(n_rows * k);
    RAGCORE_CUDA_CHECK(cudaMemcpyAsync(h_scores.data(), out_scores.as<void>(), h_scores.size() * 4,
                                       cudaMemcpyDeviceToHost, stream));
    RAGCORE_CUDA_CHECK(cudaMemcpyAsync(h_ids.data(), out_ids.as<void>(), h_ids.size() * 8,
                                       cudaMemcpyDeviceToHost, stream));
    RAGCORE_CUDA_CHECK(cudaMemcpyAsync(h_kth.data(), kth.as<void>(), h_kth.size() * 4,
                                       cudaMemcpyDeviceToHost, stream));
    RAGCORE_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int r = 0; r < n_rows; ++r) {
      const size_t q = rows[r];
      // Strictly above: a document outside the candidates scores at most the
      // bound, so it can neither beat nor tie the k-th best.
      if (std::isnan(h_kth[r]) || !(bound[q] < h_kth[r])) continue;
      exact[q] = 1;
      std::copy_n(h_scores.data() + r * k, k, a.out_scores + q * k);
      std::copy_n(h_ids.data() + r * k, k, a.out_ids + q * k);
    }
  }
  return exact;
}

}  // namespace ragcore::gpu
