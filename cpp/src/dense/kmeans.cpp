#include "ragcore/dense/kmeans.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "ragcore/dense/flat.h"
#include "ragcore/dense/nearest_l2.h"
#include "ragcore/util/parallel.h"
#include "ragcore/simd/simd.h"

namespace ragcore {
namespace {

// Points per task in the k-means++ distance update: large enough that spawning
// threads pays off, small enough to balance two cores.
constexpr size_t kPointsPerTask = 8192;
// k-means++ draws its centres from this many points per cluster (at most n).
constexpr size_t kSeedPoolPerCluster = 8;
// Largest squared norm of a training point (norm 1e18, the Python layer's bound):
// every squared distance between such points stays finite in float32.
constexpr double kMaxKMeansSqNorm = 1e36;

const DenseKernels& kernels_for(int simd_level) {
  return dense_kernels(simd_level < 0 ? best_simd_level() : static_cast<SimdLevel>(simd_level));
}

// Draws an index with probability proportional to weight[i] (all >= 0).
size_t draw_weighted(const std::vector<float>& weight, std::mt19937_64& rng) {
  double total = 0.0;
  for (float w : weight) total += w;
  if (!(total > 0.0)) return std::uniform_int_distribution<size_t>(0, weight.size() - 1)(rng);
  double target = std::uniform_real_distribution<double>(0.0, total)(rng);
  for (size_t i = 0; i < weight.size(); ++i) {
    target -= weight[i];
    if (target < 0.0) return i;
  }
  // Rounding left a remainder: the last point with weight.
  for (size_t i = weight.size(); i-- > 0;)
    if (weight[i] > 0.0f) return i;
  return weight.size() - 1;
}

class KMeans {
 public:
  KMeans(const float* x, size_t n, size_t d, const KMeansParams& p, float* centroids)
      : x_(x), n_(n), d_(d), p_(p), c_(centroids), kern_(kernels_for(p.simd_level)),
        rng_(p.seed), labels_(n), dist_(n), x_norms_(n), c_norms_(p.k) {
    row_sq_norms(x, n, d, x_norms_.data());
  }

  KMeansResult run() {
    if (p_.init == KMeansInit::KMeansPlusPlus) {
      init_plus_plus();
    } else {
      init_random();
    }
    if (p_.spherical) to_unit_norm(0, p_.k);
    KMeansResult result;
    result.objective.push_back(assign());
    for (int it = 0; it < p_.max_iter; ++it) {
      result.reseeded += update();
      ++result.iterations;
      const double before = result.objective.back();
      const double after = assign();
      result.objective.push_back(after);
      if (before - after <= p_.tol * before) break;  // converged (or exact: before == 0)
    }
    return result;
  }

 private:
  const float* point(size_t i) const { return x_ + i * d_; }
  float* centroid(size_t c) { return c_ + c * d_; }

  // Spherical k-means: centroids c0..c1-1 scaled to norm 1 (a zero one is left).
  void to_unit_norm(size_t c0, size_t c1) {
    for (size_t c = c0; c < c1; ++c) {
      double sq = 0.0;
      for (size_t p = 0; p < d_; ++p) sq += static_cast<double>(centroid(c)[p]) * centroid(c)[p];
      if (!(sq > 0.0)) continue;
      const double scale = 1.0 / std::sqrt(sq);
      for (size_t p = 0; p < d_; ++p) centroid(c)[p] = static_cast<float>(centroid(c)[p] * scale);
    }
  }

  // `count` distinct point numbers, by a seeded partial shuffle.
  std::vector<size_t> distinct_points(size_t count) {
    std::vector<size_t> order(n_);
    std::iota(order.begin(), order.end(), size_t{0});
    for (size_t c = 0; c < count; ++c)
      std::swap(order[c], order[std::uniform_int_distribution<size_t>(c, n_ - 1)(rng_)]);
    order.resize(count);
    return order;
  }

  void init_random() {
    const std::vector<size_t> chosen = distinct_points(p_.k);
    for (size_t c = 0; c < p_.k; ++c) std::copy(point(chosen[c]), point(chosen[c]) + d_, centroid(c));
  }

  // k-means++ (Arthur & Vassilvitskii 2007): each next centre is a point drawn
  // with probability proportional to its squared distance to the nearest centre.
  // Drawn from a seeded pool of kSeedPoolPerCluster * k points: each draw reads
  // the whole pool, so over all points seeding would cost k passes over the data.
  void init_plus_plus() {
    std::vector<size_t> pool_points = distinct_points(std::min(n_, kSeedPoolPerCluster * p_.k));
    std::sort(pool_points.begin(), pool_points.end());
    const size_t m = pool_points.size();
    std::vector<float> pool(m * d_), pool_norms(m);
    for (size_t i = 0; i < m; ++i) {
      std::copy(point(pool_points[i]), point(pool_points[i]) + d_, pool.data() + i * d_);
      pool_norms[i] = x_norms_[pool_points[i]];
    }
    std::vector<float> nearest(m, std::numeric_limits<float>::infinity());
    std::vector<float> dots(m);
    const size_t tasks = (m + kPointsPerTask - 1) / kPointsPerTask;
    size_t chosen = std::uniform_int_distribution<size_t>(0, m - 1)(rng_);
    for (size_t c = 0; c < p_.k; ++c) {
      std::copy(pool.data() + chosen * d_, pool.data() + (chosen + 1) * d_, centroid(c));
      const float* centre = centroid(c);
      const float centre_norm = pool_norms[chosen];
      parallel_for(tasks, p_.n_threads, [&](size_t task, int) {
        const size_t i0 = task * kPointsPerTask, i1 = std::min(m, i0 + kPointsPerTask);
        kern_.dot_rows[static_cast<int>(Storage::F32)](centre, pool.data() + i0 * d_, d_, i1 - i0,
                                                       d_, dots.data() + i0);
        for (size_t i = i0; i < i1; ++i) {
          const float dist = std::max(0.0f, pool_norms[i] - 2.0f * dots[i] + centre_norm);
          nearest[i] = std::min(nearest[i], dist);
        }
      });
      if (c + 1 < p_.k) chosen = draw_weighted(nearest, rng_);
    }
  }

  // Assignment step; returns the objective.
  double assign() {
    row_sq_norms(c_, p_.k, d_, c_norms_.data());
    nearest_l2(x_, n_, d_, d_, c_, c_norms_.data(), p_.k, x_norms_.data(), p_.n_threads,
               p_.simd_level, labels_.data(), dist_.data());
    double total = 0.0;
    for (float v : dist_) total += v;
    return total;
  }

  // Update step: each centroid becomes the mean of its points; an empty
  // cluster takes the point farthest from its own centroid among the points of
  // clusters with more than one. Returns the number of clusters re-seeded.
  size_t update() {
    const size_t k = p_.k;
    std::vector<size_t> start(k + 1, 0);
    // A label outside [0, k) (no finite distance: kmeans_train's checks rule it
    // out) is never used as an index; such a point belongs to no cluster.
    auto valid = [k](int64_t label) { return label >= 0 && static_cast<size_t>(label) < k; };
    for (int64_t label : labels_)
      if (valid(label)) ++start[label + 1];
    for (size_t c = 0; c < k; ++c) start[c + 1] += start[c];
    std::vector<size_t> members(n_);
    std::vector<size_t> fill(start.begin(), start.end() - 1);
    for (size_t i = 0; i < n_; ++i)
      if (valid(labels_[i])) members[fill[labels_[i]]++] = i;

    parallel_for(k, p_.n_threads, [&](size_t c, int) {
      if (start[c] == start[c + 1]) return;
      std::vector<double> sum(d_, 0.0);
      for (size_t m = start[c]; m < start[c + 1]; ++m) {
        const float* x = point(members[m]);
        for (size_t p = 0; p < d_; ++p) sum[p] += x[p];
      }
      const double count = static_cast<double>(start[c + 1] - start[c]);
      for (size_t p = 0; p < d_; ++p) centroid(c)[p] = static_cast<float>(sum[p] / count);
    });
    const size_t reseeded = reseed_empty(start);
    if (p_.spherical) to_unit_norm(0, k);
    return reseeded;
  }

  size_t reseed_empty(const std::vector<size_t>& start) {
    std::vector<size_t> empty;
    for (size_t c = 0; c < p_.k; ++c)
      if (start[c] == start[c + 1]) empty.push_back(c);
    if (empty.empty()) return 0;
    std::vector<size_t> size(p_.k);
    for (size_t c = 0; c < p_.k; ++c) size[c] = start[c + 1] - start[c];
    std::vector<size_t> far(n_);
    std::iota(far.begin(), far.end(), size_t{0});
    std::stable_sort(far.begin(), far.end(), [&](size_t a, size_t b) { return dist_[a] > dist_[b]; });
    size_t next = 0;
    for (size_t c : empty) {
      while (next < n_ && (labels_[far[next]] < 0 || size[labels_[far[next]]] <= 1)) ++next;
      if (next == n_) break;  // fewer distinct points than clusters: leave it
      const size_t i = far[next++];
      --size[labels_[i]];
      std::copy(point(i), point(i) + d_, centroid(c));
    }
    return empty.size();
  }

  const float* x_;
  size_t n_, d_;
  KMeansParams p_;
  float* c_;
  const DenseKernels& kern_;
  std::mt19937_64 rng_;
  std::vector<int64_t> labels_;
  std::vector<float> dist_;
  std::vector<float> x_norms_;
  std::vector<float> c_norms_;
};

}  // namespace

void row_sq_norms(const float* x, size_t n, size_t d, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const float* row = x + i * d;
    float s = 0.0f;
    for (size_t p = 0; p < d; ++p) s += row[p] * row[p];
    out[i] = s;
  }
}

void nearest_centroids(const float* queries, size_t nq, size_t query_stride, size_t d,
                       const float* centroids, const float* centroid_sq_norms, size_t k,
                       size_t k_best, int n_threads, int simd_level, int64_t* out_ids,
                       float* out_scores) {
  FlatSearchArgs a;
  a.corpus = centroids;
  a.n = k;
  a.d = d;
  a.corpus_stride = d;
  a.sq_norms = centroid_sq_norms;
  a.metric = Metric::L2;
  a.queries = queries;
  a.nq = nq;
  a.query_stride = query_stride;
  a.k = k_best;
  a.out_scores = out_scores;
  a.out_ids = out_ids;
  a.n_threads = n_threads;
  a.simd_level = simd_level;
  flat_search(a);
}

void assign_nearest(const float* x, size_t n, size_t d, const float* centroids,
                    const float* centroid_sq_norms, size_t k, int n_threads, int simd_level,
                    int64_t* out_label, float* out_dist) {
  nearest_l2(x, n, d, d, centroids, centroid_sq_norms, k, nullptr, n_threads, simd_level,
             out_label, out_dist);
}

KMeansResult kmeans_train(const float* x, size_t n, size_t d, const KMeansParams& params,
                          float* centroids) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("kmeans: " + what); };
  if (d == 0) fail("d must be >= 1");
  if (params.k == 0) fail("k must be >= 1");
  if (params.k > n) fail("k = " + std::to_string(params.k) + " exceeds the " + std::to_string(n) + " points");
  if (params.max_iter < 0) fail("max_iter must be >= 0");
  if (!x || !centroids) fail("null pointer");
  // A NaN or infinite point makes distances NaN, and so does a finite point whose
  // squared norm overflows float32: assignment would leave it without a centroid.
  for (size_t i = 0; i < n; ++i) {
    double sq = 0.0;
    for (size_t p = 0; p < d; ++p) sq += static_cast<double>(x[i * d + p]) * x[i * d + p];
    if (!(sq <= kMaxKMeansSqNorm))
      fail("point " + std::to_string(i) + " is not finite or has norm above 1e18");
  }
  return KMeans(x, n, d, params, centroids).run();
}

}  // namespace ragcore
