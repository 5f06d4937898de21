// Scalar RaBitQ scan and the run-time choice of kernel (see rabitq_scan.h).
#include "ragcore/dense/rabitq_scan.h"

namespace ragcore {

float* zeroed_floats(std::vector<float>& v, size_t n) {
  v.assign(n, 0.0f);
  return v.data();
}

namespace {

// Entry v of group g: the sum of rotated[8 g + t] over the bits t set in v.
void scalar_tables(const float* rotated, size_t dp, size_t, std::vector<float>& tables) {
  const size_t groups = dp / 8;
  tables.resize(groups * 256);
  for (size_t g = 0; g < groups; ++g) {
    float* t = &tables[g * 256];
    const float* v = rotated + g * 8;
    t[0] = 0.0f;
    for (unsigned s = 1; s < 256; ++s) t[s] = t[s & (s - 1)] + v[__builtin_ctz(s)];
  }
}

void scalar_scan(const uint8_t* rows, size_t row_bytes, size_t n, size_t dp, size_t bits,
                 const float* tables, float* out) {
  const size_t groups = dp / 8;
  for (size_t j = 0; j < n; ++j) {
    const uint8_t* code = rows + j * row_bytes;
    float total = 0.0f;
    for (size_t b = 0; b < bits; ++b) {
      const uint8_t* plane = code + b * groups;
      float sum = 0.0f;
      for (size_t g = 0; g < groups; ++g) sum += tables[g * 256 + plane[g]];
      total += static_cast<float>(1u << b) * sum;
    }
    out[j] = total;
  }
}

}  // namespace

const RabitqScanKernel& rabitq_scan_scalar() {
  static const RabitqScanKernel k{scalar_tables, scalar_scan};
  return k;
}

const RabitqScanKernel& rabitq_scan_kernel(SimdLevel level) {
#ifdef RAGCORE_X86
  if (level == SimdLevel::Avx512 && simd_level_available(SimdLevel::Avx512)) return rabitq_scan_avx512();
#endif
  (void)level;
  return rabitq_scan_scalar();
}

}  // namespace ragcore
