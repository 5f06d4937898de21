// The AVX-512BW int8 kernel (int8_dot.h), compiled with -mavx512f -mavx512bw.
#include "int8_dot_impl.h"

namespace ragcore {
extern const Int8Kernel kInt8Avx512Bw = {"avx512bw", int8_impl::dot_gather<false>};
}  // namespace ragcore
