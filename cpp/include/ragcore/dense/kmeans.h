// k-means (Lloyd) for the IVF coarse quantizer, on float32 rows, squared L2.
//
// Spherical (faiss's default for inner-product IVF): every centroid is scaled to
// unit norm after the initialisation and after each update. Squared L2 to unit
// centroids ranks them as the inner product does, and no centroid draws points
// merely by having a small norm: plain L2 k-means on high-dimensional data gives
// its largest clusters the centroids of smallest norm, which then win the
// assignment (and a query's probes) far more than their share.
//
// Deterministic for a seed, whatever the thread count: the assignment step is
// nearest_l2 (a blocked matrix-product kernel, ties to the lower centroid number;
// each row's result independent of the threads), and the update step sums each
// cluster's points in point order on one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ragcore {

// KMeansPlusPlus draws the k initial centres from a seeded pool of 8 k points;
// Random takes k distinct points.
enum class KMeansInit : int { KMeansPlusPlus = 0, Random = 1 };

struct KMeansParams {
  size_t k = 0;            // clusters, 1 <= k <= n
  int max_iter = 25;       // Lloyd iterations at most
  double tol = 1e-4;       // stop when the objective improves by less than tol (relative)
  uint64_t seed = 0;
  KMeansInit init = KMeansInit::KMeansPlusPlus;
  int n_threads = 0;       // <= 0: all cores
  int simd_level = -1;     // < 0: best available
  bool spherical = false;  // unit-norm centroids (see above)
};

struct KMeansResult {
  // Sum of squared distances of the points to their nearest centroid, after
  // each assignment step (the first is that of the initial centroids).
  std::vector<double> objective;
  int iterations = 0;      // update steps done
  size_t reseeded = 0;     // empty clusters given a new centre, over all iterations
};

// x: n rows of d float32 (row stride d). centroids: k x d output.
// Throws std::invalid_argument on bad arguments (k = 0, k > n, d = 0).
KMeansResult kmeans_train(const float* x, size_t n, size_t d, const KMeansParams& params,
                          float* centroids);

// The k_best nearest of k centroids (squared L2) to each of nq rows (row stride
// query_stride), through FlatIndex's search: out_ids[i * k_best + r] (-1 padding where a
// distance is NaN) and out_scores the same places' minus squared distances.
void nearest_centroids(const float* queries, size_t nq, size_t query_stride, size_t d,
                       const float* centroids, const float* centroid_sq_norms, size_t k,
                       size_t k_best, int n_threads, int simd_level, int64_t* out_ids,
                       float* out_scores);

// Nearest centroid (squared L2) of each row, by nearest_l2: out_label[i] in [0, k), and
// out_dist[i] its squared distance (clamped at 0). centroid_sq_norms: k squared norms.
void assign_nearest(const float* x, size_t n, size_t d, const float* centroids,
                    const float* centroid_sq_norms, size_t k, int n_threads, int simd_level,
                    int64_t* out_label, float* out_dist);

// Squared norm of each of n rows (sequential float sum, as the searches compute it).
void row_sq_norms(const float* x, size_t n, size_t d, float* out);

}  // namespace ragcore
