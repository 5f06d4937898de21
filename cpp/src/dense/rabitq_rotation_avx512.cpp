// The FHT-Kac rotation compiled for AVX-512 (the loops of rabitq_rotation_impl.h,
// vectorised by the compiler at this file's target width).
#include "ragcore/dense/rabitq_rotation.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ragcore::rabitq_rotation_detail {
namespace avx512 {
#include "rabitq_rotation_impl.h"
}  // namespace avx512

RotateOne rotate_avx512() { return avx512::rotate_one_impl; }

}  // namespace ragcore::rabitq_rotation_detail
