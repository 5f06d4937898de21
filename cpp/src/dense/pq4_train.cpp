// The 4-bit PQ codebooks: one k-means of 16 centroids per sub-space, the sub-spaces in
// parallel (each k-means is tiny: thousands of rows of a few dimensions, so threads
// inside one would cost more in spawning than they save).
#include <stdexcept>
#include <vector>

#include "ragcore/dense/kmeans.h"
#include "ragcore/dense/pq4.h"
#include "ragcore/util/parallel.h"

namespace ragcore {

void pq4_train(const float* x, size_t n, size_t d, size_t m, uint64_t seed, int n_threads,
               float* books) {
  constexpr size_t kCodes = 16;
  if (m == 0 || m > 256 || d == 0 || d % m) throw std::invalid_argument("pq4_train: m must divide d and be 1..256");
  if (n < kCodes) throw std::invalid_argument("pq4_train: needs at least 16 rows");
  if (!x || !books) throw std::invalid_argument("pq4_train: null pointer");
  const size_t dsub = d / m;
  parallel_for(m, n_threads, [&](size_t j, int) {
    std::vector<float> part(n * dsub);
    for (size_t i = 0; i < n; ++i)
      for (size_t p = 0; p < dsub; ++p) part[i * dsub + p] = x[i * d + j * dsub + p];
    KMeansParams params;
    params.k = kCodes;
    params.seed = seed + j;  // unsigned: wraps mod 2^64, as the Python layer's seeds do
    params.n_threads = 1;
    kmeans_train(part.data(), n, dsub, params, books + j * kCodes * dsub);
  });
}

}  // namespace ragcore
