// HNSW graph index (Malkov and Yashunin, "Efficient and robust approximate
// nearest neighbor search using Hierarchical Navigable Small World graphs", 2018).
//
// A node lives in a slot; slots freed by remove() are reused by later adds, and
// every edge into a removed node is replaced (its neighbours are re-linked to the
// removed node's neighbours, chosen by the same heuristic as at insertion), so
// removed nodes are never traversed and their memory comes back.
//
// Scores are "higher is better" as everywhere in ragcore: inner product, or
// 2<q,x> - |x|^2 - |q|^2 (minus the squared L2 distance), computed with the
// DenseKernels' dot_rows of the storage, so a vector's score is the one
// FlatIndex's scan computes for it.
//
// Concurrency: add/remove take the index's lock exclusively (add one chunk of
// rows at a time, so searches interleave with a long add); searches share it.
// Inside one add, threads insert concurrently under per-node locks (the scheme
// of hnswlib); with one thread the graph depends only on the seed and the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "ragcore/dense/types.h"
#include "ragcore/simd/int8_dot.h"
#include "ragcore/simd/simd.h"
#include "ragcore/util/filter.h"
#include "ragcore/util/large_pages.h"

namespace ragcore {

struct HnswParams {
  size_t d = 0;
  Metric metric = Metric::InnerProduct;
  Storage storage = Storage::F32;  // F32, F16 or BF16
  size_t M = 16;                   // 2..512; neighbours per node on upper levels, 2M on level 0
  size_t ef_construction = 200;    // >= 1; candidates kept while linking a new node
  uint64_t seed = 0;               // draws the node levels
  int simd_level = -1;             // < 0: best available; else a SimdLevel
  // Searches walk on int8 codes of the vectors (int8_dot.h; F32 storage only), then
  // re-score the walk's candidates with the float32 vectors, so scores are exact.
  // Building and re-linking score the float32 vectors (the graph is the F32 one).
  bool int8_walk = false;
};

struct HnswSearchArgs {
  const float* queries = nullptr;  // nq rows of d float32 (normalised by the caller for cosine)
  size_t nq = 0;
  size_t query_stride = 0;         // elements between rows (>= d)
  size_t k = 0;                    // >= 1
  size_t ef = 0;                   // >= 1; the walk keeps max(ef, k) candidates
  AllowFilter allow;               // a mask by id (allow.by_row is not used)
  // Or the allowed ids as a list (ids too sparse for a mask by id); unknown ids
  // are ignored. Used when allow_ids is set.
  const int64_t* allow_ids = nullptr;
  size_t n_allow_ids = 0;
  // With a filter, allowed sets of at most this many live vectors are scored
  // exactly (a restrictive filter makes the walk visit most of the graph for few
  // results, and its recall collapse).
  size_t exact_below = 0;
  float* out_scores = nullptr;     // nq x k, best first, padded (-inf, -1)
  int64_t* out_ids = nullptr;      // nq x k
  int n_threads = 0;               // <= 0: all cores
};

// What a search did, for the caller's statistics.
struct HnswSearchStats {
  bool exact = false;  // the allowed set was scored exactly
  size_t allowed = 0;  // live vectors the filter allows (with a filter)
};

// The index as flat arrays (save/load). Slot s holds vector s; a free slot has
// level -1 and id -1. links0: slots x (1 + 2M) uint32 [count, neighbours...];
// upper: the level 1..L lists of each node, (1 + M) uint32 per level, node s's
// starting at upper_offsets[s] (slots + 1 offsets).
struct HnswArrays {
  size_t slots = 0;
  const void* vectors = nullptr;  // slots x d elements of the storage
  const float* sq_norms = nullptr;  // slots, L2 only (else nullptr)
  const int64_t* ids = nullptr;
  const int32_t* levels = nullptr;
  const uint32_t* links0 = nullptr;
  const uint32_t* upper = nullptr;
  size_t upper_len = 0;
  const int64_t* upper_offsets = nullptr;
  int64_t entry = -1;             // slot of the entry point, -1 when empty
  uint64_t rng_state = 0;         // of the level generator, so later adds draw as before
};

class HnswIndex {
 public:
  explicit HnswIndex(const HnswParams& p);

  // Adds n rows (storage elements, row stride `stride`) with external ids, which
  // must be unique and not in the index. sq_norms: n squared norms of the stored
  // values (L2 only, else nullptr).
  void add(const void* rows, size_t n, size_t stride, const int64_t* ids, const float* sq_norms,
           int n_threads);
  // Removes the nodes with these ids (all must be present) and re-links their
  // neighbours. Returns the count removed.
  size_t remove(const int64_t* ids, size_t n, int n_threads);

  HnswSearchStats search(const HnswSearchArgs& a) const;

  size_t size() const;   // live nodes
  size_t slots() const;  // slots in use or free
  size_t memory_bytes() const;
  std::vector<int64_t> slot_ids() const;  // the id of each slot, -1 for a free one
  const HnswParams& params() const { return p_; }

  // A consistent copy of the state (taken under the lock). The vectors are
  // copied out as well, so the caller may save them while adds continue.
  struct Snapshot {
    std::vector<uint8_t> vectors;
    std::vector<float> sq_norms;
    std::vector<int64_t> ids;
    std::vector<int32_t> levels;
    std::vector<uint32_t> links0, upper;
    std::vector<int64_t> upper_offsets;
    int64_t entry = -1;
    uint64_t rng_state = 0;
  };
  Snapshot snapshot() const;

  // Replaces the state with arrays read from a file; throws std::invalid_argument
  // naming the first inconsistency (a neighbour outside the index, a free slot
  // linked, a count above the degree, ...), leaving the index unchanged. With
  // borrow_vectors the index reads a.vectors in place (the caller keeps them
  // alive and unchanged); a later add copies them first.
  void restore(const HnswArrays& a, bool borrow_vectors);

 private:
  struct Scored {
    float score;
    uint32_t slot;
  };
  class WalkState;

  template <bool kLocked>
  void walk(const float* q, float qnorm, Scored entry, int level, size_t ef, WalkState& vis,
            const AllowFilter* allow, std::vector<Scored>& out) const;
  template <bool kLocked>
  Scored greedy(const float* q, float qnorm, Scored cur, int level, WalkState& ws) const;
  // ws.scores[j] = score of slots[j] for j < n, by the gathered kernel (score()'s bits).
  // With ws.coarse (an int8 search) the scores are the int8 codes' estimates.
  void score_slots(const float* q, float qnorm, const uint32_t* slots, size_t n,
                   WalkState& ws) const;
  float score_one(const float* q, float qnorm, uint32_t s, WalkState& ws) const;
  void encode_slot(uint32_t s);  // int8_walk: the codes of slot s's vector
  // The exact scores of found (an int8 walk's candidates), in place.
  void rescore(const float* q, float qnorm, std::vector<Scored>& found, WalkState& ws) const;
  void search_graph(const HnswSearchArgs& a) const;
  void search_exact(const HnswSearchArgs& a, const std::vector<uint32_t>& slots) const;
  // restore's second step: the checked arrays become the state, under the write lock.
  void adopt(const HnswArrays& a, bool borrow_vectors,
             std::unordered_map<int64_t, uint32_t>&& slot_of, int top);

  size_t degree(int level) const { return level == 0 ? 2 * p_.M : p_.M; }
  const uint8_t* row(uint32_t s) const { return vectors_ + static_cast<size_t>(s) * row_bytes_; }
  uint32_t* links(uint32_t s, int level);
  const uint32_t* links(uint32_t s, int level) const;
  float score(const float* q, float qnorm, uint32_t s) const;
  // Row s as float32: the row itself for F32 storage, else converted into buf.
  const float* as_f32(uint32_t s, std::vector<float>& buf) const;

  void reserve_slots(size_t slots);
  void own_vectors();
  void insert(uint32_t slot, int level, std::vector<float>& qbuf, WalkState& vis);
  // kept: links that stay; candidates are added to them up to m.
  void select_neighbors(std::vector<Scored>& cands, size_t m, std::vector<float>& buf,
                        std::vector<Scored> kept = {}) const;
  void link_back(uint32_t from, uint32_t to, float score, int level, std::vector<float>& buf);
  std::vector<Scored> relinked(uint32_t s, int level, const std::vector<uint8_t>& removed,
                               const AllowFilter& live, WalkState& vis, std::vector<float>& buf) const;
  void choose_entry();
  void connect_unreached();
  bool connect_unreached_once();

  HnswParams p_;
  const DenseKernels& kern_;
  const Int8Kernel& int8_kern_;
  size_t row_bytes_;
  int max_level_ = -1;
  int64_t entry_ = -1;

  // The arrays a walk reads at random: aligned rows on huge pages (large_pages.h).
  const uint8_t* vectors_ = nullptr;  // owned_.data() or borrowed
  LargeVector<uint8_t> owned_;
  bool borrowed_ = false;
  std::vector<float> sq_norms_;
  LargeVector<int8_t> codes_;      // int8_walk: slots x d codes, derived from the vectors
  std::vector<float> code_scale_;  // int8_walk: per slot, x ~ codes * scale / 127
  std::vector<int64_t> ids_;
  std::vector<int32_t> levels_;
  LargeVector<uint32_t> links0_;
  std::vector<std::vector<uint32_t>> upper_;
  std::unordered_map<int64_t, uint32_t> slot_of_;
  std::vector<uint32_t> free_slots_;  // descending, so the lowest free slot is reused first
  uint64_t rng_state_;

  std::unique_ptr<std::mutex[]> node_locks_;
  size_t n_node_locks_ = 0;
  std::mutex entry_lock_;
  mutable std::shared_mutex rw_;
};

}  // namespace ragcore
