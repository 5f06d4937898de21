// bf16 dot products: query rounding and layout, the scalar level, and the run-time choice.
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bf16_dot_impl.h"
#include "ragcore/simd/simd.h"

#ifdef RAGCORE_X86
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ragcore {
namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// vdpbf16ps reads denormal inputs as zero and flushes denormal results to zero.
float flush_denormal(float f) {
  return std::fabs(f) < 1.17549435e-38f ? std::copysign(0.0f, f) : f;
}

float bf16_value(uint16_t b) { return flush_denormal(bits_to_float(static_cast<uint32_t>(b) << 16)); }

// One (query, row) pair as the kernels reduce it: one vdpbf16ps lane runs the row's whole
// chain, pair by pair (elements 2p, 2p + 1) up to the padded depth, the odd product first,
// each added with one rounding. No horizontal sum: the lanes of a step are different rows.
float scalar_dot(const uint16_t* q, const uint16_t* x, size_t d, size_t depth) {
  float acc = 0.0f;
  for (size_t p = 0; p < depth; p += 2) {
    const float x_even = p < d ? bf16_value(x[p]) : 0.0f;
    const float x_odd = p + 1 < d ? bf16_value(x[p + 1]) : 0.0f;
    acc = flush_denormal(std::fma(x_odd, bf16_value(q[p + 1]), acc));
    acc = flush_denormal(std::fma(x_even, bf16_value(q[p]), acc));
  }
  return acc;
}

void scalar_dot_rows_batch(const Bf16Queries& q, size_t i0, size_t nq, const uint16_t* x,
                           size_t ldx, size_t n_rows, size_t d, float* out, size_t ldo) {
  for (size_t r = 0; r < n_rows; ++r)
    for (size_t i = i0; i < i0 + nq; ++i)
      out[r * ldo + (i - i0)] = scalar_dot(bf16_query_row(q, i), x + r * ldx, d, q.depth);
}

#ifdef RAGCORE_X86
// CPUID leaf 7: AVX512_BF16 is subleaf 1 EAX bit 5; AMX-BF16 and AMX-TILE are subleaf 0
// EDX bits 22 and 24.
bool cpuid_bit(unsigned subleaf, int reg, int bit) {
  unsigned r[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(7, subleaf, &r[0], &r[1], &r[2], &r[3])) return false;
  return (r[reg] >> bit) & 1u;
}

bool amx_permitted() {
  // Linux enables the tile data state per process, on request.
  constexpr long kReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  static const bool granted = syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  return granted;
}
#endif

}  // namespace

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

Bf16Queries prepare_bf16_queries(Bf16Level level, const float* q, size_t ldq, size_t nq,
                                 size_t d) {
  Bf16Queries out;
  out.level = level;
  out.nq = nq;
  out.depth = bf16_depth(d);
  if (level != Bf16Level::Amx) {
    out.data.assign(nq * out.depth, 0);
    for (size_t i = 0; i < nq; ++i)
      for (size_t p = 0; p < d; ++p) out.data[i * out.depth + p] = float_to_bf16(q[i * ldq + p]);
    return out;
  }
  const size_t blocks = (nq + kBf16TileQueries - 1) / kBf16TileQueries;
  out.data.assign(blocks * kBf16TileQueries * out.depth, 0);
  for (size_t i = 0; i < nq; ++i) {
    const size_t block = i / kBf16TileQueries, column = i % kBf16TileQueries;
    for (size_t p = 0; p < d; ++p) {
      const size_t chunk = p / kBf16Chunk, pair = (p % kBf16Chunk) / 2;
      uint16_t* tile = const_cast<uint16_t*>(bf16_query_tile(out, block, chunk));
      tile[(pair * kBf16TileQueries + column) * 2 + p % 2] = float_to_bf16(q[i * ldq + p]);
    }
  }
  return out;
}

extern const Bf16Kernels kBf16ScalarKernels = {Bf16Level::Scalar, "scalar",
                                               scalar_dot_rows_batch};

bool bf16_level_available(Bf16Level level) {
  switch (level) {
    case Bf16Level::Scalar:
      return true;
#ifdef RAGCORE_X86
    case Bf16Level::Avx512Bf16:
      return simd_level_available(SimdLevel::Avx512) && cpuid_bit(1, 0, 5);
    case Bf16Level::Amx:
      return bf16_level_available(Bf16Level::Avx512Bf16) && cpuid_bit(0, 3, 22) &&
             cpuid_bit(0, 3, 24) && amx_permitted();
#endif
    default:
      return false;
  }
}

namespace {

// A small generator of values in [-1, 1): the self-check's problem is the same every run.
float next_value(uint32_t& state) {
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
}

}  // namespace

bool bf16_level_self_check(Bf16Level level, bool corrupt_one_score) {
  // Three query tiles (the last part-filled), rows in whole and part tiles, a tail chunk.
  constexpr size_t nq = 37, n_rows = 41, d = 77;
  uint32_t state = 0x9E3779B9u;
  std::vector<float> q(nq * d);
  for (float& v : q) v = next_value(state);
  std::vector<uint16_t> x(n_rows * d);
  for (uint16_t& v : x) v = float_to_bf16(next_value(state));
  const Bf16Kernels& kern = bf16_kernels(level);
  const Bf16Queries prepared = prepare_bf16_queries(level, q.data(), d, nq, d);
  std::vector<float> out(n_rows * nq);
  kern.dot_rows_batch(prepared, 0, nq, x.data(), d, n_rows, d, out.data(), nq);
  if (corrupt_one_score) out[n_rows * nq / 2] += 0.01f;
  // Against the exact sum of the same bf16 products: float32 summation in any order stays
  // within (number of terms) * 2**-24 * sum |products|, doubled as the tests double it.
  const double depth = static_cast<double>(bf16_depth(d));
  for (size_t r = 0; r < n_rows; ++r)
    for (size_t i = 0; i < nq; ++i) {
      double exact = 0.0, magnitude = 0.0;
      for (size_t p = 0; p < d; ++p) {
        const double product = static_cast<double>(bf16_value(float_to_bf16(q[i * d + p]))) *
                               bf16_value(x[r * d + p]);
        exact += product;
        magnitude += std::fabs(product);
      }
      const double bound = 2.0 * depth * std::ldexp(1.0, -24) * magnitude + 1e-30;
      if (!(std::fabs(out[r * nq + i] - exact) <= bound)) return false;  // (NaN fails too)
    }
  return true;
}

Bf16Level best_bf16_level() {
  static const Bf16Level best = [] {
    // AMX only once its kernel has passed the self-check here: that code has not run on
    // every CPU it may meet, and a wrong tile set-up would be a silent wrong answer.
    if (bf16_level_available(Bf16Level::Amx) && bf16_level_self_check(Bf16Level::Amx))
      return Bf16Level::Amx;
    if (bf16_level_available(Bf16Level::Avx512Bf16)) return Bf16Level::Avx512Bf16;
    return Bf16Level::Scalar;
  }();
  return best;
}

const Bf16Kernels& bf16_kernels(Bf16Level level) {
  if (!bf16_level_available(level))
    throw std::invalid_argument("bf16 level " + std::to_string(static_cast<int>(level)) +
                                " is not available on this CPU or build");
  switch (level) {
#ifdef RAGCORE_X86
    case Bf16Level::Avx512Bf16:
      return kBf16Avx512Kernels;
    case Bf16Level::Amx:
      return kBf16AmxKernels;
#endif
    default:
      return kBf16ScalarKernels;
  }
}

}  // namespace ragcore
