// Run-time choice of the kernel table from what the CPU offers.
#include <stdexcept>
#include <string>

#include "ragcore/simd/simd.h"

namespace ragcore {

extern const DenseKernels kScalarKernels;
#ifdef RAGCORE_X86
extern const DenseKernels kAvx2Kernels;
extern const DenseKernels kAvx512Kernels;
#endif

bool simd_level_available(SimdLevel level) {
  switch (level) {
    case SimdLevel::Scalar:
      return true;
#ifdef RAGCORE_X86
    // __builtin_cpu_supports also checks that the OS saves the wide registers.
    case SimdLevel::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c");
    case SimdLevel::Avx512:
      return simd_level_available(SimdLevel::Avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq");
#endif
    default:
      return false;
  }
}

SimdLevel best_simd_level() {
  static const SimdLevel best = [] {
    if (simd_level_available(SimdLevel::Avx512)) return SimdLevel::Avx512;
    if (simd_level_available(SimdLevel::Avx2)) return SimdLevel::Avx2;
    return SimdLevel::Scalar;
  }();
  return best;
}

const DenseKernels& dense_kernels(SimdLevel level) {
  if (!simd_level_available(level))
    throw std::invalid_argument("SIMD level " + std::to_string(static_cast<int>(level)) +
                                " is not available on this CPU or build");
  switch (level) {
#ifdef RAGCORE_X86
    case SimdLevel::Avx2:
      return kAvx2Kernels;
    case SimdLevel::Avx512:
      return kAvx512Kernels;
#endif
    default:
      return kScalarKernels;
  }
}

}  // namespace ragcore
