// The fast-scan loop, shared by the scalar and the AVX2 build of pq4_scan.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ragcore/dense/pq4.h"

namespace ragcore {

void pq4_scan_scalar(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                     uint16_t* losses);
#ifdef RAGCORE_X86
void pq4_scan_avx2(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                   uint16_t* losses);
#endif

}  // namespace ragcore
