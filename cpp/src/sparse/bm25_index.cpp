#include "ragcore/sparse/bm25_index.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "ragcore/util/parallel.h"
#include "ragcore/sparse/query/block_max_pruning_query.h"
#include "ragcore/sparse/query/block_max_wand_query.h"
#include "ragcore/sparse/query/exhaustive_query.h"
#include "ragcore/sparse/query/maxscore_query.h"
#include "ragcore/sparse/query/threshold_seed.h"

namespace ragcore {

namespace {

constexpr size_t kMaxSlots = kEndDoc - 1;  // doc numbers are uint32, kEndDoc is reserved
constexpr size_t kDocsPerTask = 4096;
constexpr size_t kTermsPerTask = 1024;

// (term, tf) of one document's words, by term.
void count_terms(const uint32_t* words, size_t n, const int64_t* word_to_term, size_t n_words,
                 std::vector<uint32_t>& scratch, std::vector<std::pair<uint32_t, uint32_t>>& out) {
  scratch.clear();
  for (size_t i = 0; i < n; ++i) {
    if (words[i] >= n_words) throw std::invalid_argument("word id out of range of word_to_term");
    const int64_t t = word_to_term[words[i]];
    if (t >= 0) scratch.push_back(static_cast<uint32_t>(t));
  }
  std::sort(scratch.begin(), scratch.end());
  for (size_t i = 0; i < scratch.size();) {
    size_t j = i;
    while (j < scratch.size() && scratch[j] == scratch[i]) ++j;
    out.emplace_back(scratch[i], static_cast<uint32_t>(j - i));
    i = j;
  }
}

// Which algorithm `Auto` runs, from the query's postings P (the summed lengths
// of its lists), k and the index's slots N, as bench/calibrate/bm25_algorithms.py
// measures it:
//  - Exhaustive when (P / k) * (N / k) < kExhaustiveBelow: few candidates, or
//    few documents, per result. Exhaustive costs its postings, one sweep of an
//    N-bit bitmap and a reservoir selection (O(1) per entering document);
//    pruning saves little when k nears P (the k-th score is low), and pays per
//    query for its threshold seed (about 4 k documents scored). Timed query by
//    query (both algorithms, the Zipfian corpus and the standard-library text),
//    the total was lowest around this bound once exhaustive scoring selected
//    through the reservoir.
//  - MaxScore otherwise. Block-Max WAND was slower than MaxScore in nearly every
//    cell and never clearly faster, so auto never runs it (it stays available
//    by name).
constexpr double kExhaustiveBelow = 16384.0;

QueryAlgorithm choose_algorithm(size_t total_postings, size_t k, size_t n_slots) {
  const double kk = static_cast<double>(k);  // in double: P * N may pass 2^64
  const double x = static_cast<double>(total_postings) * static_cast<double>(n_slots);
  return x < kExhaustiveBelow * kk * kk ? QueryAlgorithm::Exhaustive : QueryAlgorithm::MaxScore;
}

}  // namespace

struct Bm25Index::PreparedQuery {
  std::vector<TermScorer> terms;  // in query order
  double base = 0.0;              // score of a document without any query term
  size_t total_postings = 0;
};

Bm25Index::Bm25Index(const Bm25Params& params) : params_(params) {
  check_params(params_);
  refresh_norms();
}

Bm25Index::~Bm25Index() = default;

void Bm25Index::refresh_norms() {
  avgdl_ = (n_live_ > 0 && total_length_ > 0) ? static_cast<double>(total_length_) / n_live_ : 1.0;
  norm_.resize(scoring_len_.size());
  for (size_t d = 0; d < scoring_len_.size(); ++d)
    norm_[d] = 1.0 - params_.b + params_.b * scoring_len_[d] / avgdl_;
  g0_ = bm25_absent_part(params_);
  // avgdl changed, so every cached posting score is stale.
  caches_.resize(lists_.size());
  cache_ready_.reset(new std::atomic<uint8_t>[lists_.size()]);
  for (size_t t = 0; t < lists_.size(); ++t) cache_ready_[t].store(0, std::memory_order_relaxed);
}

void Bm25Index::refresh_id_order() {
  ids_ascending_ = true;
  for (size_t i = 1; i < by_ext_id_.size(); ++i)
    if (by_ext_id_[i].second < by_ext_id_[i - 1].second) ids_ascending_ = false;
}

const TermCache& Bm25Index::term_cache(size_t term, bool with_ranges) const {
  const uint8_t want = with_ranges ? kCacheWithRanges : kCacheReady;
  if (cache_ready_[term].load(std::memory_order_acquire) >= want) return caches_[term];
  std::lock_guard<std::mutex> lock(cache_mutex_);
  const uint8_t have = cache_ready_[term].load(std::memory_order_relaxed);
  if (have >= want) return caches_[term];
  const PostingList& list = lists_[term];
  TermCache& c = caches_[term];
  std::vector<uint32_t> all_docs(list.size());
  uint32_t tfs[kBlockSize];
  if (have == 0) {
    c.excess.resize(list.size());
    c.block_max.assign(list.num_blocks(), 0.0f);
    c.list_max = 0.0f;
    c.list_min = std::numeric_limits<float>::infinity();
    for (size_t b = 0; b < list.num_blocks(); ++b) {
      uint32_t* docs = all_docs.data() + b * kBlockSize;
      const size_t n = list.decode(b, docs, tfs);
      float* excess = c.excess.data() + b * kBlockSize;
      for (size_t i = 0; i < n; ++i) {
        excess[i] = posting_excess(tfs[i], docs[i]);
        c.block_max[b] = std::max(c.block_max[b], excess[i]);
        c.list_min = std::min(c.list_min, excess[i]);
      }
      c.list_max = std::max(c.list_max, c.block_max[b]);
    }
    build_doc_bits(list, ext_ids_.size(), c);
    std::vector<uint32_t> order(list.num_blocks());
    for (uint32_t b = 0; b < order.size(); ++b) order[b] = b;
    const size_t best = std::min(order.size(), TermCache::kBestBlocks);
    std::partial_sort(order.begin(), order.begin() + best, order.end(),
                      [&](uint32_t a, uint32_t b) { return c.block_max[a] > c.block_max[b]; });
    c.best_blocks.assign(order.begin(), order.begin() + best);
  } else {
    for (size_t b = 0; b < list.num_blocks(); ++b) list.decode_docs(b, all_docs.data() + b * kBlockSize);
  }
  if (with_ranges) build_doc_ranges(all_docs, c.excess, ext_ids_.size(), !c.doc_bits.empty(), c.ranges);
  cache_ready_[term].store(want, std::memory_order_release);
  return c;
}

void Bm25Index::add(const uint32_t* words, const int64_t* offsets, size_t n_docs,
                    const int64_t* word_to_term, size_t n_words, const int64_t* ext_ids,
                    int n_threads) {
  if (n_docs && offsets[0] != 0) throw std::invalid_argument("offsets must start at 0");
  for (size_t d = 0; d < n_docs; ++d)
    if (offsets[d + 1] < offsets[d]) throw std::invalid_argument("offsets must not decrease");
  for (size_t w = 0; w < n_words; ++w)
    if (word_to_term[w] >= (int64_t{1} << 31)) throw std::invalid_argument("term id too large");

  // Each document's (term, tf) pairs, in parallel by runs of documents.
  const size_t n_tasks = (n_docs + kDocsPerTask - 1) / kDocsPerTask;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> pairs(n_tasks);
  std::vector<uint32_t> pair_counts(n_docs), lengths(n_docs);
  parallel_for(n_tasks, n_threads, [&](size_t task, int) {
    std::vector<uint32_t> scratch;
    const size_t end = std::min(n_docs, (task + 1) * kDocsPerTask);
    for (size_t d = task * kDocsPerTask; d < end; ++d) {
      const size_t before = pairs[task].size();
      const auto n = static_cast<size_t>(offsets[d + 1] - offsets[d]);
      count_terms(words + offsets[d], n, word_to_term, n_words, scratch, pairs[task]);
      pair_counts[d] = static_cast<uint32_t>(pairs[task].size() - before);
      if (scratch.size() > 0xFFFFFFFFu) throw std::invalid_argument("document too long");
      lengths[d] = static_cast<uint32_t>(scratch.size());
    }
  });

  std::unique_lock<std::shared_mutex> lock(mutex_);
  const size_t first = ext_ids_.size();
  if (first + n_docs > kMaxSlots) throw std::invalid_argument("too many documents for one index");

  // Group the postings by term (documents stay in order within a term).
  size_t n_terms = lists_.size();
  for (const auto& run : pairs)
    for (const auto& p : run) n_terms = std::max<size_t>(n_terms, p.first + 1);
  std::vector<size_t> starts(n_terms + 1, 0);
  for (const auto& run : pairs)
    for (const auto& p : run) ++starts[p.first + 1];
  for (size_t t = 0; t < n_terms; ++t) starts[t + 1] += starts[t];
  std::vector<uint32_t> docs(starts[n_terms]), tfs(starts[n_terms]);
  {
    std::vector<size_t> fill(starts.begin(), starts.end() - 1);
    for (size_t task = 0; task < n_tasks; ++task) {
      const auto& run = pairs[task];
      size_t i = 0;
      const size_t end = std::min(n_docs, (task + 1) * kDocsPerTask);
      for (size_t d = task * kDocsPerTask; d < end; ++d) {
        for (uint32_t c = 0; c < pair_counts[d]; ++c, ++i) {
          const size_t at = fill[run[i].first]++;
          docs[at] = static_cast<uint32_t>(first + d);
          tfs[at] = run[i].second;
        }
      }
    }
  }
  pairs.clear();

  ext_ids_.insert(ext_ids_.end(), ext_ids, ext_ids + n_docs);
  lengths_.insert(lengths_.end(), lengths.begin(), lengths.end());
  for (uint32_t len : lengths) {
    scoring_len_.push_back(scoring_length(params_, len));
    total_length_ += len;
  }
  n_live_ += n_docs;
  lists_.resize(n_terms);
  parallel_for((n_terms + kTermsPerTask - 1) / kTermsPerTask, n_threads, [&](size_t task, int) {
    const size_t end = std::min(n_terms, (task + 1) * kTermsPerTask);
    for (size_t t = task * kTermsPerTask; t < end; ++t)
      lists_[t].append(docs.data() + starts[t], tfs.data() + starts[t], starts[t + 1] - starts[t]);
  });

  std::vector<std::pair<int64_t, uint32_t>> added(n_docs);
  for (size_t d = 0; d < n_docs; ++d) added[d] = {ext_ids[d], static_cast<uint32_t>(first + d)};
  std::sort(added.begin(), added.end());
  const size_t old = by_ext_id_.size();
  by_ext_id_.insert(by_ext_id_.end(), added.begin(), added.end());
  std::inplace_merge(by_ext_id_.begin(), by_ext_id_.begin() + old, by_ext_id_.end());
  refresh_norms();
  refresh_id_order();
}

void Bm25Index::has_ids(const int64_t* ext_ids, size_t n, uint8_t* out) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  for (size_t i = 0; i < n; ++i) {
    const auto it = std::lower_bound(by_ext_id_.begin(), by_ext_id_.end(),
                                     std::make_pair(ext_ids[i], uint32_t{0}));
    out[i] = it != by_ext_id_.end() && it->first == ext_ids[i];
  }
}

void Bm25Index::remove(const int64_t* ext_ids, size_t n, int n_threads) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  std::vector<uint8_t> dead(ext_ids_.size(), 0);
  std::vector<uint32_t> dead_sorted;
  for (size_t i = 0; i < n; ++i) {
    const auto it = std::lower_bound(by_ext_id_.begin(), by_ext_id_.end(),
                                     std::make_pair(ext_ids[i], uint32_t{0}));
    if (it == by_ext_id_.end() || it->first != ext_ids[i])
      throw std::invalid_argument("id " + std::to_string(ext_ids[i]) + " is not in the index");
    if (!dead[it->second]) dead_sorted.push_back(it->second);
    dead[it->second] = 1;
  }
  std::sort(dead_sorted.begin(), dead_sorted.end());
  parallel_for((lists_.size() + kTermsPerTask - 1) / kTermsPerTask, n_threads, [&](size_t task, int) {
    const size_t end = std::min(lists_.size(), (task + 1) * kTermsPerTask);
    for (size_t t = task * kTermsPerTask; t < end; ++t)
      lists_[t].remove_dead(dead.data(), dead_sorted);
  });
  for (uint32_t d : dead_sorted) {
    ext_ids_[d] = -1;
    total_length_ -= lengths_[d];
  }
  n_live_ -= dead_sorted.size();
  by_ext_id_.erase(std::remove_if(by_ext_id_.begin(), by_ext_id_.end(),
                                  [&](const auto& e) { return dead[e.second] != 0; }),
                   by_ext_id_.end());
  refresh_norms();
  refresh_id_order();
}

bool Bm25Index::term_weight(int64_t term, double multiplicity, double& weight) const {
  if (term < 0 || static_cast<size_t>(term) >= lists_.size()) return false;
  const PostingList& list = lists_[static_cast<size_t>(term)];
  if (list.size() == 0) return false;  // a term no live document has contributes nothing
  weight = multiplicity *
           bm25_idf(params_, static_cast<double>(list.size()), static_cast<double>(n_live_));
  return true;
}

Bm25Index::PreparedQuery Bm25Index::prepare(const int64_t* terms, const double* weights,
                                            size_t n, bool with_ranges) const {
  PreparedQuery q;
  q.terms.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    double weight = 0.0;
    if (!term_weight(terms[i], weights[i], weight)) continue;
    const auto t = static_cast<size_t>(terms[i]);
    q.terms.emplace_back(lists_[t], term_cache(t, with_ranges), weight, q.terms.size());
    q.base += weight * g0_;
    q.total_postings += lists_[t].size();
  }
  return q;
}

void Bm25Index::weigh_queries(const QueryBatch& queries, int64_t* out_terms, double* out_weights,
                              double* out_base) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  for (size_t qi = 0; qi < queries.nq; ++qi) {
    double base = 0.0;
    for (int64_t i = queries.offsets[qi]; i < queries.offsets[qi + 1]; ++i) {
      double weight = 0.0;
      const bool live = term_weight(queries.terms[i], queries.weights[i], weight);
      out_terms[i] = live ? queries.terms[i] : -1;
      out_weights[i] = live ? weight : 0.0;
      if (live) base += weight * g0_;  // the order prepare() adds in
    }
    out_base[qi] = base;
  }
}

Bm25Index::Impacts Bm25Index::impacts(int n_threads) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  Impacts out;
  out.offsets.assign(lists_.size() + 1, 0);
  for (size_t t = 0; t < lists_.size(); ++t)
    out.offsets[t + 1] = out.offsets[t] + static_cast<int64_t>(lists_[t].size());
  out.docs.resize(static_cast<size_t>(out.offsets.back()));
  out.values.resize(out.docs.size());
  parallel_for((lists_.size() + kTermsPerTask - 1) / kTermsPerTask, n_threads, [&](size_t task, int) {
    uint32_t docs[kBlockSize], tfs[kBlockSize];
    const size_t end = std::min(lists_.size(), (task + 1) * kTermsPerTask);
    for (size_t t = task * kTermsPerTask; t < end; ++t) {
      const PostingList& list = lists_[t];
      size_t at = static_cast<size_t>(out.offsets[t]);
      for (size_t b = 0; b < list.num_blocks(); ++b) {
        const size_t n = list.decode(b, docs, tfs);
        for (size_t i = 0; i < n; ++i, ++at) {
          out.docs[at] = docs[i];
          out.values[at] = posting_excess(tfs[i], docs[i]);
        }
      }
    }
  });
  out.slot_ids = ext_ids_;
  return out;
}

// MaxScore and BMW need no accumulator: a one-query call then takes none from the
// pool (two lock round trips saved per call). One left by an exception may hold a
// query's sums: it is dropped, not given back.
class Bm25Index::AccumulatorLease {
 public:
  explicit AccumulatorLease(const Bm25Index& owner)
      : owner_(owner), exceptions_(std::uncaught_exceptions()) {}
  AccumulatorLease(const AccumulatorLease&) = delete;
  AccumulatorLease& operator=(const AccumulatorLease&) = delete;
  ~AccumulatorLease() {
    if (acc_ && std::uncaught_exceptions() == exceptions_) owner_.give_back(std::move(acc_));
  }
  Accumulator& get() {
    if (!acc_) acc_ = owner_.take_accumulator();
    return *acc_;
  }

 private:
  const Bm25Index& owner_;
  const int exceptions_;
  std::unique_ptr<Accumulator> acc_;
};

void Bm25Index::run_query(const PreparedQuery& q, size_t k, QueryAlgorithm algorithm,
                          AccumulatorLease& lease, float* scores, int64_t* ids, uint8_t* used,
                          const uint8_t* allowed) const {
  if (algorithm == QueryAlgorithm::Auto)
    algorithm = choose_algorithm(q.total_postings, k, ext_ids_.size());
  if (used) *used = static_cast<uint8_t>(algorithm);
  Accumulator* const acc_ptr = algorithm == QueryAlgorithm::Exhaustive ? &lease.get() : nullptr;
  // Where external ids ascend with slots, the results are ranked by slot (same order, and
  // no read of an external id - a cache miss - per entering candidate); they are mapped
  // to external ids at the end.
  const int64_t* const sink_ids = ids_ascending_ ? nullptr : ext_ids_.data();
  if (acc_ptr) {
    Accumulator& acc = *acc_ptr;
    acc.resize(ext_ids_.size());
    exhaustive_accumulate(q.terms, acc);
    // Only documents holding a query term are results (as in Lucene, PISA and tantivy);
    // the row is padded with (-1, -inf) past them.
    acc.drain_top_k(k, q.base, seed_threshold(q.terms, k, q.base, 2, allowed), sink_ids,
                    allowed, scores, ids);
  } else {
    TopKQueue queue(k);
    DocSink sink(queue, q.base, sink_ids, allowed);
    // Enough blocks for about 4k documents (at least 2), the size that measured
    // fastest on the Zipfian corpus of bench/_zipf.py at k = 10 and 100.
    queue.raise_floor(seed_threshold(q.terms, k, q.base, std::max<size_t>(2, 4 * k / kBlockSize + 1),
                                     allowed));
    if (algorithm == QueryAlgorithm::MaxScore) {
      MaxScoreQuery(q.terms, sink).run();
    } else if (algorithm == QueryAlgorithm::BlockMaxPruning) {
      BlockMaxPruningQuery(q.terms, sink, ext_ids_.size()).run();
    } else {
      BlockMaxWandQuery(q.terms, sink).run();
    }
    // The queue pads the row with (-1, -inf) past the matches, as above.
    queue.finish(scores, ids);
  }
  if (ids_ascending_)
    for (size_t i = 0; i < k; ++i)
      if (ids[i] != kPaddingId) ids[i] = ext_ids_[static_cast<size_t>(ids[i])];
}

std::unique_ptr<Accumulator> Bm25Index::take_accumulator() const {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  if (pool_.empty()) return std::make_unique<Accumulator>();
  auto acc = std::move(pool_.back());
  pool_.pop_back();
  return acc;
}

std::vector<uint8_t> Bm25Index::allowed_slots(const AllowFilter& allow) const {
  std::vector<uint8_t> allowed;
  if (allow.active()) {
    allowed.resize(ext_ids_.size());
    for (size_t d = 0; d < ext_ids_.size(); ++d)
      allowed[d] = ext_ids_[d] >= 0 && allow.allows(d, ext_ids_[d]);
  }
  return allowed;
}

int Bm25Index::query_workers(size_t nq, int n_threads) {
  if (nq <= 1) return 1;  // microseconds: not worth asking how many cores there are
  return std::max(1, std::min<int>(resolve_threads(n_threads), static_cast<int>(nq)));
}

void Bm25Index::give_back(std::unique_ptr<Accumulator> acc) const {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  pool_.push_back(std::move(acc));
}

void Bm25Index::search(const QueryBatch& queries, size_t k, QueryAlgorithm algorithm,
                       int n_threads, float* scores, int64_t* ids, uint8_t* algorithm_used,
                       const AllowFilter& allow) const {
  if (k == 0) throw std::invalid_argument("k must be >= 1");
  std::shared_lock<std::shared_mutex> lock(mutex_);
  // The filter by slot, once per batch: the algorithms test one byte per candidate.
  const std::vector<uint8_t> allowed = allowed_slots(allow);
  const int workers = query_workers(queries.nq, n_threads);
  auto run = [&](size_t qi, AccumulatorLease& acc) {
    const int64_t begin = queries.offsets[qi], end = queries.offsets[qi + 1];
    const PreparedQuery q = prepare(queries.terms + begin, queries.weights + begin,
                                    static_cast<size_t>(end - begin),
                                    algorithm == QueryAlgorithm::BlockMaxPruning);
    run_query(q, k, algorithm, acc, scores + qi * k, ids + qi * k,
              algorithm_used ? algorithm_used + qi : nullptr,
              allow.active() ? allowed.data() : nullptr);
  };
  if (workers == 1) {  // inline: no worker vector, no std::function per call
    AccumulatorLease lease(*this);
    for (size_t qi = 0; qi < queries.nq; ++qi) run(qi, lease);
    return;
  }
  std::vector<std::unique_ptr<AccumulatorLease>> leases(workers);
  for (auto& l : leases) l = std::make_unique<AccumulatorLease>(*this);
  parallel_for(queries.nq, workers, [&](size_t qi, int worker) { run(qi, *leases[worker]); });
}

void Bm25Index::get_scores(const int64_t* terms, const double* weights, size_t n,
                           float* out) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  const PreparedQuery q = prepare(terms, weights, n);
  auto acc = take_accumulator();
  acc->resize(ext_ids_.size());
  exhaustive_accumulate(q.terms, *acc);
  size_t j = 0;
  for (size_t d = 0; d < ext_ids_.size(); ++d) {
    if (ext_ids_[d] < 0) continue;
    out[j++] = static_cast<float>(q.base + (acc->has(static_cast<uint32_t>(d)) ? acc->sum[d] : 0.0));
  }
  acc->drain([](uint32_t, double) {});
  give_back(std::move(acc));
}

size_t Bm25Index::num_docs() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return n_live_;
}

uint64_t Bm25Index::total_length() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return total_length_;
}

size_t Bm25Index::num_terms() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return lists_.size();
}

std::vector<int64_t> Bm25Index::live_ids() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  std::vector<int64_t> out;
  out.reserve(n_live_);
  for (int64_t id : ext_ids_)
    if (id >= 0) out.push_back(id);
  return out;
}

std::vector<int64_t> Bm25Index::slot_ids() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return ext_ids_;
}

std::vector<int64_t> Bm25Index::doc_freqs() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  std::vector<int64_t> out(lists_.size());
  for (size_t t = 0; t < lists_.size(); ++t) out[t] = static_cast<int64_t>(lists_[t].size());
  return out;
}

size_t Bm25Index::memory_bytes() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  size_t bytes = lists_.capacity() * sizeof(PostingList);
  for (const auto& l : lists_) bytes += l.memory_bytes();
  for (const auto& c : caches_)
    bytes += (c.excess.capacity() + c.block_max.capacity()) * sizeof(float) +
             c.doc_bits.capacity() * sizeof(TermCache::DocBits) + c.ranges.memory_bytes();
  bytes += ext_ids_.capacity() * sizeof(int64_t) + lengths_.capacity() * sizeof(uint32_t) +
           scoring_len_.capacity() * sizeof(uint32_t) + norm_.capacity() * sizeof(double) +
           by_ext_id_.capacity() * sizeof(by_ext_id_[0]);
  return bytes;
}

size_t Bm25Index::postings_bytes() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  size_t bytes = 0;
  for (const auto& l : lists_) bytes += l.payload_bytes();
  return bytes;
}

Bm25Index::Arrays Bm25Index::to_arrays() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  Arrays a;
  a.doc_ids = ext_ids_;
  a.doc_lengths.assign(lengths_.begin(), lengths_.end());
  for (const auto& l : lists_) {
    a.list_sizes.push_back(static_cast<int64_t>(l.size()));
    a.postings.insert(a.postings.end(), l.payload(), l.payload() + l.payload_bytes());
    a.list_ends.push_back(static_cast<int64_t>(a.postings.size()));
  }
  return a;
}

std::unique_ptr<Bm25Index> Bm25Index::from_arrays(const Bm25Params& params, const Arrays& a) {
  auto index = std::make_unique<Bm25Index>(params);
  const size_t n_slots = a.doc_ids.size(), n_terms = a.list_sizes.size();
  if (a.doc_lengths.size() != n_slots || a.list_ends.size() != n_terms || n_slots > kMaxSlots)
    throw std::invalid_argument("array sizes do not agree");
  for (size_t d = 0; d < n_slots; ++d) {
    if (a.doc_lengths[d] < 0 || a.doc_lengths[d] > 0xFFFFFFFFll)
      throw std::invalid_argument("document length out of range");
    if (a.doc_ids[d] < -1) throw std::invalid_argument("negative document id");
    index->ext_ids_.push_back(a.doc_ids[d]);
    index->lengths_.push_back(static_cast<uint32_t>(a.doc_lengths[d]));
    index->scoring_len_.push_back(scoring_length(params, index->lengths_.back()));
    if (a.doc_ids[d] >= 0) {
      index->by_ext_id_.emplace_back(a.doc_ids[d], static_cast<uint32_t>(d));
      index->total_length_ += index->lengths_.back();
      ++index->n_live_;
    }
  }
  std::sort(index->by_ext_id_.begin(), index->by_ext_id_.end());
  for (size_t i = 1; i < index->by_ext_id_.size(); ++i)
    if (index->by_ext_id_[i].first == index->by_ext_id_[i - 1].first)
      throw std::invalid_argument("duplicate document id");
  // A document's length is its number of indexed tokens, so the frequencies of its
  // postings add up to it: checked, it bounds the postings a file can claim per document.
  std::vector<uint64_t> tf_sums(n_slots, 0);
  int64_t start = 0;
  for (size_t t = 0; t < n_terms; ++t) {
    const int64_t end = a.list_ends[t];
    if (end < start || static_cast<size_t>(end) > a.postings.size() || a.list_sizes[t] < 0 ||
        static_cast<size_t>(a.list_sizes[t]) > n_slots)
      throw std::invalid_argument("posting list bounds out of range");
    index->lists_.push_back(PostingList::from_payload(
        a.postings.data() + start, static_cast<size_t>(end - start),
        static_cast<size_t>(a.list_sizes[t]), n_slots, index->ext_ids_.data(),
        index->lengths_.data(), tf_sums.data()));
    start = end;
  }
  for (size_t d = 0; d < n_slots; ++d)
    if (index->ext_ids_[d] >= 0 && tf_sums[d] != index->lengths_[d])
      throw std::invalid_argument("document " + std::to_string(a.doc_ids[d]) +
                                  ": its term frequencies do not add up to its length");
  if (static_cast<size_t>(start) != a.postings.size())
    throw std::invalid_argument("posting bytes left over");
  index->refresh_norms();
  index->refresh_id_order();
  return index;
}

}  // namespace ragcore
