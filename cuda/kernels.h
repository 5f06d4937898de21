// Launchers of the scoring kernels. Their templates are instantiated once each
// in inst_*.cu (one storage type per file, so the files compile in parallel).
#pragma once

#include <cuda_runtime.h>

namespace ragcore::gpu {

struct ChunkParams;

// Scores a chunk against at most kQueries queries (1, 2, 4, 8 or 16).
template <class T, int kQueries>
void launch_scan(const ChunkParams& p, int max_blocks, cudaStream_t stream);

// Scores a chunk against any number of queries.
template <class T>
void launch_tiled(const ChunkParams& p, cudaStream_t stream);

constexpr int kScanMaxQueries = 16;

}  // namespace ragcore::gpu
