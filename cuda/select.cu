// Segmented selection between chunks; see select.h.
#include <cub/device/device_segmented_sort.cuh>

#include <cmath>

#include "common.cuh"
#include "select.h"

namespace ragcore::gpu {
namespace {

__global__ void reset_kernel(Selection s) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= s.n_queries) return;
  s.counts[j] = 0;
  s.kept[j] = 0;
  s.thresholds[j] = -INFINITY;
}

__global__ void set_counts_kernel(Selection s, uint32_t rows) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < s.n_queries) s.counts[j] = rows;
}

__global__ void bounds_kernel(Selection s) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= s.n_queries) return;
  const int64_t region = static_cast<int64_t>(j) * s.stride;
  s.begin[j] = region + s.k - s.kept[j];
  s.end[j] = region + s.k + s.counts[j];
}

// Grid: (slots / 256, queries). Copies the best k of the sorted segment back to
// the end of the query's first k slots.
__global__ void keep_kernel(Selection s) {
  const int j = blockIdx.y;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t len = s.end[j] - s.begin[j];
  const int64_t kept = len < s.k ? len : s.k;
  if (t < kept)
    s.candidates[static_cast<int64_t>(j) * s.stride + s.k - kept + t] = s.sorted[s.begin[j] + t];
}

__global__ void update_kernel(Selection s) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= s.n_queries) return;
  const int64_t len = s.end[j] - s.begin[j];
  const int64_t kept = len < s.k ? len : s.k;
  s.kept[j] = static_cast<uint32_t>(kept);
  s.counts[j] = 0;
  s.thresholds[j] = kept == s.k ? key_score(s.sorted[s.begin[j] + s.k - 1]) : -INFINITY;
}

__global__ void write_kernel(Selection s, const int64_t* sorted_ids, float* out_scores,
                             int64_t* out_ids) {
  const int j = blockIdx.y;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= s.k) return;
  const int64_t kept = s.kept[j];
  const int64_t out = static_cast<int64_t>(j) * s.k + t;
  if (t < kept) {
    const uint64_t key = s.candidates[static_cast<int64_t>(j) * s.stride + s.k - kept + t];
    out_scores[out] = key_score(key);
    out_ids[out] = sorted_ids[key_rank(key)];
  } else {
    out_scores[out] = -INFINITY;
    out_ids[out] = -1;
  }
}

unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace

size_t selection_sort_temp_bytes(int n_queries, int64_t stride) {
  size_t bytes = 0;
  RAGCORE_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeysDescending(
      nullptr, bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<int64_t>(n_queries) * stride, n_queries, static_cast<const int64_t*>(nullptr),
      static_cast<const int64_t*>(nullptr)));
  return bytes;
}

void selection_reset(const Selection& s, cudaStream_t stream) {
  reset_kernel<<<blocks_for(s.n_queries, 256), 256, 0, stream>>>(s);
  RAGCORE_CUDA_CHECK(cudaGetLastError());
}

void selection_set_counts(const Selection& s, uint32_t rows, cudaStream_t stream) {
  set_counts_kernel<<<blocks_for(s.n_queries, 256), 256, 0, stream>>>(s, rows);
  RAGCORE_CUDA_CHECK(cudaGetLastError());
}

void selection_merge(const Selection& s, cudaStream_t stream) {
  bounds_kernel<<<blocks_for(s.n_queries, 256), 256, 0, stream>>>(s);
  RAGCORE_CUDA_CHECK(cudaGetLastError());
  size_t bytes = s.sort_temp_bytes;
  RAGCORE_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeysDescending(
      s.sort_temp, bytes, s.candidates, s.sorted, static_cast<int64_t>(s.n_queries) * s.stride,
      s.n_queries, s.begin, s.end, stream));
  const dim3 grid(blocks_for(s.k, 256), static_cast<unsigned>(s.n_queries));
  keep_kernel<<<grid, 256, 0, stream>>>(s);
  RAGCORE_CUDA_CHECK(cudaGetLastError());
  update_kernel<<<blocks_for(s.n_queries, 256), 256, 0, stream>>>(s);
  RAGCORE_CUDA_CHECK(cudaGetLastError());
}

void selection_write(const Selection& s, const int64_t* sorted_ids, float* out_scores,
                     int64_t* out_ids, cudaStream_t stream) {
  const dim3 grid(blocks_for(s.k, 256), static_cast<unsigned>(s.n_queries));
  write_kernel<<<grid, 256, 0, stream>>>(s, sorted_ids, out_scores, out_ids);
  RAGCORE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ragcore::gpu
