// Scan kernel for a few queries (memory-bound): each corpus row is read once,
// 16 bytes per lane, and scored against up to kQueries queries held in shared
// memory. Candidates that reach the query's threshold are appended to its list,
// one atomic per warp: the k-selection happens while the corpus streams by.
#pragma once

#include "common.cuh"
#include "kernels.h"

namespace ragcore::gpu {

constexpr int kScanLanesPerRow = 8;  // 8 lanes x 16 bytes = one 128-byte line per load
constexpr int kScanThreads = 256;

template <class T, int kQueries>
__global__ void __launch_bounds__(kScanThreads) scan_kernel(ChunkParams p) {
  extern __shared__ float4 shared_queries[];
  float* q_smem = reinterpret_cast<float*>(shared_queries);
  const int qd = kQueries * p.padded_dim;
  for (int i = threadIdx.x; i < qd; i += blockDim.x)
    q_smem[i] = (i / p.padded_dim < p.n_queries) ? p.queries[i] : 0.0f;
  __syncthreads();

  constexpr int kElems = Chunk<T>::kElems;
  constexpr int kRowsPerWarp = 32 / kScanLanesPerRow;
  const int lane = threadIdx.x & 31;
  const int sub = lane % kScanLanesPerRow;
  const int row_in_warp = lane / kScanLanesPerRow;
  const bool leader = sub == 0;
  const int chunks = p.padded_dim / kElems;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t n_warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  const T* rows = static_cast<const T*>(p.rows);

  for (int64_t first = warp * kRowsPerWarp; first < p.row_count; first += n_warps * kRowsPerWarp) {
    const int64_t r = first + row_in_warp;  // row within the chunk
    const bool valid = r < p.row_count;
    float acc[kQueries];
#pragma unroll
    for (int j = 0; j < kQueries; ++j) acc[j] = 0.0f;
    if (valid) {
      const uint4* row = reinterpret_cast<const uint4*>(rows + (p.row_begin + r) * p.padded_dim);
#pragma unroll 4
      for (int c = sub; c < chunks; c += kScanLanesPerRow) {
        float x[kElems];
        Chunk<T>::unpack(__ldg(row + c), x);
#pragma unroll
        for (int j = 0; j < kQueries; ++j) {
          const float4* q = reinterpret_cast<const float4*>(q_smem + j * p.padded_dim + c * kElems);
#pragma unroll
          for (int e = 0; e < kElems / 4; ++e) {
            const float4 qv = q[e];
            acc[j] = fmaf(x[4 * e], qv.x, acc[j]);
            acc[j] = fmaf(x[4 * e + 1], qv.y, acc[j]);
            acc[j] = fmaf(x[4 * e + 2], qv.z, acc[j]);
            acc[j] = fmaf(x[4 * e + 3], qv.w, acc[j]);
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kQueries; ++j)
#pragma unroll
      for (int off = kScanLanesPerRow / 2; off > 0; off /= 2)
        acc[j] += __shfl_xor_sync(0xFFFFFFFFu, acc[j], off);

    const int64_t row = p.row_begin + r;
#pragma unroll
    for (int j = 0; j < kQueries; ++j) {
      if (j >= p.n_queries) break;  // warp-uniform
      const float s = valid ? final_score(p, acc[j], row, j) : 0.0f;
      uint64_t* out = p.candidates + j * p.stride + p.offset;
      if (p.dense) {
        if (leader && valid) out[r] = result_key(s, p.ranks[row]);
        continue;
      }
      const bool pass = leader && valid && s >= p.thresholds[j];
      const unsigned mask = __ballot_sync(0xFFFFFFFFu, pass);
      if (mask == 0) continue;
      uint32_t base = 0;
      if (lane == 0) base = atomicAdd(p.counts + j, static_cast<uint32_t>(__popc(mask)));
      base = __shfl_sync(0xFFFFFFFFu, base, 0);
      if (pass) out[base + __popc(mask & ((1u << lane) - 1))] = result_key(s, p.ranks[row]);
    }
  }
}

// sms: multiprocessors of the device. The grid is one full wave of resident
// blocks (the kernel loops over rows): a grid of a few waves would leave the
// last one partly empty, which costs a large share of a memory-bound scan.
template <class T, int kQueries>
void launch_scan(const ChunkParams& p, int sms, cudaStream_t stream) {
  const size_t smem = static_cast<size_t>(kQueries) * p.padded_dim * sizeof(float);
  auto kernel = scan_kernel<T, kQueries>;
  if (smem > 48 * 1024)
    RAGCORE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(smem)));
  int per_sm = 0;
  RAGCORE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kScanThreads, smem));
  const int64_t max_blocks = static_cast<int64_t>(sms) * (per_sm > 0 ? per_sm : 1);
  const int64_t rows_per_block = kScanThreads / kScanLanesPerRow;
  const int64_t wanted = (p.row_count + rows_per_block - 1) / rows_per_block;
  const int blocks = static_cast<int>(wanted < max_blocks ? wanted : max_blocks);
  kernel<<<blocks > 0 ? blocks : 1, kScanThreads, smem, stream>>>(p);
  RAGCORE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ragcore::gpu
