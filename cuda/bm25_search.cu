// DeviceBm25: the postings on the device, and the batched search (gpu_bm25.h).
#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <utility>

#include "bm25_kernels.cuh"
#include "bm25_state.cuh"
#include "device_limits.h"
#include "gpu_flat.h"

namespace ragcore::gpu {

namespace {


// The scatter launches of a batch: launch l adds segs[launch_begin[l],
// launch_begin[l + 1]) (launch_total[l] postings); the launches of query group
// g are [group_begin[g], group_begin[g + 1]), one per query position.
struct ScatterPlan {
  std::vector<Bm25Segment> segs;
  std::vector<size_t> launch_begin, group_begin;
  std::vector<int64_t> launch_total;
};

ScatterPlan plan_scatter(const Bm25SearchArgs& a, const std::vector<int64_t>& offsets,
                         size_t group) {
  ScatterPlan plan;
  std::vector<std::vector<std::pair<Bm25Segment, int64_t>>> by_position;  // (segment, count)
  for (size_t g0 = 0; g0 < a.nq; g0 += group) {
    plan.group_begin.push_back(plan.launch_total.size());
    for (auto& launch : by_position) launch.clear();
    size_t positions = 0;
    for (size_t q = g0; q < std::min(a.nq, g0 + group); ++q) {
      size_t position = 0;
      for (int64_t i = a.offsets[q]; i < a.offsets[q + 1]; ++i) {
        const int64_t t = a.terms[i];
        if (t < 0) continue;  // no live document holds it
        const int64_t count = offsets[t + 1] - offsets[t];
        if (count == 0) continue;
        if (by_position.size() <= position) by_position.emplace_back();
        by_position[position++].push_back(
            {Bm25Segment{offsets[t], 0, a.weights[i], static_cast<int64_t>(q - g0)}, count});
      }
      positions = std::max(positions, position);
    }
    for (size_t p = 0; p < positions; ++p) {
      plan.launch_begin.push_back(plan.segs.size());
      int64_t first = 0;
      for (auto [seg, count] : by_position[p]) {
        seg.first = first;
        first += count;
        plan.segs.push_back(seg);
      }
      plan.launch_total.push_back(first);
    }
  }
  plan.group_begin.push_back(plan.launch_total.size());
  plan.launch_begin.push_back(plan.segs.size());
  return plan;
}

}  // namespace

DeviceBm25::DeviceBm25(int device, const int64_t* offsets, size_t n_terms, const uint32_t* docs,
                       const float* values, const int32_t* rank_of_slot, size_t n_slots,
                       const int64_t* sorted_ids, size_t n_live, size_t dense_min_df)
    : device_(device), n_slots_(n_slots), n_live_(n_live),
      dense_min_df_(dense_min_df ? dense_min_df : std::max<size_t>(1, (n_slots + 15) / 16)),
      offsets_(offsets, offsets + n_terms + 1), dense_index_(n_terms, -1), list_max_(n_terms, 0.0f),
      buffers_(std::make_unique<Buffers>()) {
  if (device < 0 || device >= device_count())
    throw std::invalid_argument("device: no CUDA device " + std::to_string(device));
  if (n_live > n_slots || n_slots >= static_cast<size_t>(INT_MAX))
    throw std::invalid_argument("n_live and n_slots: out of range");
  if (offsets_[0] != 0) throw std::invalid_argument("offsets: must start at 0");
  for (size_t t = 0; t < n_terms; ++t)
    if (offsets_[t + 1] < offsets_[t]) throw std::invalid_argument("offsets: must not decrease");
  for (size_t t = 0; t < n_terms; ++t)
    for (int64_t p = offsets_[t]; p < offsets_[t + 1]; ++p) {
      if (docs[p] >= n_slots) throw std::invalid_argument("docs: slot out of range");
      if (p > offsets_[t] && docs[p] <= docs[p - 1])
        throw std::invalid_argument("docs: slots must ascend within a term");
      list_max_[t] = std::max(list_max_[t], values[p]);
    }
  for (size_t d = 0; d < n_slots; ++d)
    if (rank_of_slot[d] < -1 || rank_of_slot[d] >= static_cast<int64_t>(n_live))
      throw std::invalid_argument("rank_of_slot: rank out of range");

  // Bitmaps of the dense terms (3/16 byte per slot each; at most 16 times the
  // average distinct terms per document of them).
  const int64_t n_words = static_cast<int64_t>(n_slots / 64 + 1);
  std::vector<uint64_t> bits;
  std::vector<uint32_t> rank_before;
  int32_t n_dense = 0;
  for (size_t t = 0; t < n_terms; ++t) {
    if (static_cast<size_t>(offsets_[t + 1] - offsets_[t]) < dense_min_df_) continue;
    dense_index_[t] = n_dense++;
    bits.resize(static_cast<size_t>(n_dense) * n_words, 0);
    uint64_t* word = bits.data() + static_cast<size_t>(n_dense - 1) * n_words;
    for (int64_t p = offsets_[t]; p < offsets_[t + 1]; ++p) word[docs[p] / 64] |= uint64_t{1} << (docs[p] % 64);
    uint32_t count = 0;
    for (int64_t w = 0; w < n_words; ++w) {
      rank_before.push_back(count);
      count += static_cast<uint32_t>(__builtin_popcountll(word[w]));
    }
  }
  buffers_->n_words = n_words;

  DeviceGuard guard(device_);
  const auto n_postings = static_cast<size_t>(offsets_.back());
  buffers_->docs = upload(device_, docs, n_postings * sizeof(uint32_t));
  buffers_->values = upload(device_, values, n_postings * sizeof(float));
  buffers_->ranks = upload(device_, rank_of_slot, n_slots * sizeof(int32_t));
  buffers_->sorted_ids = upload(device_, sorted_ids, n_live * sizeof(int64_t));
  buffers_->offsets = upload(device_, offsets_.data(), offsets_.size() * sizeof(int64_t));
  buffers_->dense_index = upload(device_, dense_index_.data(), n_terms * sizeof(int32_t));
  buffers_->bits = upload(device_, bits.data(), bits.size() * sizeof(uint64_t));
  buffers_->rank_before = upload(device_, rank_before.data(), rank_before.size() * sizeof(uint32_t));
}

DeviceBm25::~DeviceBm25() = default;

size_t DeviceBm25::device_bytes() const {
  const Buffers& b = *buffers_;
  size_t bytes = 0;
  for (const auto* buf : {&b.docs, &b.values, &b.ranks, &b.sorted_ids, &b.offsets, &b.dense_index,
                          &b.bits, &b.rank_before})
    bytes += (*buf)->bytes();
  return bytes;
}

void DeviceBm25::search(const Bm25SearchArgs& a) const {
  if (a.k == 0) throw std::invalid_argument("k: must be >= 1");
  if (a.nq == 0) return;
  if (a.k > static_cast<size_t>(INT_MAX) || a.nq > static_cast<size_t>(INT_MAX))
    throw std::invalid_argument("k and the number of queries must be below 2**31");
  if (a.offsets[0] != 0) throw std::invalid_argument("offsets: must start at 0");
  for (size_t q = 0; q < a.nq; ++q)
    if (a.offsets[q + 1] < a.offsets[q]) throw std::invalid_argument("offsets: must not decrease");
  for (int64_t i = 0; i < a.offsets[a.nq]; ++i)
    if (a.terms[i] < -1 || a.terms[i] >= static_cast<int64_t>(num_terms()))
      throw std::invalid_argument("terms: term id out of range");
  DeviceGuard guard(device_);
  const std::vector<uint8_t> exact = a.exhaustive ? std::vector<uint8_t>(a.nq, 0) : search_pruned(a);
  std::vector<size_t> rest;  // the queries the pruned plan could not answer
  for (size_t q = 0; q < a.nq; ++q)
    if (!exact[q]) rest.push_back(q);
  if (a.out_exhaustive)
    for (size_t q = 0; q < a.nq; ++q) a.out_exhaustive[q] = exact[q] ? 0 : 1;
  if (rest.empty()) return;
  if (rest.size() == a.nq) return search_exhaustive(a);
  // Score the rest as a batch of their own, then put their rows in place.
  std::vector<int64_t> terms, offsets{0};
  std::vector<double> weights, base;
  for (size_t q : rest) {
    for (int64_t i = a.offsets[q]; i < a.offsets[q + 1]; ++i) {
      terms.push_back(a.terms[i]);
      weights.push_back(a.weights[i]);
    }
    offsets.push_back(static_cast<int64_t>(terms.size()));
    base.push_back(a.base[q]);
  }
  std::vector<float> scores(rest.size() * a.k);
  std::vector<int64_t> ids(rest.size() * a.k);
  Bm25SearchArgs sub = a;
  sub.terms = terms.data();
  sub.weights = weights.data();
  sub.offsets = offsets.data();
  sub.base = base.data();
  sub.nq = rest.size();
  sub.out_scores = scores.data();
  sub.out_ids = ids.data();
  sub.out_exhaustive = nullptr;
  search_exhaustive(sub);
  for (size_t r = 0; r < rest.size(); ++r) {
    std::copy_n(scores.data() + r * a.k, a.k, a.out_scores + rest[r] * a.k);
    std::copy_n(ids.data() + r * a.k, a.k, a.out_ids + rest[r] * a.k);
  }
}

namespace {

// The exhaustive plan's shape: the first chunk and the largest chunk of documents scored
// between merges (as the dense search cuts its corpus), the flag bytes per query, and the
// queries scored together (their accumulators and selection buffers get a quarter of the
// free memory, at most 4 GiB).
struct ExhaustiveShape {
  int64_t first, capacity, flags, group;
};

ExhaustiveShape exhaustive_shape(const Bm25SearchArgs& a, int64_t slots, const DeviceLimits& lim) {
  const int64_t k = static_cast<int64_t>(a.k);
  ExhaustiveShape sh;
  sh.first = std::min<int64_t>(slots, a.first_chunk_rows ? a.first_chunk_rows
                                                         : std::max<int64_t>(4 * k, 16384));
  sh.first = std::max<int64_t>(sh.first, 1);
  sh.capacity = a.max_chunk_rows ? a.max_chunk_rows : 131072;
  sh.capacity = std::max<int64_t>(std::min(sh.capacity, slots), sh.first);
  // Accumulators (8 bytes per query and document, plus the flags) and selection
  // buffers (16 bytes per slot).
  sh.flags = (slots + kDocsPerFlag - 1) / kDocsPerFlag;
  const int64_t budget = static_cast<int64_t>(std::min<size_t>(lim.free_bytes / 4, size_t{4} << 30));
  const int64_t per_query = 8 * slots + sh.flags + 16 * (k + sh.capacity) + 64;
  sh.group = std::min<int64_t>({static_cast<int64_t>(a.nq), budget / per_query, 65535});
  if (a.max_group) sh.group = std::min<int64_t>(sh.group, static_cast<int64_t>(a.max_group));
  sh.group = std::max<int64_t>(sh.group, 1);
  return sh;
}

}  // namespace

void DeviceBm25::search_exhaustive(const Bm25SearchArgs& a) const {
  const cudaStream_t stream = 0;  // the caller made the device current
  const int64_t k = static_cast<int64_t>(a.k);
  const int64_t slots = static_cast<int64_t>(n_slots_);
  const DeviceLimits lim = device_limits(device_);
  const ExhaustiveShape sh = exhaustive_shape(a, slots, lim);
  const int64_t first = sh.first, capacity = sh.capacity, flags = sh.flags, group = sh.group;

  const ScatterPlan plan = plan_scatter(a, offsets_, static_cast<size_t>(group));
  Scratch segs(plan.segs.size() * sizeof(Bm25Segment), stream);
  if (!plan.segs.empty())
    RAGCORE_CUDA_CHECK(cudaMemcpyAsync(segs.as<void>(), plan.segs.data(),
                                       plan.segs.size() * sizeof(Bm25Segment),
                                       cudaMemcpyHostToDevice, stream));
  Scratch base(a.nq * sizeof(double), stream);
  RAGCORE_CUDA_CHECK(cudaMemcpyAsync(base.as<void>(), a.base, a.nq * sizeof(double),
                                     cudaMemcpyHostToDevice, stream));
  const size_t acc_entries = static_cast<size_t>(group) * n_slots_;
  const size_t flag_bytes = static_cast<size_t>(group * flags);
  Scratch acc(acc_entries * sizeof(double), stream), touched(flag_bytes, stream);
  if (acc_entries) {  // once: the select kernel resets the sums it reads
    // 0xFF bytes: every accumulator kUnheld (bm25_kernels.cuh).
    RAGCORE_CUDA_CHECK(cudaMemsetAsync(acc.as<void>(), 0xFF, acc_entries * sizeof(double), stream));
    RAGCORE_CUDA_CHECK(cudaMemsetAsync(touched.as<void>(), 0, flag_bytes, stream));
  }

  SelectionBuffers selection(k, capacity, group, stream);
  Selection& sel = selection.sel;
  Scratch out_scores(a.nq * a.k * sizeof(float), stream), out_ids(a.nq * a.k * sizeof(int64_t), stream);

  const Buffers& buf = *buffers_;
  const uint32_t* docs = buf.docs->as<uint32_t>();
  const float* values = buf.values->as<float>();
  const int32_t* ranks = buf.ranks->as<int32_t>();
  for (size_t g = 0; g + 1 < plan.group_begin.size(); ++g) {
    const int64_t g0 = static_cast<int64_t>(g) * group;
    sel.n_queries = static_cast<int>(std::min<int64_t>(group, static_cast<int64_t>(a.nq) - g0));
    selection_reset(sel, stream);
    for (size_t l = plan.group_begin[g]; l < plan.group_begin[g + 1]; ++l) {
      const size_t s0 = plan.launch_begin[l], n_segs = plan.launch_begin[l + 1] - s0;
      bm25_scatter_kernel<<<bm25_blocks(plan.launch_total[l], 16 * lim.sms), kBm25Threads, 0, stream>>>(
          segs.as<Bm25Segment>() + s0, static_cast<int>(n_segs), plan.launch_total[l], docs, values,
          acc.as<double>(), touched.as<uint8_t>(), slots, flags);
      RAGCORE_CUDA_CHECK(cudaGetLastError());
    }
    int64_t chunk = first;
    for (int64_t row = 0; row < slots; row += chunk, chunk = std::min(capacity, chunk * 8)) {
      const int64_t rows = std::min(chunk, slots - row);
      const dim3 grid(bm25_blocks(rows, 1024), static_cast<unsigned>(sel.n_queries));
      bm25_select_kernel<<<grid, kBm25Threads, 0, stream>>>(sel, base.as<double>() + g0, row, rows,
                                                        ranks, acc.as<double>(),
                                                        touched.as<uint8_t>(), slots, flags);
      RAGCORE_CUDA_CHECK(cudaGetLastError());
      selection_merge(sel, stream);
    }
    if (flag_bytes)
      RAGCORE_CUDA_CHECK(cudaMemsetAsync(touched.as<void>(), 0, flag_bytes, stream));
    selection_write(sel, buf.sorted_ids->as<int64_t>(), out_scores.as<float>() + g0 * k,
                    out_ids.as<int64_t>() + g0 * k, stream);
  }
  RAGCORE_CUDA_CHECK(cudaMemcpyAsync(a.out_scores, out_scores.as<float>(), a.nq * a.k * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream));
  RAGCORE_CUDA_CHECK(cudaMemcpyAsync(a.out_ids, out_ids.as<int64_t>(), a.nq * a.k * sizeof(int64_t),
                                     cudaMemcpyDeviceToHost, stream));
  RAGCORE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace ragcore::gpu
