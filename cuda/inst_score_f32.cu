// Explicit instantiations of the scoring kernels for float storage.
#include "score_scan.cuh"
#include "score_tiled.cuh"

namespace ragcore::gpu {
template void launch_scan<float, 1>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<float, 2>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<float, 4>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<float, 8>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<float, 16>(const ChunkParams&, int, cudaStream_t);
template void launch_tiled<float>(const ChunkParams&, cudaStream_t);
}  // namespace ragcore::gpu
