#include "ragcore/dense/hnsw.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>

#include "ragcore/topk/topk_batch.h"
#include "ragcore/topk/topk_queue.h"
#include "ragcore/util/parallel.h"

namespace ragcore {
namespace {

// Rows inserted per exclusive hold of the lock: searches wait at most one chunk.
constexpr size_t kAddChunk = 4096;
constexpr int kMaxLevel = 48;
constexpr size_t kMaxM = 512;  // bounds the walk's neighbour buffer
// A repaired list is chosen from a walk of this many times ef_construction: the
// heuristic then finds the farther, more diverse links that a node inserted into a
// sparser graph got, which a walk of ef_construction (the nearest nodes only) misses.
// With 1x, the recall of a graph that deleted and re-added half its nodes stayed behind a
// fresh build; with 2x it is not, for twice the remove time (bench/calibrate/hnsw_churn.py).
constexpr size_t kRepairEfFactor = 2;

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("HNSW: " + what); }

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

// One thread's walk state, reused from walk to walk so a search allocates nothing:
// the visited tags (one per slot; a node is visited when its tag equals the current
// epoch, so a walk starts in O(1) rather than clearing a table the size of the
// index), the two heaps and the buffers of one node's neighbours. The tags are 16
// bits (half the cache a walk's random tag reads occupy); they wrap every 65,535
// walks, when the table is cleared once.
class HnswIndex::WalkState {
 public:
  void start(size_t slots) {
    if (tags_.size() < slots) tags_.resize(slots, 0);
    if (++epoch_ == 0) {  // wrapped: old tags could collide
      std::fill(tags_.begin(), tags_.end(), 0);
      epoch_ = 1;
    }
    frontier.clear();
    best.clear();
  }
  bool check_and_mark(uint32_t s) {
    if (tags_[s] == epoch_) return true;
    tags_[s] = epoch_;
    return false;
  }
  // check_and_mark's answer, the tag written either way (the same effect: a visited
  // node's tag already holds the epoch).
  bool check_and_mark_branchless(uint32_t s) {
    const bool seen = tags_[s] == epoch_;
    tags_[s] = epoch_;
    return seen;
  }

  std::vector<Scored> frontier, best, found;  // heaps (see walk), then a walk's results
  std::vector<Candidate> hits;
  uint32_t nbs[2 * kMaxM];
  const void* rows[2 * kMaxM];
  float scores[2 * kMaxM];
  // An int8 search: the query's codes and scale; score_slots then scores codes.
  bool coarse = false;
  std::vector<int8_t> qcodes;
  float qscale = 0.0f;
  const int8_t* code_rows[2 * kMaxM];
  int32_t dots[2 * kMaxM];

 private:
  std::vector<uint16_t> tags_;
  uint16_t epoch_ = 0;
};

// ---- construction ----------------------------------------------------------

HnswIndex::HnswIndex(const HnswParams& p)
    : p_(p),
      kern_(dense_kernels(p.simd_level < 0 ? best_simd_level()
                                           : static_cast<SimdLevel>(p.simd_level))),
      int8_kern_(int8_kernel(kern_.level)),
      row_bytes_(p.d * storage_bytes(p.storage)),
      rng_state_(p.seed) {
  if (p.d == 0) fail("d must be >= 1");
  if (p.M < 2 || p.M > kMaxM) fail("M must be between 2 and " + std::to_string(kMaxM));
  if (p.ef_construction < 1) fail("ef_construction must be >= 1");
  if (static_cast<int>(p.storage) < 0 || static_cast<int>(p.storage) >= kNumStorage)
    fail("storage must be F32, F16 or BF16");
  if (p.metric != Metric::InnerProduct && p.metric != Metric::L2) fail("unknown metric");
  if (p.int8_walk && p.storage != Storage::F32) fail("int8 codes need F32 storage");
}

uint32_t* HnswIndex::links(uint32_t s, int level) {
  if (level == 0) return links0_.data() + static_cast<size_t>(s) * (1 + 2 * p_.M);
  return upper_[s].data() + static_cast<size_t>(level - 1) * (1 + p_.M);
}

const uint32_t* HnswIndex::links(uint32_t s, int level) const {
  return const_cast<HnswIndex*>(this)->links(s, level);
}

float HnswIndex::score(const float* q, float qnorm, uint32_t s) const {
  float dot;
  kern_.dot_rows[static_cast<int>(p_.storage)](q, row(s), p_.d, 1, p_.d, &dot);
  return p_.metric == Metric::L2 ? 2.0f * dot - sq_norms_[s] - qnorm : dot;
}

const float* HnswIndex::as_f32(uint32_t s, std::vector<float>& buf) const {
  if (p_.storage == Storage::F32) return reinterpret_cast<const float*>(row(s));
  buf.resize(p_.d);
  kern_.to_f32[static_cast<int>(p_.storage)](row(s), p_.d, 1, p_.d, buf.data());
  return buf.data();
}

size_t HnswIndex::size() const {
  std::shared_lock<std::shared_mutex> lock(rw_);
  return slot_of_.size();
}

size_t HnswIndex::slots() const {
  std::shared_lock<std::shared_mutex> lock(rw_);
  return ids_.size();
}

std::vector<int64_t> HnswIndex::slot_ids() const {
  std::shared_lock<std::shared_mutex> lock(rw_);
  return ids_;
}

size_t HnswIndex::memory_bytes() const {
  std::shared_lock<std::shared_mutex> lock(rw_);
  size_t bytes = ids_.size() * (row_bytes_ + sizeof(int64_t) + sizeof(int32_t)) +
                 links0_.size() * sizeof(uint32_t) + sq_norms_.size() * sizeof(float) +
                 codes_.size() + code_scale_.size() * sizeof(float) +
                 upper_.size() * sizeof(std::vector<uint32_t>) +
                 slot_of_.size() * (sizeof(int64_t) + sizeof(uint32_t) + 2 * sizeof(void*));
  for (const auto& u : upper_) bytes += u.capacity() * sizeof(uint32_t);
  return bytes;
}

void HnswIndex::reserve_slots(size_t slots) {
  if (slots <= ids_.size()) return;
  own_vectors();
  owned_.resize(slots * row_bytes_);
  vectors_ = owned_.data();
  if (p_.metric == Metric::L2) sq_norms_.resize(slots, 0.0f);
  if (p_.int8_walk) {
    codes_.resize(slots * p_.d, 0);
    code_scale_.resize(slots, 0.0f);
  }
  ids_.resize(slots, kPaddingId);
  levels_.resize(slots, -1);
  links0_.resize(slots * (1 + 2 * p_.M), 0);
  upper_.resize(slots);
  if (n_node_locks_ < slots) {  // no worker runs: add holds the lock exclusively
    n_node_locks_ = std::max(slots, 2 * n_node_locks_);
    node_locks_.reset(new std::mutex[n_node_locks_]);
  }
}

void HnswIndex::own_vectors() {
  if (!borrowed_) return;
  owned_.assign(vectors_, vectors_ + ids_.size() * row_bytes_);
  vectors_ = owned_.data();
  borrowed_ = false;
}

void HnswIndex::add(const void* rows, size_t n, size_t stride, const int64_t* ids,
                    const float* sq_norms, int n_threads) {
  if (n == 0) return;
  if (!rows || !ids) fail("add needs rows and ids");
  if (stride < p_.d) fail("row stride below d");
  if (p_.metric == Metric::L2 && !sq_norms) fail("L2 needs sq_norms");
  {
    std::shared_lock<std::shared_mutex> lock(rw_);
    std::unordered_map<int64_t, size_t> seen;
    for (size_t i = 0; i < n; ++i) {
      if (ids[i] < 0) fail("ids must be non-negative");
      if (slot_of_.count(ids[i]) || !seen.emplace(ids[i], i).second)
        fail("id " + std::to_string(ids[i]) + " is already in the index or repeated");
    }
  }
  const double level_scale = 1.0 / std::log(static_cast<double>(p_.M));
  const size_t elem = storage_bytes(p_.storage);
  const int threads = resolve_threads(n_threads);
  size_t since_repair = 0;  // rows inserted since the last reachability repair
  for (size_t c0 = 0; c0 < n; c0 += kAddChunk) {
    const size_t c1 = std::min(n, c0 + kAddChunk);
    std::unique_lock<std::shared_mutex> lock(rw_);
    // Slots first (lowest free slot first, then new ones), then rows, then links.
    std::vector<uint32_t> slots(c1 - c0);
    size_t fresh = 0;
    for (auto& s : slots) {
      if (!free_slots_.empty()) {
        s = free_slots_.back();
        free_slots_.pop_back();
      } else {
        s = static_cast<uint32_t>(ids_.size() + fresh++);
      }
    }
    if (ids_.size() + fresh > std::numeric_limits<uint32_t>::max()) fail("too many vectors");
    own_vectors();
    reserve_slots(ids_.size() + fresh);
    std::vector<int> levels(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
      const uint32_t s = slots[i];
      const uint8_t* src = static_cast<const uint8_t*>(rows) + (c0 + i) * stride * elem;
      std::memcpy(owned_.data() + static_cast<size_t>(s) * row_bytes_, src, row_bytes_);
      if (p_.metric == Metric::L2) sq_norms_[s] = sq_norms[c0 + i];
      if (p_.int8_walk) encode_slot(s);
      ids_[s] = ids[c0 + i];
      slot_of_[ids[c0 + i]] = s;
      // u in (0, 1]: 53 random bits, never 0, so the log is finite.
      const double u = (static_cast<double>(splitmix64(rng_state_) >> 11) + 1.0) * 0x1.0p-53;
      levels[i] = std::min(kMaxLevel, static_cast<int>(-std::log(u) * level_scale));
      levels_[s] = levels[i];
      links(s, 0)[0] = 0;
      upper_[s].assign(static_cast<size_t>(levels[i]) * (1 + p_.M), 0);
    }
    std::vector<WalkState> visited(threads);
    std::vector<std::vector<float>> qbufs(threads);
    parallel_for(slots.size(), threads, [&](size_t i, int w) {
      insert(slots[i], levels[i], qbufs[w], visited[w]);
    });
    // The repair walks the whole graph on one thread, so running it after every
    // chunk made a large build quadratic in its serial part. It runs once the rows inserted since the last
    // one reach a tenth of the index, and after the last chunk, so every live node is
    // reachable when add returns; a search between two chunks of a long add may miss
    // a node cut off in the chunks before it.
    since_repair += slots.size();
    if (c1 == n || 10 * since_repair >= ids_.size() - free_slots_.size()) {
      connect_unreached();
      since_repair = 0;
    }
  }
}

void HnswIndex::insert(uint32_t slot, int level, std::vector<float>& qbuf, WalkState& vis) {
  std::vector<float> own;
  const float* q = as_f32(slot, own);
  const float qn = p_.metric == Metric::L2 ? sq_norms_[slot] : 0.0f;
  std::unique_lock<std::mutex> top_lock(entry_lock_);
  const int top = max_level_;
  const int64_t ep = entry_;
  if (ep < 0) {  // the first node
    entry_ = slot;
    max_level_ = level;
    return;
  }
  // A node that raises the top level keeps the lock until its links exist, so no
  // walk starts from an entry point that has none yet (as hnswlib does).
  if (level <= top) top_lock.unlock();
  Scored cur{score(q, qn, static_cast<uint32_t>(ep)), static_cast<uint32_t>(ep)};
  for (int l = top; l > level; --l) cur = greedy<true>(q, qn, cur, l, vis);
  std::vector<Scored> found;
  for (int l = std::min(level, top); l >= 0; --l) {
    walk<true>(q, qn, cur, l, p_.ef_construction, vis, nullptr, found);
    cur = found.front();
    select_neighbors(found, p_.M, qbuf);
    {
      std::lock_guard<std::mutex> g(node_locks_[slot]);
      uint32_t* list = links(slot, l);
      list[0] = static_cast<uint32_t>(found.size());
      for (size_t j = 0; j < found.size(); ++j) list[1 + j] = found[j].slot;
    }
    for (const Scored& nb : found) link_back(nb.slot, slot, nb.score, l, qbuf);
  }
  if (level > top) {
    entry_ = slot;
    max_level_ = level;
  }
}

namespace {

struct BetterFirst {  // priority_queue whose top is the worst: results
  template <class S>
  bool operator()(const S& a, const S& b) const {
    return a.score > b.score || (a.score == b.score && a.slot < b.slot);
  }
};
struct WorseFirst {  // priority_queue whose top is the best: candidates to expand
  template <class S>
  bool operator()(const S& a, const S& b) const { return BetterFirst()(b, a); }
};

}  // namespace

// The heuristic of the HNSW paper (Algorithm 4): a candidate is kept only if it
// is closer to the base than to every neighbour kept so far, so the links point
// in diverse directions. cands is sorted best first and becomes the kept ones.
void HnswIndex::select_neighbors(std::vector<Scored>& cands, size_t m, std::vector<float>& buf,
                                 std::vector<Scored> kept) const {
  if (kept.empty() && cands.size() <= m) return;
  kept.reserve(m);
  for (const Scored& c : cands) {
    if (kept.size() >= m) break;
    const float* cv = as_f32(c.slot, buf);
    const float cn = p_.metric == Metric::L2 ? sq_norms_[c.slot] : 0.0f;
    bool diverse = true;
    for (const Scored& s : kept) {
      if (score(cv, cn, s.slot) > c.score) {
        diverse = false;
        break;
      }
    }
    if (diverse) kept.push_back(c);
  }
  cands.swap(kept);
}

void HnswIndex::link_back(uint32_t from, uint32_t to, float sc, int level, std::vector<float>& buf) {
  std::lock_guard<std::mutex> g(node_locks_[from]);
  uint32_t* list = links(from, level);
  const size_t cap = degree(level);
  if (std::find(list + 1, list + 1 + list[0], to) != list + 1 + list[0]) return;  // already linked
  if (list[0] < cap) {
    list[1 + list[0]] = to;
    ++list[0];
    return;
  }
  std::vector<float> fbuf;
  const float* fv = as_f32(from, fbuf);
  const float fn = p_.metric == Metric::L2 ? sq_norms_[from] : 0.0f;
  std::vector<Scored> cands{{sc, to}};
  for (uint32_t j = 0; j < list[0]; ++j) cands.push_back({score(fv, fn, list[1 + j]), list[1 + j]});
  std::sort(cands.begin(), cands.end(), BetterFirst());
  select_neighbors(cands, cap, buf);
  list[0] = static_cast<uint32_t>(cands.size());
  for (size_t j = 0; j < cands.size(); ++j) list[1 + j] = cands[j].slot;
}

// ---- the walk ------------------------------------------------------------------

template <bool kLocked>
HnswIndex::Scored HnswIndex::greedy(const float* q, float qnorm, Scored cur, int level,
                                    WalkState& ws) const {
  for (bool moved = true; moved;) {
    moved = false;
    size_t count;
    {
      std::unique_lock<std::mutex> g;
      if (kLocked) g = std::unique_lock<std::mutex>(node_locks_[cur.slot]);
      const uint32_t* list = links(cur.slot, level);
      count = std::min<size_t>(list[0], degree(level));
      std::memcpy(ws.nbs, list + 1, count * sizeof(uint32_t));
    }
    score_slots(q, qnorm, ws.nbs, count, ws);
    for (size_t j = 0; j < count; ++j) {
      if (ws.scores[j] > cur.score) {
        cur = Scored{ws.scores[j], ws.nbs[j]};
        moved = true;
      }
    }
  }
  return cur;
}

void HnswIndex::score_slots(const float* q, float qnorm, const uint32_t* slots, size_t n,
                            WalkState& ws) const {
  if (ws.coarse) {  // <q, x> ~ dot(codes) * (scale_q / 127) * (scale_x / 127)
    for (size_t j = 0; j < n; ++j) ws.code_rows[j] = codes_.data() + static_cast<size_t>(slots[j]) * p_.d;
    int8_kern_.dot_gather(ws.qcodes.data(), ws.code_rows, n, p_.d, ws.dots);
    const float qs = ws.qscale * (1.0f / (127.0f * 127.0f));
    for (size_t j = 0; j < n; ++j) {
      const float dot = static_cast<float>(ws.dots[j]) * (qs * code_scale_[slots[j]]);
      ws.scores[j] = p_.metric == Metric::L2 ? 2.0f * dot - sq_norms_[slots[j]] - qnorm : dot;
    }
    return;
  }
  for (size_t j = 0; j < n; ++j) ws.rows[j] = row(slots[j]);
  kern_.dot_gather[static_cast<int>(p_.storage)](q, ws.rows, n, p_.d, ws.scores);
  if (p_.metric == Metric::L2)  // score()'s expression, so the same bits
    for (size_t j = 0; j < n; ++j) ws.scores[j] = 2.0f * ws.scores[j] - sq_norms_[slots[j]] - qnorm;
}

float HnswIndex::score_one(const float* q, float qnorm, uint32_t s, WalkState& ws) const {
  score_slots(q, qnorm, &s, 1, ws);
  return ws.scores[0];
}

void HnswIndex::rescore(const float* q, float qnorm, std::vector<Scored>& found, WalkState& ws) const {
  ws.coarse = false;
  for (size_t j0 = 0; j0 < found.size(); j0 += 2 * kMaxM) {
    const size_t n = std::min(found.size() - j0, 2 * kMaxM);
    for (size_t j = 0; j < n; ++j) ws.nbs[j] = found[j0 + j].slot;
    score_slots(q, qnorm, ws.nbs, n, ws);
    for (size_t j = 0; j < n; ++j) found[j0 + j].score = ws.scores[j];
  }
}

void HnswIndex::encode_slot(uint32_t s) {
  code_scale_[s] = quantize_int8(reinterpret_cast<const float*>(row(s)), p_.d,
                                 codes_.data() + static_cast<size_t>(s) * p_.d);
}

// The ef best nodes reachable from entry on one level (best first in out);
// with a filter only allowed nodes enter the results, while every node may be
// walked through (the filter is applied inside the walk, not afterwards).
// frontier is a heap whose front is the best candidate to expand, best one whose
// front is the worst result kept (std::priority_queue's operations, on reused memory).
template <bool kLocked>
void HnswIndex::walk(const float* q, float qnorm, Scored entry, int level, size_t ef, WalkState& ws,
                     const AllowFilter* allow, std::vector<Scored>& out) const {
  std::vector<Scored>& frontier = ws.frontier;
  std::vector<Scored>& best = ws.best;
  auto allowed = [&](uint32_t s) { return !allow || allow->allows(s, ids_[s]); };
  auto push_frontier = [&](Scored e) {
    frontier.push_back(e);
    std::push_heap(frontier.begin(), frontier.end(), WorseFirst());
  };
  auto push_best = [&](Scored e) {
    best.push_back(e);
    std::push_heap(best.begin(), best.end(), BetterFirst());
  };
  ws.start(ids_.size());
  auto seed = [&](Scored e) {
    if (ws.check_and_mark(e.slot)) return;
    push_frontier(e);
    if (allowed(e.slot)) push_best(e);
  };
  seed(entry);
  // Every node is reachable from the entry point on level 0 (connect_unreached),
  // (searches only: during a threaded add the entry point may be changing)
  // not always from where the descent ends; seeding both makes a walk with ef >= n
  // exhaustive. The entry point is expanded only while it ranks among the best ef.
  if (!kLocked && level == 0 && entry_ >= 0 && static_cast<uint32_t>(entry_) != entry.slot)
    seed(Scored{score_one(q, qnorm, static_cast<uint32_t>(entry_), ws), static_cast<uint32_t>(entry_)});
  const size_t cap = degree(level);
  uint32_t* nbs = ws.nbs;
  while (!frontier.empty()) {
    const Scored c = frontier.front();
    if (best.size() >= ef && BetterFirst()(best.front(), c)) break;
    std::pop_heap(frontier.begin(), frontier.end(), WorseFirst());
    frontier.pop_back();
    size_t count;
    {
      std::unique_lock<std::mutex> g;
      if (kLocked) g = std::unique_lock<std::mutex>(node_locks_[c.slot]);
      const uint32_t* list = links(c.slot, level);
      count = std::min<size_t>(list[0], cap);
      std::memcpy(nbs, list + 1, count * sizeof(uint32_t));
    }
    // First the unvisited neighbours, with their rows' first lines requested, then
    // their scores in one gathered kernel call (four rows at a time, the next four
    // fetched meanwhile): the loads overlap instead of each waiting for memory in turn.
    // Without a branch: whether a neighbour was visited is a coin toss to the
    // predictor, so each one could cost a mispredict (not measured apart: BENCHMARKS.md).
    size_t fresh = 0;
    for (size_t j = 0; j < count; ++j) {
      const uint32_t nb = nbs[j];
      nbs[fresh] = nb;
      fresh += !ws.check_and_mark_branchless(nb);
    }
    for (size_t j = 0; j < fresh; ++j)
      __builtin_prefetch(ws.coarse ? static_cast<const void*>(codes_.data() + static_cast<size_t>(nbs[j]) * p_.d)
                                   : row(nbs[j]));
    score_slots(q, qnorm, nbs, fresh, ws);
    for (size_t j = 0; j < fresh; ++j) {
      const Scored s{ws.scores[j], nbs[j]};
      if (best.size() < ef || BetterFirst()(s, best.front())) {
        push_frontier(s);
        // Its links are read when it is expanded, likely soon: request them now
        // (hnswlib stores them beside the vector for the same reason).
        __builtin_prefetch(links(nbs[j], level));
        if (allowed(nbs[j])) {
          push_best(s);
          if (best.size() > ef) {
            std::pop_heap(best.begin(), best.end(), BetterFirst());
            best.pop_back();
          }
        }
      }
    }
  }
  // Best first: sort_heap orders by BetterFirst, a strict order (ties by slot).
  std::sort_heap(best.begin(), best.end(), BetterFirst());
  out.assign(best.begin(), best.end());
}

// ---- search --------------------------------------------------------------

HnswSearchStats HnswIndex::search(const HnswSearchArgs& args) const {
  if (args.k == 0) fail("k must be >= 1");
  if (args.ef == 0) fail("ef must be >= 1");
  if (args.nq && (!args.queries || args.query_stride < p_.d)) fail("queries");
  if (args.allow.by_row) fail("allow masks are by id");
  std::shared_lock<std::shared_mutex> lock(rw_);
  HnswSearchArgs a = args;
  std::vector<uint8_t> by_slot;  // an id list becomes a mask by slot, under the lock
  if (a.allow_ids) {
    by_slot.assign(ids_.size(), 0);
    for (size_t i = 0; i < a.n_allow_ids; ++i) {
      auto it = slot_of_.find(a.allow_ids[i]);
      if (it != slot_of_.end()) by_slot[it->second] = 1;
    }
    a.allow.mask = by_slot.data();
    a.allow.len = by_slot.size();
    a.allow.by_row = true;
    if (by_slot.empty()) a.allow.mask = reinterpret_cast<const uint8_t*>("");  // active, allows nothing
  }
  HnswSearchStats stats;
  if (a.allow.active()) {
    std::vector<uint32_t> allowed;
    for (uint32_t s = 0; s < ids_.size(); ++s) {
      if (levels_[s] >= 0 && a.allow.allows(s, ids_[s])) {
        if (allowed.size() <= a.exact_below) allowed.push_back(s);
        ++stats.allowed;
      }
    }
    if (stats.allowed <= a.exact_below) {
      stats.exact = true;
      search_exact(a, allowed);
      return stats;
    }
  }
  if (entry_ < 0) {
    search_exact(a, {});
    return stats;
  }
  search_graph(a);
  return stats;
}

void HnswIndex::search_exact(const HnswSearchArgs& a, const std::vector<uint32_t>& slots) const {
  const int threads = slots.size() * a.nq < 100000 ? 1 : resolve_threads(a.n_threads);
  parallel_for(a.nq, threads, [&](size_t i, int) {
    const float* q = a.queries + i * a.query_stride;
    float qn = 0.0f;
    if (p_.metric == Metric::L2)
      for (size_t p = 0; p < p_.d; ++p) qn += q[p] * q[p];
    TopKQueue top(a.k);
    for (uint32_t s : slots) top.push(score(q, qn, s), ids_[s]);
    top.finish(a.out_scores + i * a.k, a.out_ids + i * a.k);
  });
}

void HnswIndex::search_graph(const HnswSearchArgs& a) const {
  const int threads = std::min<int>(resolve_threads(a.n_threads), static_cast<int>(a.nq));
  // Worker 0 is the calling thread: its state survives between calls, so a
  // batch-1 search allocates nothing once the first has run.
  static thread_local WalkState caller_state;
  std::vector<WalkState> others(threads > 1 ? threads - 1 : 0);
  const size_t ef = std::max(a.ef, a.k);
  const AllowFilter* allow = a.allow.active() ? &a.allow : nullptr;
  parallel_for(a.nq, threads, [&](size_t i, int w) {
    WalkState& ws = w == 0 ? caller_state : others[w - 1];
    const float* q = a.queries + i * a.query_stride;
    float qn = 0.0f;
    if (p_.metric == Metric::L2)
      for (size_t p = 0; p < p_.d; ++p) qn += q[p] * q[p];
    if (p_.int8_walk) {
      ws.qcodes.resize(p_.d);
      ws.qscale = quantize_int8(q, p_.d, ws.qcodes.data());
      ws.coarse = true;
    }
    const uint32_t ep = static_cast<uint32_t>(entry_);
    Scored cur{score_one(q, qn, ep, ws), ep};
    for (int l = max_level_; l > 0; --l) cur = greedy<false>(q, qn, cur, l, ws);
    std::vector<Scored>& found = ws.found;
    walk<false>(q, qn, cur, 0, ef, ws, allow, found);
    if (ws.coarse) rescore(q, qn, found, ws);
    std::vector<Candidate>& hits = ws.hits;
    hits.resize(found.size());
    for (size_t j = 0; j < found.size(); ++j) hits[j] = Candidate{found[j].score, ids_[found[j].slot]};
    // found is best first by slot on ties; results are by id on ties.
    std::sort(hits.begin(), hits.end(), ranks_before);
    float* out_s = a.out_scores + i * a.k;
    int64_t* out_i = a.out_ids + i * a.k;
    for (size_t j = 0; j < a.k; ++j) {
      out_s[j] = j < hits.size() ? hits[j].score : -std::numeric_limits<float>::infinity();
      out_i[j] = j < hits.size() ? hits[j].id : kPaddingId;
    }
  });
}

// ---- removal ---------------------------------------------------------------

size_t HnswIndex::remove(const int64_t* ids, size_t n, int n_threads) {
  std::unique_lock<std::shared_mutex> lock(rw_);
  std::vector<uint8_t> removed(ids_.size(), 0);
  std::vector<uint32_t> gone;
  for (size_t i = 0; i < n; ++i) {
    auto it = slot_of_.find(ids[i]);
    if (it == slot_of_.end()) fail("id " + std::to_string(ids[i]) + " is not in the index");
    if (!removed[it->second]) gone.push_back(it->second);
    removed[it->second] = 1;
  }
  if (gone.empty()) return 0;
  const int threads = resolve_threads(n_threads);
  std::vector<std::vector<float>> bufs(threads);
  std::vector<WalkState> visited(threads);
  std::vector<uint8_t> kept(ids_.size(), 0);
  for (size_t s = 0; s < ids_.size(); ++s) kept[s] = levels_[s] >= 0 && !removed[s];
  AllowFilter live;
  live.mask = kept.data();
  live.len = kept.size();
  live.by_row = true;
  // Per level: every list that holds a removed node is recomputed first (reading
  // the graph as it is, removed nodes still linked), then all are written, so
  // the tasks need no locks.
  for (int l = 0; l <= max_level_; ++l) {
    std::vector<std::vector<Scored>> fresh(ids_.size());
    std::vector<uint8_t> touched(ids_.size(), 0);
    parallel_for(ids_.size(), threads, [&](size_t s, int w) {
      if (!kept[s] || levels_[s] < l) return;
      const uint32_t* list = links(static_cast<uint32_t>(s), l);
      for (uint32_t j = 0; j < list[0]; ++j) touched[s] |= removed[list[1 + j]];
      if (touched[s]) fresh[s] = relinked(static_cast<uint32_t>(s), l, removed, live, visited[w], bufs[w]);
    });
    // The new neighbours link back, as at insertion: without it the nodes that
    // only removed nodes pointed to would keep losing in-edges and the walk would
    // gather on a few hubs.
    std::vector<std::vector<Scored>> added(ids_.size());
    for (size_t s = 0; s < ids_.size(); ++s) {
      if (!touched[s]) continue;
      uint32_t* list = links(static_cast<uint32_t>(s), l);
      for (const Scored& f : fresh[s])
        if (std::find(list + 1, list + 1 + list[0], f.slot) == list + 1 + list[0])
          added[s].push_back(f);
      list[0] = static_cast<uint32_t>(fresh[s].size());
      for (size_t j = 0; j < fresh[s].size(); ++j) list[1 + j] = fresh[s][j].slot;
    }
    parallel_for(ids_.size(), threads, [&](size_t s, int w) {
      for (const Scored& f : added[s]) link_back(f.slot, static_cast<uint32_t>(s), f.score, l, bufs[w]);
    });
  }
  for (uint32_t s : gone) {
    slot_of_.erase(ids_[s]);
    ids_[s] = kPaddingId;
    levels_[s] = -1;
    links(s, 0)[0] = 0;
    std::vector<uint32_t>().swap(upper_[s]);
    free_slots_.push_back(s);
  }
  std::sort(free_slots_.begin(), free_slots_.end(), std::greater<uint32_t>());
  if (entry_ >= 0 && removed[entry_]) choose_entry();
  connect_unreached();
  return gone.size();
}

// The new list of a node some of whose neighbours are removed: the best
// (heuristic) of its remaining neighbours, the removed ones' neighbours and what
// a walk for it finds among the kept nodes (kRepairEfFactor x ef_construction of them).
std::vector<HnswIndex::Scored> HnswIndex::relinked(uint32_t s, int level,
                                                   const std::vector<uint8_t>& removed,
                                                   const AllowFilter& live, WalkState& vis,
                                                   std::vector<float>& buf) const {
  const uint32_t* list = links(s, level);
  std::vector<float> sbuf;
  const float* sv = as_f32(s, sbuf);
  const float sn = p_.metric == Metric::L2 ? sq_norms_[s] : 0.0f;
  // The remaining neighbours stay; only the places of the removed ones are filled.
  std::vector<Scored> kept_links;
  std::vector<uint32_t> pool;
  for (uint32_t j = 0; j < list[0]; ++j) {
    const uint32_t nb = list[1 + j];
    if (!removed[nb]) {
      kept_links.push_back({score(sv, sn, nb), nb});
      continue;
    }
    const uint32_t* second = links(nb, level);
    for (uint32_t t = 0; t < second[0]; ++t)
      if (!removed[second[1 + t]]) pool.push_back(second[1 + t]);
  }
  const uint32_t ep = static_cast<uint32_t>(entry_);
  Scored cur{score(sv, sn, ep), ep};
  for (int l = max_level_; l > level; --l) cur = greedy<false>(sv, sn, cur, l, vis);
  std::vector<Scored> found;
  walk<false>(sv, sn, cur, level, kRepairEfFactor * p_.ef_construction, vis, &live, found);
  for (const Scored& f : found) pool.push_back(f.slot);
  std::sort(pool.begin(), pool.end());
  pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
  std::vector<Scored> cands;
  for (uint32_t z : pool) {
    const bool linked = std::any_of(kept_links.begin(), kept_links.end(),
                                    [&](const Scored& k) { return k.slot == z; });
    if (z != s && !linked) cands.push_back({score(sv, sn, z), z});
  }
  std::sort(cands.begin(), cands.end(), BetterFirst());
  // Fill the free places with candidates that pass the insertion heuristic
  // against the links already there (so they add directions, not duplicates).
  select_neighbors(cands, degree(level), buf, std::move(kept_links));
  return cands;
}

void HnswIndex::choose_entry() {
  entry_ = -1;
  max_level_ = -1;
  for (uint32_t s = 0; s < levels_.size(); ++s) {
    if (levels_[s] > max_level_) {
      max_level_ = levels_[s];
      entry_ = s;
    }
  }
}

// Pruning can drop every edge into a node, which then no walk reaches (hnswlib
// keeps such nodes). Each one gets an edge from the nearest node the entry point
// reaches; where that node is full, its worst link y -> t becomes y -> s -> t, so
// every live node stays reachable on level 0 after each add / remove. (Replacing
// a link to a node with other in-edges, as before, could cut nodes off whose other
// in-edges came from cut-off nodes: hypothesis found one at n = 35, M = 3.)
void HnswIndex::connect_unreached() {
  // A node linked from a cut-off one is reached once that one is: repeat until
  // every node is reached or nothing changes.
  for (int round = 0; round < 8 && connect_unreached_once(); ++round) {
  }
}

bool HnswIndex::connect_unreached_once() {
  if (entry_ < 0) return false;
  const size_t n = ids_.size(), cap = 2 * p_.M;
  std::vector<uint8_t> reached(n, 0);
  std::vector<uint32_t> stack;
  auto reach_from = [&](uint32_t start) {
    reached[start] = 1;
    stack.push_back(start);
    while (!stack.empty()) {
      const uint32_t u = stack.back();
      stack.pop_back();
      const uint32_t* list = links(u, 0);
      for (uint32_t j = 0; j < list[0]; ++j) {
        if (!reached[list[1 + j]]) {
          reached[list[1 + j]] = 1;
          stack.push_back(list[1 + j]);
        }
      }
    }
  };
  reach_from(static_cast<uint32_t>(entry_));
  WalkState vis;
  std::vector<float> qbuf, buf;
  std::vector<Scored> found;
  bool changed = false;
  for (uint32_t s = 0; s < n; ++s) {
    if (levels_[s] < 0 || reached[s]) continue;
    const float* q = as_f32(s, qbuf);
    const float qn = p_.metric == Metric::L2 ? sq_norms_[s] : 0.0f;
    const uint32_t ep = static_cast<uint32_t>(entry_);
    Scored cur{score(q, qn, ep), ep};
    for (int l = max_level_; l > 0; --l) cur = greedy<false>(q, qn, cur, l, vis);
    walk<false>(q, qn, cur, 0, p_.ef_construction, vis, nullptr, found);
    found.push_back(Scored{score(q, qn, ep), ep});  // the entry point is always reached
    bool linked = false;
    for (const Scored& y : found) {
      if (!reached[y.slot] || y.slot == s) continue;
      uint32_t* list = links(y.slot, 0);
      if (list[0] < cap) {
        list[1 + list[0]++] = s;
        linked = true;
      } else {
        // y is full: its link to t, the neighbour least like y, becomes y -> s -> t, so
        // every node y reached through t is still reached (through s). Only possible
        // while s has room for t (or already links to it).
        uint32_t* own = links(s, 0);
        std::vector<float> ybuf;
        const float* yv = as_f32(y.slot, ybuf);
        const float yn = p_.metric == Metric::L2 ? sq_norms_[y.slot] : 0.0f;
        int worst = -1;
        float worst_score = std::numeric_limits<float>::infinity();
        for (uint32_t j = 0; j < list[0]; ++j) {
          const uint32_t t = list[1 + j];
          const bool fits = own[0] < cap || std::find(own + 1, own + 1 + own[0], t) != own + 1 + own[0];
          const float sc = score(yv, yn, t);
          if (fits && sc < worst_score) {
            worst = static_cast<int>(j);
            worst_score = sc;
          }
        }
        if (worst < 0) continue;
        const uint32_t t = list[1 + worst];
        list[1 + worst] = s;
        if (std::find(own + 1, own + 1 + own[0], t) == own + 1 + own[0]) own[1 + own[0]++] = t;
        linked = true;
      }
      if (linked) break;
    }
    // None of the nearest reached nodes can take a link (a degenerate graph: tiny M,
    // duplicate vectors): any reached node with a free place will do.
    for (uint32_t y = 0; !linked && y < n; ++y) {
      uint32_t* list = links(y, 0);
      if (reached[y] && levels_[y] >= 0 && y != s && list[0] < cap) {
        list[1 + list[0]++] = s;
        linked = true;
      }
    }
    if (!linked) continue;
    changed = true;
    reach_from(s);
  }
  return changed;
}

// ---- files -------------------------------------------------------------------

HnswIndex::Snapshot HnswIndex::snapshot() const {
  std::shared_lock<std::shared_mutex> lock(rw_);
  Snapshot out;
  out.vectors.assign(vectors_, vectors_ + ids_.size() * row_bytes_);
  out.sq_norms = sq_norms_;
  out.ids = ids_;
  out.levels = levels_;
  out.links0.assign(links0_.begin(), links0_.end());
  out.upper_offsets.resize(ids_.size() + 1, 0);
  for (size_t s = 0; s < ids_.size(); ++s) {
    out.upper.insert(out.upper.end(), upper_[s].begin(), upper_[s].end());
    out.upper_offsets[s + 1] = static_cast<int64_t>(out.upper.size());
  }
  out.entry = entry_;
  out.rng_state = rng_state_;
  return out;
}

namespace {

// What restore's checks of the slots find: each live id's slot, and the top level (-1: none).
struct RestoredSlots {
  std::unordered_map<int64_t, uint32_t> slot_of;
  int top = -1;
};

// The arrays a graph of a.slots slots needs are all there.
void check_present(const HnswParams& p, const HnswArrays& a) {
  const size_t n = a.slots;
  if (n > std::numeric_limits<uint32_t>::max()) fail("too many slots");
  if (n && (!a.vectors || !a.ids || !a.levels || !a.links0 || !a.upper_offsets))
    fail("missing arrays");
  if (p.metric == Metric::L2 && n && !a.sq_norms) fail("L2 needs sq_norms");
}

// Levels in [-1, kMaxLevel], -1 exactly on the free slots (id < 0), each live id once,
// finite squared norms (L2).
RestoredSlots checked_slots(const HnswParams& p, const HnswArrays& a) {
  RestoredSlots out;
  for (size_t s = 0; s < a.slots; ++s) {
    const int32_t lv = a.levels[s];
    if (lv < -1 || lv > kMaxLevel) fail("slot " + std::to_string(s) + " has level " + std::to_string(lv));
    if ((lv < 0) != (a.ids[s] < 0)) fail("slot " + std::to_string(s) + ": id and level disagree");
    if (lv >= 0 && !out.slot_of.emplace(a.ids[s], static_cast<uint32_t>(s)).second)
      fail("id " + std::to_string(a.ids[s]) + " appears twice");
    out.top = std::max(out.top, static_cast<int>(lv));
    if (lv >= 0 && p.metric == Metric::L2 && !std::isfinite(a.sq_norms[s]))
      fail("sq_norms are not finite");
  }
  return out;
}

// One neighbour list of slot s on a level: its count within the level's degree, each
// neighbour a slot of the index that is present on that level.
void check_list(const HnswParams& p, const HnswArrays& a, size_t s, const uint32_t* list,
                int level) {
  const size_t cap = level == 0 ? 2 * p.M : p.M;
  if (list[0] > cap) fail("slot " + std::to_string(s) + " has " + std::to_string(list[0]) +
                          " neighbours on level " + std::to_string(level) + " (at most " +
                          std::to_string(cap) + ")");
  for (uint32_t j = 0; j < list[0]; ++j) {
    const uint32_t nb = list[1 + j];
    if (nb >= a.slots) fail("slot " + std::to_string(s) + " links to " + std::to_string(nb) +
                            ", outside the index of " + std::to_string(a.slots) + " slots");
    if (a.levels[nb] < level) fail("slot " + std::to_string(s) + " links to slot " +
                                   std::to_string(nb) + ", which is not on level " +
                                   std::to_string(level));
  }
}

// Every slot's lists: upper offsets that match its level and stay inside upper, no
// neighbours on a free slot, every list checked, so that a walk follows any link unchecked.
void check_links(const HnswParams& p, const HnswArrays& a) {
  const size_t n = a.slots, w0 = 1 + 2 * p.M, wu = 1 + p.M;
  if (n && a.upper_offsets[0] != 0) fail("upper offsets must start at 0");
  for (size_t s = 0; s < n; ++s) {
    const int64_t lo = a.upper_offsets[s], hi = a.upper_offsets[s + 1];
    const int64_t want = static_cast<int64_t>(std::max(a.levels[s], 0)) * static_cast<int64_t>(wu);
    // hi < lo first: a crafted hi near INT64_MIN would overflow hi - lo.
    if (lo < 0 || hi < lo || hi - lo != want || static_cast<uint64_t>(hi) > a.upper_len)
      fail("upper offsets of slot " + std::to_string(s) + " do not match its level");
    if (a.levels[s] < 0) {
      if (a.links0[s * w0] != 0) fail("free slot " + std::to_string(s) + " has neighbours");
      continue;
    }
    check_list(p, a, s, a.links0 + s * w0, 0);
    for (int l = 1; l <= a.levels[s]; ++l) check_list(p, a, s, a.upper + lo + (l - 1) * wu, l);
  }
  if (n && static_cast<uint64_t>(a.upper_offsets[n]) != a.upper_len) fail("upper list length");
}

// The entry point: -1 when no slot is live, else a live slot on the top level.
void check_entry(const HnswArrays& a, const RestoredSlots& found) {
  if (found.slot_of.empty() ? a.entry != -1
                            : (a.entry < 0 || static_cast<size_t>(a.entry) >= a.slots ||
                               a.levels[a.entry] != found.top))
    fail("entry point is not a node of the top level");
}

}  // namespace

void HnswIndex::restore(const HnswArrays& a, bool borrow_vectors) {
  check_present(p_, a);
  RestoredSlots found = checked_slots(p_, a);
  check_links(p_, a);
  check_entry(a, found);
  adopt(a, borrow_vectors, std::move(found.slot_of), found.top);
}

void HnswIndex::adopt(const HnswArrays& a, bool borrow_vectors,
                      std::unordered_map<int64_t, uint32_t>&& slot_of, int top) {
  const size_t n = a.slots, w0 = 1 + 2 * p_.M;
  std::unique_lock<std::shared_mutex> lock(rw_);
  borrowed_ = borrow_vectors;
  if (borrow_vectors) {
    owned_.clear();
    vectors_ = static_cast<const uint8_t*>(a.vectors);
  } else {
    owned_.assign(static_cast<const uint8_t*>(a.vectors),
                  static_cast<const uint8_t*>(a.vectors) + n * row_bytes_);
    vectors_ = owned_.data();
  }
  if (p_.metric == Metric::L2) sq_norms_.assign(a.sq_norms, a.sq_norms + n);
  ids_.assign(a.ids, a.ids + n);
  levels_.assign(a.levels, a.levels + n);
  links0_.assign(a.links0, a.links0 + n * w0);
  upper_.assign(n, {});
  free_slots_.clear();
  for (size_t s = n; s-- > 0;) {
    upper_[s].assign(a.upper + a.upper_offsets[s], a.upper + a.upper_offsets[s + 1]);
    if (levels_[s] < 0) free_slots_.push_back(static_cast<uint32_t>(s));
  }
  slot_of_.swap(slot_of);
  if (p_.int8_walk) {
    codes_.assign(n * p_.d, 0);
    code_scale_.assign(n, 0.0f);
    for (size_t s = 0; s < n; ++s)
      if (levels_[s] >= 0) encode_slot(static_cast<uint32_t>(s));
  }
  entry_ = a.entry;
  max_level_ = top;
  rng_state_ = a.rng_state;
  node_locks_.reset(new std::mutex[std::max<size_t>(n, 1)]);
  n_node_locks_ = std::max<size_t>(n, 1);
}

}  // namespace ragcore
