// The FHT-Kac rotation (see rabitq_rotation.h): the baseline build of its loops,
// the run-time choice of build, and the rows of a batch over threads.
#include "ragcore/dense/rabitq_rotation.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <algorithm>
#include <stdexcept>

#include "ragcore/util/parallel.h"

namespace ragcore {
namespace rabitq_rotation_detail {
namespace scalar {
#include "rabitq_rotation_impl.h"
}  // namespace scalar

RotateOne rotate_scalar() { return scalar::rotate_one_impl; }
}  // namespace rabitq_rotation_detail

namespace {

rabitq_rotation_detail::RotateOne pick(SimdLevel level) {
#ifdef RAGCORE_X86
  if (level == SimdLevel::Avx512 && simd_level_available(SimdLevel::Avx512))
    return rabitq_rotation_detail::rotate_avx512();
#endif
  (void)level;
  return rabitq_rotation_detail::rotate_scalar();
}

void check(size_t d, size_t dp) {
  if (d == 0 || dp < d || dp % 8 != 0)
    throw std::invalid_argument("rabitq_fht_rotate: dp must be a multiple of 8 and >= d >= 1");
}

}  // namespace

void rabitq_fht_rotate_one(const uint8_t* signs, size_t rounds, size_t d, size_t dp,
                           const float* in, float* out, SimdLevel level) {
  check(d, dp);
  pick(level)(signs, rounds, d, dp, in, out);
}

void rabitq_fht_rotate(const uint8_t* signs, size_t rounds, size_t d, size_t dp, const float* in,
                       size_t n, float* out, int n_threads, SimdLevel level) {
  check(d, dp);
  const auto rotate = pick(level);
  constexpr size_t kRowsPerTask = 64;
  const size_t tasks = (n + kRowsPerTask - 1) / kRowsPerTask;
  auto run = [&](size_t task, int) {
    const size_t end = std::min(n, (task + 1) * kRowsPerTask);
    for (size_t i = task * kRowsPerTask; i < end; ++i)
      rotate(signs, rounds, d, dp, in + i * d, out + i * dp);
  };
  if (tasks <= 1 || resolve_threads(n_threads) == 1) {
    for (size_t task = 0; task < tasks; ++task) run(task, 0);
  } else {
    parallel_for(tasks, n_threads, run);
  }
}

}  // namespace ragcore
