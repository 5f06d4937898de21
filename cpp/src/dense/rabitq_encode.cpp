// RaBitQ quantiser: the grid vector whose direction is closest to a rotated
// residual, and the factors of its estimator (see ragcore/dense/rabitq.h).
//
// The magnitudes on the grid are m_i + 1/2 (m_i = 0 .. 2^(bits-1) - 1), signs
// those of the residual. Scaling the residual by t and rounding moves m_i up by
// one at t = m / |v_i|; the extended-RaBitQ paper's observation is that the best
// code is reached at one of these critical points, so walking them in order of t,
// updating <y, |v|> and |y|^2 by one term each, finds the best code among those
// reached before the largest coordinate would be clipped.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "ragcore/dense/rabitq.h"
#include "ragcore/util/parallel.h"

namespace ragcore {
namespace {

struct Step {
  float t;         // the scale at which dimension `dim` moves one level up
  uint32_t dim;
};

// Levels m_i above the lowest of each dimension for the best code of v; returns
// (<y, |v|>, |y|^2) of that code (y magnitudes m_i + 1/2).
std::pair<double, double> best_levels(const float* v, size_t dp, size_t bits,
                                      std::vector<Step>& steps, std::vector<uint16_t>& level) {
  std::fill(level.begin(), level.end(), 0);
  double dot = 0.0;
  for (size_t p = 0; p < dp; ++p) dot += 0.5 * std::fabs(v[p]);
  double sq = 0.25 * static_cast<double>(dp);
  const uint32_t top = (1u << (bits - 1)) - 1;  // highest m
  if (top == 0) return {dot, sq};
  steps.clear();
  float a_max = 0.0f;
  for (size_t p = 0; p < dp; ++p) a_max = std::max(a_max, std::fabs(v[p]));
  // Scales up to the one that lifts the largest coordinate to the top level (the
  // extended-RaBitQ search range): beyond it, only clipping would change.
  const float t_end = static_cast<float>(top) / a_max;
  for (size_t p = 0; p < dp; ++p) {
    const float a = std::fabs(v[p]);
    if (a == 0.0f) continue;  // stays at the lowest level whatever the scale
    for (uint32_t m = 1; m <= top; ++m) {
      const float t = static_cast<float>(m) / a;
      if (t > t_end) break;
      steps.push_back({t, static_cast<uint32_t>(p)});
    }
  }
  std::sort(steps.begin(), steps.end(),
            [](const Step& x, const Step& y) { return x.t < y.t || (x.t == y.t && x.dim < y.dim); });
  double best = dot / std::sqrt(sq), best_dot = dot, best_sq = sq;
  size_t best_steps = 0;
  std::vector<uint16_t>& m = level;
  for (size_t s = 0; s < steps.size(); ++s) {
    const uint32_t p = steps[s].dim;
    dot += std::fabs(v[p]);
    sq += 2.0 * (++m[p]);  // (m + 1/2)^2 - (m - 1/2)^2 = 2 m
    const double cosine = dot / std::sqrt(sq);
    if (cosine > best) best = cosine, best_dot = dot, best_sq = sq, best_steps = s + 1;
  }
  std::fill(m.begin(), m.end(), 0);
  for (size_t s = 0; s < best_steps; ++s) ++m[steps[s].dim];
  return {best_dot, best_sq};
}

// What the factors need of a row: |v|^2, <v, c>, <y, |v|>, |y|^2 and <y, c>.
struct Sums {
  double r2 = 0.0, rc = 0.0, y_dot_abs = 0.0, y_sq = 0.0, y_dot_c = 0.0;
};

// Any bits: the best levels first, then the bit planes.
Sums planes_multi_bit(const float* v, const float* c, size_t dp, size_t bits, uint8_t* row,
                      std::vector<Step>& steps, std::vector<uint16_t>& level) {
  Sums s;
  for (size_t p = 0; p < dp; ++p) {
    s.r2 += static_cast<double>(v[p]) * v[p];
    s.rc += static_cast<double>(v[p]) * c[p];
  }
  std::tie(s.y_dot_abs, s.y_sq) = best_levels(v, dp, bits, steps, level);
  const uint32_t mid = 1u << (bits - 1);  // code of magnitude 1/2, positive side
  const size_t plane = dp / 8;
  std::memset(row, 0, bits * plane);
  for (size_t p = 0; p < dp; ++p) {
    const bool negative = v[p] < 0.0f;
    const uint32_t code = negative ? mid - 1 - level[p] : mid + level[p];
    const double y = negative ? -(level[p] + 0.5) : level[p] + 0.5;
    s.y_dot_c += y * c[p];
    for (size_t b = 0; b < bits; ++b)
      if (code >> b & 1u) row[b * plane + p / 8] |= static_cast<uint8_t>(1u << (p % 8));
  }
  return s;
}

// 1 bit: y = sign(v) / 2 needs no search, so the five sums share one pass (each summed
// in the same order as planes_multi_bit sums it: the same bits, a third of the time).
Sums planes_one_bit(const float* v, const float* c, size_t dp, uint8_t* row) {
  Sums s;
  s.y_sq = 0.25 * static_cast<double>(dp);
  std::memset(row, 0, dp / 8);
  for (size_t p = 0; p < dp; ++p) {
    const bool negative = v[p] < 0.0f;
    s.r2 += static_cast<double>(v[p]) * v[p];
    s.rc += static_cast<double>(v[p]) * c[p];
    s.y_dot_abs += 0.5 * std::fabs(v[p]);
    s.y_dot_c += (negative ? -0.5 : 0.5) * c[p];
    if (!negative) row[p / 8] |= static_cast<uint8_t>(1u << (p % 8));
  }
  return s;
}

void encode_one(const float* v, const float* c, size_t dp, size_t bits, uint8_t* row,
                float* cosine, std::vector<Step>& steps, std::vector<uint16_t>& level) {
  const Sums s = bits == 1 ? planes_one_bit(v, c, dp, row)
                           : planes_multi_bit(v, c, dp, bits, row, steps, level);
  const double r2 = s.r2, rc = s.rc, y_dot_abs = s.y_dot_abs, y_sq = s.y_sq, y_dot_c = s.y_dot_c;
  const size_t plane = dp / 8;
  float factors[kRabitqFactors] = {0.0f, 0.0f, 0.0f};
  double cos_yu = 1.0;
  if (r2 > 0.0 && y_dot_abs > 0.0) {
    // <y, v> = y_dot_abs: the signs of y are those of v.
    const double scale = r2 / y_dot_abs;
    cos_yu = y_dot_abs / std::sqrt(y_sq * r2);
    cos_yu = std::min(cos_yu, 1.0);
    factors[0] = static_cast<float>(rc - scale * y_dot_c);
    factors[1] = static_cast<float>(scale);
    factors[2] = static_cast<float>(std::sqrt(r2) * std::sqrt(1.0 - cos_yu * cos_yu) / cos_yu /
                                    std::sqrt(static_cast<double>(dp) - 1.0));
  }  // else r = 0: the vector is its centroid, estimated exactly by <c, q> + 0
  std::memcpy(row + bits * plane, factors, sizeof(factors));
  if (cosine) *cosine = static_cast<float>(cos_yu);
}

}  // namespace

void rabitq_encode(const float* rot_residuals, const float* rot_centroids, const int64_t* labels,
                   size_t n, size_t nlist, size_t dp, size_t bits, int n_threads, uint8_t* rows,
                   float* cosines) {
  if (bits < 1 || bits > 8) throw std::invalid_argument("rabitq_encode: bits must be in [1, 8]");
  if (dp == 0 || dp % 8 != 0) throw std::invalid_argument("rabitq_encode: dp must be a positive multiple of 8");
  for (size_t j = 0; j < n; ++j)
    if (labels[j] < 0 || static_cast<size_t>(labels[j]) >= nlist)
      throw std::invalid_argument("rabitq_encode: a label is outside [0, nlist)");
  const size_t row_bytes = rabitq_row_bytes(dp, bits);
  const int threads = n < 64 ? 1 : resolve_threads(n_threads);
  const size_t chunk = 256;
  const size_t tasks = (n + chunk - 1) / chunk;
  parallel_for(tasks, threads, [&](size_t t, int) {
    std::vector<Step> steps;
    std::vector<uint16_t> level(dp);
    for (size_t j = t * chunk; j < std::min(n, (t + 1) * chunk); ++j)
      encode_one(rot_residuals + j * dp, rot_centroids + static_cast<size_t>(labels[j]) * dp, dp,
                 bits, rows + j * row_bytes, cosines ? cosines + j : nullptr, steps, level);
  });
}

}  // namespace ragcore
