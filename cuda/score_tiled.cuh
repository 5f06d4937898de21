// Tiled kernel for many queries (compute-bound): a 64-query x 128-row block of
// scores is accumulated in registers (4 x 8 per thread) from 16-deep slices of
// queries and rows staged in shared memory, like a SIMT matrix product. Scores
// are never written out: each one is compared with its query's threshold in the
// epilogue and only candidates are appended.
#pragma once

#include "common.cuh"
#include "kernels.h"

namespace ragcore::gpu {

constexpr int kTileQueries = 64, kTileRows = 128, kTileDepth = 16, kTiledThreads = 256;

template <class T>
__global__ void __launch_bounds__(kTiledThreads) tiled_kernel(ChunkParams p) {
  __shared__ __align__(16) float q_tile[kTileDepth][kTileQueries];
  __shared__ __align__(16) float r_tile[kTileDepth][kTileRows];
  constexpr int kElems = Chunk<T>::kElems;
  constexpr int kChunksPerRow = kTileDepth / kElems;
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;  // tx: rows, ty: queries
  const int q0 = blockIdx.y * kTileQueries;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kTileRows;
  const T* rows = static_cast<const T*>(p.rows);

  float acc[4][8];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  for (int depth = 0; depth < p.padded_dim; depth += kTileDepth) {
    {  // queries: 64 x 16 floats, one float4 per thread, stored transposed
      const int m = tid / 4, kk = (tid % 4) * 4;
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (q0 + m < p.n_queries)
        v = *reinterpret_cast<const float4*>(p.queries + (q0 + m) * p.padded_dim + depth + kk);
      q_tile[kk][m] = v.x; q_tile[kk + 1][m] = v.y; q_tile[kk + 2][m] = v.z; q_tile[kk + 3][m] = v.w;
    }
    for (int t = tid; t < kTileRows * kChunksPerRow; t += kTiledThreads) {
      const int n = t / kChunksPerRow, c = t % kChunksPerRow;
      float x[kElems];
      if (r0 + n < p.row_count) {
        const T* src = rows + (p.row_begin + r0 + n) * p.padded_dim + depth + c * kElems;
        Chunk<T>::unpack(__ldg(reinterpret_cast<const uint4*>(src)), x);
      } else {
#pragma unroll
        for (int e = 0; e < kElems; ++e) x[e] = 0.0f;
      }
#pragma unroll
      for (int e = 0; e < kElems; ++e) r_tile[c * kElems + e][n] = x[e];
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileDepth; ++kk) {
      const float4 a = *reinterpret_cast<const float4*>(&q_tile[kk][ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&r_tile[kk][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&r_tile[kk][64 + tx * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w};
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int q = q0 + ty * 4 + i;
    if (q >= p.n_queries) continue;
    uint64_t* out = p.candidates + q * p.stride + p.offset;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int64_t n = r0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + (j - 4));
      if (n >= p.row_count) continue;
      const int64_t row = p.row_begin + n;
      const float s = final_score(p, acc[i][j], row, q);
      if (p.dense) {
        out[n] = result_key(s, p.ranks[row]);
      } else if (s >= p.thresholds[q]) {
        out[atomicAdd(p.counts + q, 1u)] = result_key(s, p.ranks[row]);
      }
    }
  }
}

template <class T>
void launch_tiled(const ChunkParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.row_count + kTileRows - 1) / kTileRows),
                  static_cast<unsigned>((p.n_queries + kTileQueries - 1) / kTileQueries));
  tiled_kernel<T><<<grid, kTiledThreads, 0, stream>>>(p);
  RAGCORE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ragcore::gpu
