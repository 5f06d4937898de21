// The scan and tiled kernels for fp16 / bf16 storage under the emulation, as
// cuda/inst_score_f16.cu and inst_score_bf16.cu instantiate them; the
// tensor-core kernels (wmma) are not emulated: asking for them throws.
#include <stdexcept>

#include "score_scan.cuh"
#include "score_tiled.cuh"

namespace ragcore::gpu {
#define RAGCORE_EMU_INSTANTIATE(T)                                                        \
  template void launch_scan<T, 1>(const ChunkParams&, int, cudaStream_t);                 \
  template void launch_scan<T, 2>(const ChunkParams&, int, cudaStream_t);                 \
  template void launch_scan<T, 4>(const ChunkParams&, int, cudaStream_t);                 \
  template void launch_scan<T, 8>(const ChunkParams&, int, cudaStream_t);                 \
  template void launch_scan<T, 16>(const ChunkParams&, int, cudaStream_t);                \
  template void launch_tiled<T>(const ChunkParams&, cudaStream_t);                        \
  template <>                                                                             \
  void launch_mma<T, true>(const ChunkParams&, cudaStream_t) {                            \
    throw std::logic_error("the tensor-core kernels are not emulated");                  \
  }                                                                                       \
  template <>                                                                             \
  void launch_mma<T, false>(const ChunkParams&, cudaStream_t) {                           \
    throw std::logic_error("the tensor-core kernels are not emulated");                  \
  }                                                                                       \
  template <>                                                                             \
  void split_queries<T>(const float*, int, int, void*, float*, cudaStream_t) {            \
    throw std::logic_error("the tensor-core kernels are not emulated");                  \
  }
RAGCORE_EMU_INSTANTIATE(__half)
RAGCORE_EMU_INSTANTIATE(__nv_bfloat16)
#undef RAGCORE_EMU_INSTANTIATE
}  // namespace ragcore::gpu
