// The loop shared by the SIMD int8 kernels (int8_dot.h): four rows at a time (four
// independent chains), the next four rows' lines requested before this group is
// reduced, a scalar tail. Ops supplies one level's instructions:
//   kStep codes per step; Acc the accumulator; Query query(const int8_t*) the query's
//   codes of one step, prepared once for the four rows; Acc zero(); Acc madd(Acc,
//   const Query&, const int8_t* x); int32_t reduce(Acc).
// Each kernel file includes it with its own target flags, so its copy (internal
// linkage) holds only that level's instructions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ragcore {
namespace int8_impl {
namespace {

inline int32_t tail_sum(const int8_t* q, const int8_t* x, size_t from, size_t d) {
  int32_t acc = 0;
  for (size_t p = from; p < d; ++p) acc += static_cast<int32_t>(q[p]) * x[p];
  return acc;
}

template <class Ops>
void dot_gather_rows4(const int8_t* q, const int8_t* const* rows, size_t n, size_t d, int32_t* out) {
  const size_t full = d - d % Ops::kStep;
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    for (size_t r = j + 4; r < j + 8 && r < n; ++r)
      for (size_t line = 0; line < d; line += 64) __builtin_prefetch(rows[r] + line);
    const int8_t *x0 = rows[j], *x1 = rows[j + 1], *x2 = rows[j + 2], *x3 = rows[j + 3];
    typename Ops::Acc a0 = Ops::zero(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t p = 0; p < full; p += Ops::kStep) {
      const auto qv = Ops::query(q + p);
      a0 = Ops::madd(a0, qv, x0 + p);
      a1 = Ops::madd(a1, qv, x1 + p);
      a2 = Ops::madd(a2, qv, x2 + p);
      a3 = Ops::madd(a3, qv, x3 + p);
    }
    out[j] = Ops::reduce(a0) + tail_sum(q, x0, full, d);
    out[j + 1] = Ops::reduce(a1) + tail_sum(q, x1, full, d);
    out[j + 2] = Ops::reduce(a2) + tail_sum(q, x2, full, d);
    out[j + 3] = Ops::reduce(a3) + tail_sum(q, x3, full, d);
  }
  for (; j < n; ++j) {
    typename Ops::Acc a = Ops::zero();
    for (size_t p = 0; p < full; p += Ops::kStep) a = Ops::madd(a, Ops::query(q + p), rows[j] + p);
    out[j] = Ops::reduce(a) + tail_sum(q, rows[j], full, d);
  }
}

}  // namespace
}  // namespace int8_impl
}  // namespace ragcore
