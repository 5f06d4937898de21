// Launchers of the scoring kernels. Their templates are instantiated once each
// in inst_*.cu (one storage type per file, so the files compile in parallel).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace ragcore::gpu {

struct ChunkParams;

// Scores a chunk against at most kQueries queries (1, 2, 4, 8 or 16); sms: the
// device's multiprocessor count.
template <class T, int kQueries>
void launch_scan(const ChunkParams& p, int sms, cudaStream_t stream);

// Scores a chunk against any number of queries.
template <class T>
void launch_tiled(const ChunkParams& p, cudaStream_t stream);

// Scores a chunk with tensor cores (fp16 / bf16 storage): kWide selects 64-query
// tiles for large batches, else 16-query tiles.
template <class T, bool kWide>
void launch_mma(const ChunkParams& p, cudaStream_t stream);

// Splits prepared float32 queries (n x padded_dim) into the terms used by
// launch_mma, scaled per query by a power of two (written to inv_scales).
template <class T>
void split_queries(const float* queries, int n, int padded_dim, void* out, float* inv_scales,
                   cudaStream_t stream);

// 16-bit terms per query on the tensor-core path: 2 x 11 bits for fp16,
// 3 x 8 bits for bf16, enough for float32's 24.
template <class T> constexpr int kSplitTerms = 0;
template <> constexpr int kSplitTerms<__half> = 2;
template <> constexpr int kSplitTerms<__nv_bfloat16> = 3;

constexpr int kScanMaxQueries = 16;

}  // namespace ragcore::gpu
