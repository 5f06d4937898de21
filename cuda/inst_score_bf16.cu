// Explicit instantiations of the scoring kernels for __nv_bfloat16 storage.
#include "score_mma.cuh"
#include "score_scan.cuh"
#include "score_tiled.cuh"

namespace ragcore::gpu {
template void launch_scan<__nv_bfloat16, 1>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<__nv_bfloat16, 2>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<__nv_bfloat16, 4>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<__nv_bfloat16, 8>(const ChunkParams&, int, cudaStream_t);
template void launch_scan<__nv_bfloat16, 16>(const ChunkParams&, int, cudaStream_t);
template void launch_tiled<__nv_bfloat16>(const ChunkParams&, cudaStream_t);
template void launch_mma<__nv_bfloat16, true>(const ChunkParams&, cudaStream_t);
template void launch_mma<__nv_bfloat16, false>(const ChunkParams&, cudaStream_t);
template void split_queries<__nv_bfloat16>(const float*, int, int, void*, float*, cudaStream_t);
}  // namespace ragcore::gpu
