// Tensor-core kernel for fp16 / bf16 corpora. Tensor cores multiply 16-bit
// inputs only, so each float32 query is scaled by a power of two (exact) and
// written as a sum of 16-bit terms: 2 for fp16 (22 significant bits), 3 for
// bf16 (24 bits). Products of 16-bit values are exact in the float32
// accumulators, so the scores match the float32 CPU path within rounding,
// at 2-3 multiplications per term instead of one. Corpus tiles and query
// tiles are staged in shared memory; the scores of each 16 x 16 fragment go
// through shared memory to the same threshold filter as the other kernels.
#pragma once

#include <mma.h>

#include "common.cuh"
#include "kernels.h"

namespace ragcore::gpu {

template <class T> __device__ T to_storage(float x);
template <> __device__ inline __half to_storage<__half>(float x) { return __float2half_rn(x); }
template <> __device__ inline __nv_bfloat16 to_storage<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <class T> __device__ float to_float(T x);
template <> __device__ inline float to_float<__half>(__half x) { return __half2float(x); }
template <> __device__ inline float to_float<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

// One block per query.
template <class T>
__global__ void split_kernel(const float* queries, int n, int padded, T* out, float* inv_scales) {
  __shared__ float block_max[32];
  const int j = blockIdx.x;
  const float* q = queries + static_cast<int64_t>(j) * padded;
  float m = 0.0f;
  for (int i = threadIdx.x; i < padded; i += blockDim.x) m = fmaxf(m, fabsf(q[i]));
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
  if (threadIdx.x % 32 == 0) block_max[threadIdx.x / 32] = m;
  __syncthreads();
  m = 0.0f;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) m = fmaxf(m, block_max[w]);
  // Largest component in [1, 2): fp16 neither overflows nor loses the terms to underflow.
  const int e = m > 0.0f ? ilogbf(m) : 0;
  const float scale = ldexpf(1.0f, -e);
  if (threadIdx.x == 0) inv_scales[j] = ldexpf(1.0f, e);
  for (int i = threadIdx.x; i < padded; i += blockDim.x) {
    float rest = q[i] * scale;
#pragma unroll
    for (int t = 0; t < kSplitTerms<T>; ++t) {
      const T term = to_storage<T>(rest);
      out[(static_cast<int64_t>(t) * n + j) * padded + i] = term;
      rest -= to_float<T>(term);
    }
  }
}

template <class T>
void split_queries(const float* queries, int n, int padded_dim, void* out, float* inv_scales,
                   cudaStream_t stream) {
  split_kernel<T><<<n, 256, 0, stream>>>(queries, n, padded_dim, static_cast<T*>(out), inv_scales);
  RAGCORE_CUDA_CHECK(cudaGetLastError());
}

// Warps are laid out kWarpsM (queries) x kWarpsN (rows); each computes
// kFragsM x kFragsN fragments of 16 x 16 scores.
template <bool kWide> struct MmaShape;
template <> struct MmaShape<true> {
  static constexpr int kWarpsM = 2, kWarpsN = 4, kFragsM = 2, kFragsN = 2;
};
template <> struct MmaShape<false> {
  static constexpr int kWarpsM = 1, kWarpsN = 8, kFragsM = 1, kFragsN = 2;
};

constexpr int kMmaDepth = 32;               // elements of depth staged per step
constexpr int kMmaLd = kMmaDepth + 8;       // padded shared row: 80 bytes, 16-byte aligned

template <class T, bool kWide>
__global__ void __launch_bounds__(256) mma_kernel(ChunkParams p) {
  using namespace nvcuda;
  using S = MmaShape<kWide>;
  constexpr int kTerms = kSplitTerms<T>;
  constexpr int kBM = S::kWarpsM * S::kFragsM * 16;  // queries per block
  constexpr int kBN = S::kWarpsN * S::kFragsN * 16;  // rows per block
  constexpr int kChunks = kMmaDepth * 2 / 16;        // 16-byte chunks per staged row
  __shared__ __align__(128) T q_tile[kTerms][kBM][kMmaLd];
  __shared__ __align__(128) T r_tile[kBN][kMmaLd];
  __shared__ __align__(128) float c_tile[8][16 * 16];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / S::kWarpsN, wn = warp % S::kWarpsN;
  const int q0 = blockIdx.y * kBM;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kBN;
  const T* rows = static_cast<const T*>(p.rows);
  const T* split = static_cast<const T*>(p.split_queries);

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[S::kFragsM][S::kFragsN];
#pragma unroll
  for (int i = 0; i < S::kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < S::kFragsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int depth = 0; depth < p.padded_dim; depth += kMmaDepth) {
    for (int c = threadIdx.x; c < kTerms * kBM * kChunks; c += blockDim.x) {
      const int t = c / (kBM * kChunks), m = (c / kChunks) % kBM, part = c % kChunks;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (q0 + m < p.n_queries && depth + part * 8 < p.padded_dim)
        v = *reinterpret_cast<const uint4*>(split + t * p.split_stride +
                                            static_cast<int64_t>(q0 + m) * p.padded_dim + depth + part * 8);
      *reinterpret_cast<uint4*>(&q_tile[t][m][part * 8]) = v;
    }
    for (int c = threadIdx.x; c < kBN * kChunks; c += blockDim.x) {
      const int n = c / kChunks, part = c % kChunks;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (r0 + n < p.row_count && depth + part * 8 < p.padded_dim)
        v = __ldg(reinterpret_cast<const uint4*>(rows + (p.row_begin + r0 + n) * p.padded_dim +
                                                 depth + part * 8));
      *reinterpret_cast<uint4*>(&r_tile[n][part * 8]) = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kMmaDepth; kk += 16) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b[S::kFragsN];
#pragma unroll
      for (int j = 0; j < S::kFragsN; ++j)
        wmma::load_matrix_sync(b[j], &r_tile[(wn * S::kFragsN + j) * 16][kk], kMmaLd);
#pragma unroll
      for (int t = 0; t < kTerms; ++t)
#pragma unroll
        for (int i = 0; i < S::kFragsM; ++i) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
          wmma::load_matrix_sync(a, &q_tile[t][(wm * S::kFragsM + i) * 16][kk], kMmaLd);
#pragma unroll
          for (int j = 0; j < S::kFragsN; ++j) wmma::mma_sync(acc[i][j], a, b[j], acc[i][j]);
        }
    }
    __syncthreads();
  }

  float* mine = c_tile[warp];
#pragma unroll
  for (int i = 0; i < S::kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < S::kFragsN; ++j) {
      wmma::store_matrix_sync(mine, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        const int q = q0 + (wm * S::kFragsM + i) * 16 + e / 16;
        const int64_t n = r0 + (wn * S::kFragsN + j) * 16 + e % 16;
        if (q >= p.n_queries || n >= p.row_count) continue;
        const int64_t row = p.row_begin + n;
        const float s = final_score(p, mine[e] * p.inv_scales[q], row, q);
        uint64_t* out = p.candidates + q * p.stride + p.offset;
        if (p.dense) {
          out[n] = result_key(s, p.ranks[row]);
        } else if (s >= p.thresholds[q]) {
          out[atomicAdd(p.counts + q, 1u)] = result_key(s, p.ranks[row]);
        }
      }
      __syncwarp();
    }
}

template <class T, bool kWide>
void launch_mma(const ChunkParams& p, cudaStream_t stream) {
  using S = MmaShape<kWide>;
  constexpr int kBM = S::kWarpsM * S::kFragsM * 16, kBN = S::kWarpsN * S::kFragsN * 16;
  const dim3 grid(static_cast<unsigned>((p.row_count + kBN - 1) / kBN),
                  static_cast<unsigned>((p.n_queries + kBM - 1) / kBM));
  mma_kernel<T, kWide><<<grid, 256, 0, stream>>>(p);
  RAGCORE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ragcore::gpu
