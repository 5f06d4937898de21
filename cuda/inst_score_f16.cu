// Explicit instantiations of the scoring kernels for __half storage.
#include "score_mma.cuh"
#include "score_scan.cuh"
#include "score_tiled.cuh"

namespace ragcore::gpu {
template void launch_scan<__half, 1>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<__half, 2>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<__half, 4>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<__half, 8>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<__half, 16>(const ChunkParams&, int, cudaStream_t);
template void launch_tiled<__half>(const ChunkParams&, cudaStream_t);
template void launch_mma<__half, true>(const ChunkParams&, cudaStream_t);
template void launch_mma<__half, false>(const ChunkParams&, cudaStream_t);
template void split_queries<__half>(const float*, int, int, void*, float*, cudaStream_t);
}  // namespace ragcore::gpu
