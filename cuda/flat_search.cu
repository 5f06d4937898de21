// DeviceCorpus::search: query preparation, the chunk schedule and the choice
// between the scan and tiled kernels. See select.h for how the top k is kept.
#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>

#include "corpus_state.cuh"
#include "device_limits.h"
#include "kernels.h"
#include "select.h"

namespace ragcore::gpu {
namespace {

// Flags written by prepare_kernel: the first offending query row of each kind.
enum BadQuery { kNonFinite = 0, kZeroNorm = 1, kTooLarge = 2, kNumBad = 3 };

// One block per query: checks the row, normalises it for cosine, pads it to
// padded_dim and computes its squared norm for L2 (same order of sums as the
// CPU index is not needed: results are compared within float tolerance).
__global__ void prepare_kernel(const float* in, int64_t in_stride, int dim, int padded,
                               bool normalize, float* out, float* out_sq_norms, int* bad) {
  __shared__ float partial[32];
  const int j = blockIdx.x;
  const float* q = in + j * in_stride;
  float ss = 0.0f;
  bool finite = true;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = q[i];
    finite = finite && isfinite(v);
    ss = fmaf(v, v, ss);
  }
  if (__syncthreads_or(!finite)) {
    if (threadIdx.x == 0) atomicMin(bad + kNonFinite, j);
    return;
  }
  for (int off = 16; off > 0; off /= 2) ss += __shfl_xor_sync(0xFFFFFFFFu, ss, off);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  ss = 0.0f;
  for (int w = 0; w < (int)(blockDim.x / 32); ++w) ss += partial[w];
  if (!(ss <= 1e36f)) {  // the CPU index refuses norms above 1e18 as well
    if (threadIdx.x == 0) atomicMin(bad + kTooLarge, j);
    return;
  }
  if (normalize && ss == 0.0f) {
    if (threadIdx.x == 0) atomicMin(bad + kZeroNorm, j);
    return;
  }
  const float norm = normalize ? sqrtf(ss) : 1.0f;
  float out_ss = 0.0f;
  for (int i = threadIdx.x; i < padded; i += blockDim.x) {
    const float v = i < dim ? (normalize ? q[i] / norm : q[i]) : 0.0f;
    out[static_cast<int64_t>(j) * padded + i] = v;
    out_ss = fmaf(v, v, out_ss);
  }
  if (!out_sq_norms) return;
  __syncthreads();
  for (int off = 16; off > 0; off /= 2) out_ss += __shfl_xor_sync(0xFFFFFFFFu, out_ss, off);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = out_ss;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < (int)(blockDim.x / 32); ++w) total += partial[w];
    out_sq_norms[j] = total;
  }
}

void check_device_pointer(const void* ptr, int device, const char* name) {
  cudaPointerAttributes attr{};
  RAGCORE_CUDA_CHECK(cudaPointerGetAttributes(&attr, ptr));
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    throw std::invalid_argument(std::string(name) + ": not CUDA device memory");
  if (attr.device != device)
    throw std::invalid_argument(std::string(name) + ": on CUDA device " +
                                std::to_string(attr.device) + ", the index is on device " +
                                std::to_string(device));
}

constexpr int scan_case(Storage storage, int queries) {
  return static_cast<int>(storage) * 32 + queries;
}

void launch_scan_for(Storage storage, int queries, const ChunkParams& p, int sms,
                     cudaStream_t s) {
  // queries is a power of two <= kScanMaxQueries
  switch (scan_case(storage, queries)) {
#define RAGCORE_SCAN_CASE(st, T)                                                    \
  case scan_case(st, 1): return launch_scan<T, 1>(p, sms, s);                \
  case scan_case(st, 2): return launch_scan<T, 2>(p, sms, s);                \
  case scan_case(st, 4): return launch_scan<T, 4>(p, sms, s);                \
  case scan_case(st, 8): return launch_scan<T, 8>(p, sms, s);                \
  case scan_case(st, 16): return launch_scan<T, 16>(p, sms, s);
    RAGCORE_SCAN_CASE(Storage::F32, float)
    RAGCORE_SCAN_CASE(Storage::F16, __half)
    RAGCORE_SCAN_CASE(Storage::BF16, __nv_bfloat16)
#undef RAGCORE_SCAN_CASE
  }
  throw std::logic_error("launch_scan_for: unsupported combination");
}

void launch_tiled_for(Storage storage, const ChunkParams& p, cudaStream_t s) {
  if (storage == Storage::F32) return launch_tiled<float>(p, s);
  if (storage == Storage::F16) return launch_tiled<__half>(p, s);
  return launch_tiled<__nv_bfloat16>(p, s);
}

void launch_mma_for(Storage storage, bool wide, const ChunkParams& p, cudaStream_t s) {
  if (storage == Storage::F16) return wide ? launch_mma<__half, true>(p, s) : launch_mma<__half, false>(p, s);
  if (storage == Storage::BF16)
    return wide ? launch_mma<__nv_bfloat16, true>(p, s) : launch_mma<__nv_bfloat16, false>(p, s);
  throw std::logic_error("launch_mma_for: tensor cores need 16-bit storage");
}

int split_terms(Storage storage) {
  return storage == Storage::F16 ? kSplitTerms<__half>
       : storage == Storage::BF16 ? kSplitTerms<__nv_bfloat16> : 0;
}

int next_pow2(int x) {
  int p = 1;
  while (p < x) p *= 2;
  return p;
}

enum class Kernel { kScan, kTiled, kMmaNarrow, kMmaWide };

// How a search is cut into query groups and corpus chunks, and which kernel scores.
struct Plan {
  Kernel kernel = Kernel::kScan;
  bool scan = true;
  int group = 1;          // queries per group
  int64_t first = 0;      // rows of the first chunk (scored densely)
  int64_t capacity = 0;   // most rows of any chunk
};

Plan make_plan(const GpuSearchArgs& a, Storage storage, size_t n, size_t padded,
               const DeviceLimits& lim) {
  Plan plan;
  const int64_t k = static_cast<int64_t>(a.k);
  const int64_t rows = static_cast<int64_t>(n);
  // Scan holds up to 16 queries in shared memory; halve while they do not fit.
  int scan_max = kScanMaxQueries;
  while (scan_max > 0 && static_cast<size_t>(scan_max) * padded * sizeof(float) > lim.shared_optin)
    scan_max /= 2;
  // On an H200 (BENCHMARKS.md, "GPU exact top-k"): the scan streams the corpus fastest
  // for one query; from two queries on, tensor cores (16-bit storage) or the
  // tiled kernel (float32 beyond 16 queries) win.
  const bool tensor_cores = split_terms(storage) > 0;
  const bool few = a.nq <= static_cast<size_t>(kScanMaxQueries);
  if (a.path == GpuPath::Scan && scan_max > 0) {
    plan.kernel = Kernel::kScan;
  } else if (a.path == GpuPath::Tiled) {
    plan.kernel = Kernel::kTiled;
  } else if (a.path == GpuPath::TensorCores && tensor_cores) {
    plan.kernel = few ? Kernel::kMmaNarrow : Kernel::kMmaWide;
  } else if (tensor_cores) {
    plan.kernel = a.nq == 1 && scan_max > 0 ? Kernel::kScan
                : few ? Kernel::kMmaNarrow : Kernel::kMmaWide;
  } else {
    plan.kernel = few && scan_max > 0 ? Kernel::kScan : Kernel::kTiled;
  }
  plan.scan = plan.kernel == Kernel::kScan;
  plan.first = std::min<int64_t>(rows, a.first_chunk_rows ? a.first_chunk_rows
                                                           : std::max<int64_t>(4 * k, 16384));
  plan.first = std::max<int64_t>(plan.first, 1);
  // Selection buffers (candidates + sorted copy, 16 bytes per slot) get a
  // quarter of the free memory, at most 4 GiB.
  const int64_t budget = static_cast<int64_t>(std::min<size_t>(lim.free_bytes / 4, size_t{4} << 30));
  if (plan.scan) {
    plan.group = std::min<int>(static_cast<int>(std::min<size_t>(a.nq, scan_max)), scan_max);
    plan.group = std::max(1, a.max_group ? std::min<int>(plan.group, a.max_group) : plan.group);
    const int64_t fit = budget / (16 * next_pow2(plan.group)) - k;
    plan.capacity = a.max_chunk_rows ? a.max_chunk_rows : std::max<int64_t>(fit, plan.first);
  } else {
    plan.capacity = a.max_chunk_rows ? a.max_chunk_rows : 262144;
    plan.capacity = std::max<int64_t>(plan.capacity, plan.first);
    const int64_t fit = std::max<int64_t>(1, budget / (16 * (k + std::min(plan.capacity, rows))));
    const int64_t limit = a.max_group ? static_cast<int64_t>(a.max_group) : 65535;
    plan.group = static_cast<int>(std::min<int64_t>({static_cast<int64_t>(a.nq), fit, limit}));
    plan.group = std::max(plan.group, 1);
  }
  plan.capacity = std::max<int64_t>(std::min(plan.capacity, rows), plan.first);
  return plan;
}

// Arguments checked before the device is touched; false when there is nothing to search.
bool check_search_args(const GpuSearchArgs& a, size_t dim) {
  if (a.k == 0) throw std::invalid_argument("k: must be >= 1");
  if (a.nq == 0) return false;
  if (a.query_stride < dim) throw std::invalid_argument("queries: row stride below dim");
  if (a.k > static_cast<size_t>(INT_MAX) || a.nq > static_cast<size_t>(INT_MAX))
    throw std::invalid_argument("k and the number of queries must be below 2**31");
  return true;
}

// The caller's device arrays must be on the index's device.
void check_device_arrays(const GpuSearchArgs& a, int device) {
  if (a.queries_on_device) check_device_pointer(a.queries, device, "queries");
  if (a.out_on_device) {
    check_device_pointer(a.out_scores, device, "out_scores");
    check_device_pointer(a.out_ids, device, "out_ids");
  }
}

// Runs prepare_kernel over nq rows of `in` and throws for the first offending
// row of each kind, in the order the CPU index checks them.
void prepare_and_check(const float* in, int64_t in_stride, int nq, int dim, int padded,
                       bool normalize, float* out, float* out_sq_norms, cudaStream_t stream) {
  Scratch bad(kNumBad * sizeof(int), stream);
  const int no_bad[kNumBad] = {INT_MAX, INT_MAX, INT_MAX};
  RAGCORE_CUDA_CHECK(cudaMemcpyAsync(bad.as<int>(), no_bad, sizeof(no_bad), cudaMemcpyHostToDevice, stream));
  prepare_kernel<<<nq, 256, 0, stream>>>(in, in_stride, dim, padded, normalize, out, out_sq_norms,
                                         bad.as<int>());
  RAGCORE_CUDA_CHECK(cudaGetLastError());
  int found[kNumBad];
  RAGCORE_CUDA_CHECK(cudaMemcpyAsync(found, bad.as<int>(), sizeof(found), cudaMemcpyDeviceToHost, stream));
  RAGCORE_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (found[kNonFinite] != INT_MAX)
    throw std::invalid_argument("queries row " + std::to_string(found[kNonFinite]) +
                                " contains NaN or infinity");
  if (found[kTooLarge] != INT_MAX)
    throw std::invalid_argument("queries row " + std::to_string(found[kTooLarge]) +
                                " has a norm above 1e18; its float32 scores could overflow");
  if (found[kZeroNorm] != INT_MAX)
    throw std::invalid_argument("queries row " + std::to_string(found[kZeroNorm]) +
                                " is all zeros; cosine similarity is undefined for it");
}

// The queries as the kernels read them: on the device, checked, normalised for
// cosine, padded to padded_dim, with their squared norms for L2.
struct PreparedQueries {
  PreparedQueries(const GpuSearchArgs& a, size_t dim, size_t padded, bool l2, cudaStream_t stream)
      : host_copy(a.queries_on_device ? 0 : a.nq * dim * sizeof(float), stream),
        rows(a.nq * padded * sizeof(float), stream),
        sq_norms(l2 ? a.nq * sizeof(float) : 0, stream) {
    const float* in = a.queries;
    int64_t in_stride = static_cast<int64_t>(a.query_stride);
    if (!a.queries_on_device) {
      RAGCORE_CUDA_CHECK(cudaMemcpy2DAsync(host_copy.as<void>(), dim * sizeof(float), a.queries,
                                           a.query_stride * sizeof(float), dim * sizeof(float),
                                           a.nq, cudaMemcpyHostToDevice, stream));
      in = host_copy.as<float>();
      in_stride = static_cast<int64_t>(dim);
    }
    prepare_and_check(in, in_stride, static_cast<int>(a.nq), static_cast<int>(dim),
                      static_cast<int>(padded), a.normalize_queries, rows.as<float>(),
                      sq_norms.as<float>(), stream);
  }
  Scratch host_copy;  // the caller's rows, when they are on the host
  Scratch rows;       // nq x padded floats
  Scratch sq_norms;   // nq floats (L2), else none
};

// Where the hits are written: the caller's device arrays, or device scratch
// copied to the caller's host arrays at the end.
struct Output {
  Output(const GpuSearchArgs& a, cudaStream_t stream)
      : scores_dev(a.out_on_device ? 0 : a.nq * a.k * sizeof(float), stream),
        ids_dev(a.out_on_device ? 0 : a.nq * a.k * sizeof(int64_t), stream),
        scores(a.out_on_device ? a.out_scores : scores_dev.as<float>()),
        ids(a.out_on_device ? a.out_ids : ids_dev.as<int64_t>()) {}
  void copy_to_host(const GpuSearchArgs& a, cudaStream_t stream) const {
    if (a.out_on_device) return;
    RAGCORE_CUDA_CHECK(cudaMemcpyAsync(a.out_scores, scores, a.nq * a.k * sizeof(float),
                                       cudaMemcpyDeviceToHost, stream));
    RAGCORE_CUDA_CHECK(cudaMemcpyAsync(a.out_ids, ids, a.nq * a.k * sizeof(int64_t),
                                       cudaMemcpyDeviceToHost, stream));
  }
  Scratch scores_dev, ids_dev;
  float* scores;
  int64_t* ids;
};

// The queries split into 16-bit terms for the tensor-core kernels (none for
// the other kernels).
struct SplitQueries {
  SplitQueries(const Plan& plan, Storage storage, const PreparedQueries& q, size_t nq,
               size_t padded, cudaStream_t stream)
      : terms(plan.kernel == Kernel::kMmaNarrow || plan.kernel == Kernel::kMmaWide
                  ? split_terms(storage) : 0),
        split(static_cast<size_t>(terms) * nq * padded * 2, stream),
        inv_scales(terms ? nq * sizeof(float) : 0, stream) {
    if (storage == Storage::F16 && terms)
      split_queries<__half>(q.rows.as<float>(), static_cast<int>(nq), static_cast<int>(padded),
                            split.as<void>(), inv_scales.as<float>(), stream);
    if (storage == Storage::BF16 && terms)
      split_queries<__nv_bfloat16>(q.rows.as<float>(), static_cast<int>(nq),
                                   static_cast<int>(padded), split.as<void>(),
                                   inv_scales.as<float>(), stream);
  }
  int terms;
  Scratch split, inv_scales;
};

// The parts of a chunk's parameters that are the same for every group and chunk.
ChunkParams corpus_params(const DeviceCorpus::State& st, bool l2, size_t nq, size_t padded,
                          const Selection& sel) {
  ChunkParams p{};
  p.split_stride = static_cast<int64_t>(nq) * padded;
  p.rows = st.rows ? st.rows->as<void>() : nullptr;
  p.sq_norms = l2 && st.sq_norms ? st.sq_norms->as<float>() : nullptr;
  p.ranks = st.ranks ? st.ranks->as<int32_t>() : nullptr;
  p.padded_dim = static_cast<int>(padded);
  p.thresholds = sel.thresholds;
  p.counts = sel.counts;
  p.candidates = sel.candidates;
  p.stride = sel.stride;
  p.offset = sel.k;
  return p;
}

// Points p at the queries [g0, g0 + n_queries).
void point_at_group(ChunkParams& p, int g0, int n_queries, const PreparedQueries& q,
                    const SplitQueries& split, size_t padded) {
  p.queries = q.rows.as<float>() + static_cast<int64_t>(g0) * padded;
  p.q_sq_norms = q.sq_norms.as<float>() ? q.sq_norms.as<float>() + g0 : nullptr;
  p.n_queries = n_queries;
  if (split.terms) {
    p.split_queries = split.split.as<uint16_t>() + static_cast<int64_t>(g0) * padded;
    p.inv_scales = split.inv_scales.as<float>() + g0;
  }
}

// Scores the corpus's n rows against p's queries, chunk by chunk: the first
// chunk densely, each later one up to 8 times larger (at most plan.capacity
// rows), merging the candidates into sel's top k after each.
void score_chunks(const Plan& plan, Storage storage, int sms, int64_t n, ChunkParams& p,
                  const Selection& sel, cudaStream_t stream) {
  selection_reset(sel, stream);
  int64_t chunk = plan.first;
  for (int64_t row = 0; row < n; row += p.row_count) {
    p.row_begin = row;
    p.row_count = std::min({chunk, n - row, plan.capacity});
    p.dense = row == 0;
    if (p.dense) selection_set_counts(sel, static_cast<uint32_t>(p.row_count), stream);
    switch (plan.kernel) {
      case Kernel::kScan: launch_scan_for(storage, next_pow2(sel.n_queries), p, sms, stream); break;
      case Kernel::kTiled: launch_tiled_for(storage, p, stream); break;
      case Kernel::kMmaNarrow: launch_mma_for(storage, false, p, stream); break;
      case Kernel::kMmaWide: launch_mma_for(storage, true, p, stream); break;
    }
    selection_merge(sel, stream);
    chunk = std::min<int64_t>(plan.capacity, chunk * 8);
  }
}

}  // namespace

void DeviceCorpus::search(const GpuSearchArgs& a) const {
  if (!check_search_args(a, dim_)) return;
  auto st = snapshot();
  DeviceGuard guard(device_);
  // The legacy default stream orders this work after whatever torch or cupy
  // queued on their default streams, so zero-copy inputs are ready when read.
  const cudaStream_t stream = 0;
  check_device_arrays(a, device_);
  const bool l2 = metric_ == Metric::L2;
  const PreparedQueries queries(a, dim_, padded_dim_, l2, stream);
  const Output out(a, stream);

  const DeviceLimits lim = device_limits(device_);
  const Plan plan = make_plan(a, storage_, st->n, padded_dim_, lim);
  const int64_t k = static_cast<int64_t>(a.k);
  SelectionBuffers selection(k, plan.capacity, plan.group, stream);
  Selection& sel = selection.sel;
  const SplitQueries split(plan, storage_, queries, a.nq, padded_dim_, stream);

  ChunkParams p = corpus_params(*st, l2, a.nq, padded_dim_, sel);
  const int64_t* sorted_ids = st->sorted_ids ? st->sorted_ids->as<int64_t>() : nullptr;
  const int nq = static_cast<int>(a.nq);
  for (int g0 = 0; g0 < nq; g0 += plan.group) {
    sel.n_queries = std::min(plan.group, nq - g0);
    point_at_group(p, g0, sel.n_queries, queries, split, padded_dim_);
    score_chunks(plan, storage_, lim.sms, static_cast<int64_t>(st->n), p, sel, stream);
    selection_write(sel, sorted_ids, out.scores + static_cast<int64_t>(g0) * k,
                    out.ids + static_cast<int64_t>(g0) * k, stream);
  }
  out.copy_to_host(a, stream);
  RAGCORE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace ragcore::gpu
