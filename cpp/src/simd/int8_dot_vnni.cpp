// The AVX-512 VNNI int8 kernel (int8_dot.h), compiled with -mavx512f -mavx512bw -mavx512vnni.
#include "int8_dot_impl.h"

namespace ragcore {
extern const Int8Kernel kInt8Avx512Vnni = {"avx512vnni", int8_impl::dot_gather<true>};
}  // namespace ragcore
