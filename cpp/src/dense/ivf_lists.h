// What the inverted-file searches share (IVFIndex's float storages in ivf.cpp and its
// 4-bit PQ storage in ivf_pq4.cpp): the coarse step and the queries grouped by list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ragcore/dense/kmeans.h"

namespace ragcore {

// probes[i * k + r]: the r-th nearest list of query i by squared L2 to the centroids
// (how vectors were assigned); -1 padding where a distance is NaN (callers skip it, see
// valid_list).
inline void coarse_probes(const float* centroids, const float* centroid_sq_norms, size_t nlist,
                          size_t d, const float* queries, size_t nq, size_t query_stride,
                          size_t k, int n_threads, int simd_level, int64_t* probes) {
  std::vector<float> dist(nq * k);
  nearest_centroids(queries, nq, query_stride, d, centroids, centroid_sq_norms, nlist, k,
                    n_threads, simd_level, probes, dist.data());
}

inline bool valid_list(int64_t l, size_t nlist) { return l >= 0 && static_cast<size_t>(l) < nlist; }

// The queries that probe each list: those of list l are who[start[l] .. start[l + 1]),
// in query order (a counting sort of the first `used` probes of each of nq queries,
// probes[i * stride + r]; invalid probes skipped).
struct QueriesByList {
  std::vector<size_t> start;
  std::vector<uint32_t> who;

  QueriesByList(const int64_t* probes, size_t nq, size_t stride, size_t used, size_t nlist)
      : start(nlist + 1, 0) {
    for (size_t i = 0; i < nq; ++i)
      for (size_t r = 0; r < used; ++r)
        if (valid_list(probes[i * stride + r], nlist)) ++start[probes[i * stride + r] + 1];
    for (size_t l = 0; l < nlist; ++l) start[l + 1] += start[l];
    who.resize(start[nlist]);
    std::vector<size_t> fill(start.begin(), start.end() - 1);
    for (size_t i = 0; i < nq; ++i)
      for (size_t r = 0; r < used; ++r)
        if (valid_list(probes[i * stride + r], nlist))
          who[fill[probes[i * stride + r]]++] = static_cast<uint32_t>(i);
  }

  size_t count(size_t l) const { return start[l + 1] - start[l]; }
  const uint32_t* of(size_t l) const { return who.data() + start[l]; }
};

}  // namespace ragcore
