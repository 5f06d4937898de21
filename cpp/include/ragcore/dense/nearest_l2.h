// Nearest of k centroids (squared L2) for many rows at once: the assignment step of
// k-means and of IVF adds, as faiss's exhaustive_L2sqr_blas does it, i.e. as a matrix
// product in cache-sized tiles. The centroids are packed once per call into panels
// of 2 SIMD widths (transposed: per dimension, the panel's centroids side by side);
// a register block of rows times one panel accumulates <x_i, c_j> by FMAs over the
// dimensions in order, and ||c_j||^2 - 2 <x_i, c_j> is compared with the row's best
// so far (strictly smaller wins: ties go to the lower centroid number).
//
// Each row's result depends on that row alone (not on the tile, the block or the
// thread that computed it), so it is the same for every n_threads. AVX2 and AVX-512
// run the same FMAs in the same order per pair (the same bits); scalar multiplies and
// adds separately, so it may differ in the last bits, as flat_search (which sums in
// another order) may.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ragcore {

// x: n rows of d float32 (row stride ldx); centroids: k rows of d (stride d) and their
// squared norms; x_sq_norms: the rows' squared norms, or null (then computed).
// out_label[i]: the nearest centroid, -1 if no distance is finite (a NaN row);
// out_dist[i]: ||x_i||^2 + ||c||^2 - 2 <x_i, c> of it, clamped at 0.
// simd_level < 0: the best available. Throws std::invalid_argument on bad arguments.
void nearest_l2(const float* x, size_t n, size_t ldx, size_t d, const float* centroids,
                const float* centroid_sq_norms, size_t k, const float* x_sq_norms,
                int n_threads, int simd_level, int64_t* out_label, float* out_dist);

}  // namespace ragcore
