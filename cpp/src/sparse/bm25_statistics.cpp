// Bm25Index scoring under statistics given from outside (a sharded index's global
// N, total length and document frequencies). Each posting's part is computed with
// the same expressions as refresh_norms and posting_excess, and the parts are
// summed in query order, so the scores equal, bit for bit, those of one index
// holding every shard's documents.
#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "ragcore/sparse/bm25_index.h"
#include "ragcore/sparse/query/exhaustive_query.h"
#include "ragcore/util/parallel.h"

namespace ragcore {

void Bm25Index::check_statistics(const Statistics& stats, const int64_t* terms, size_t n) const {
  if (stats.n_docs < n_live_)
    throw std::invalid_argument("statistics: n_docs " + std::to_string(stats.n_docs) +
                                " is below this index's " + std::to_string(n_live_) + " documents");
  if (stats.total_length < total_length_)
    throw std::invalid_argument("statistics: total_length is below this index's total length");
  for (size_t i = 0; i < n; ++i) {
    const int64_t df = stats.doc_freqs[i];
    if (df < 0 || static_cast<uint64_t>(df) > stats.n_docs)
      throw std::invalid_argument("statistics: a document frequency is outside [0, n_docs]");
    const int64_t t = terms[i];
    if (t >= 0 && static_cast<size_t>(t) < lists_.size() &&
        lists_[static_cast<size_t>(t)].size() > static_cast<size_t>(df))
      throw std::invalid_argument(
          "statistics: a document frequency is below this index's for the same term");
  }
}

double Bm25Index::accumulate_with_statistics(const int64_t* terms, const double* weights,
                                             const int64_t* doc_freqs, size_t n,
                                             const Statistics& stats, Accumulator& acc) const {
  const double avgdl = (stats.n_docs > 0 && stats.total_length > 0)
                           ? static_cast<double>(stats.total_length) / stats.n_docs
                           : 1.0;
  const double g0 = bm25_absent_part(params_);
  double base = 0.0;
  uint32_t docs[kBlockSize], tfs[kBlockSize];
  for (size_t i = 0; i < n; ++i) {
    if (doc_freqs[i] <= 0) continue;
    const double weight = weights[i] * bm25_idf(params_, static_cast<double>(doc_freqs[i]),
                                                static_cast<double>(stats.n_docs));
    base += weight * g0;
    const int64_t t = terms[i];
    if (t < 0 || static_cast<size_t>(t) >= lists_.size()) continue;
    const PostingList& list = lists_[static_cast<size_t>(t)];
    for (size_t b = 0; b < list.num_blocks(); ++b) {
      const size_t count = list.decode(b, docs, tfs);
      for (size_t j = 0; j < count; ++j) {
        const uint32_t d = docs[j];
        const double norm = 1.0 - params_.b + params_.b * scoring_len_[d] / avgdl;
        const auto excess = static_cast<float>(bm25_tf_part(params_, tfs[j], norm) - g0);
        acc.sum[d] += weight * excess;
        acc.touched[d >> 6] |= uint64_t{1} << (d & 63);
      }
    }
  }
  return base;
}

void Bm25Index::search_with_statistics(const QueryBatch& queries, const Statistics& stats,
                                       size_t k, int n_threads, float* scores, int64_t* ids,
                                       const AllowFilter& allow) const {
  if (k == 0) throw std::invalid_argument("k must be >= 1");
  std::shared_lock<std::shared_mutex> lock(mutex_);
  const size_t n_terms = queries.nq ? static_cast<size_t>(queries.offsets[queries.nq]) : 0;
  check_statistics(stats, queries.terms, n_terms);
  const std::vector<uint8_t> allowed = allowed_slots(allow);
  const int workers = query_workers(queries.nq, n_threads);
  std::vector<std::unique_ptr<Accumulator>> accs(static_cast<size_t>(workers));
  for (auto& a : accs) {
    a = take_accumulator();
    a->resize(ext_ids_.size());
  }
  auto run = [&](size_t qi, int worker) {
    Accumulator& acc = *accs[static_cast<size_t>(worker)];
    const int64_t begin = queries.offsets[qi], end = queries.offsets[qi + 1];
    const double base = accumulate_with_statistics(
        queries.terms + begin, queries.weights + begin, stats.doc_freqs + begin,
        static_cast<size_t>(end - begin), stats, acc);
    acc.drain_top_k(k, base, -std::numeric_limits<float>::infinity(), ext_ids_.data(),
                    allow.active() ? allowed.data() : nullptr, scores + qi * k, ids + qi * k);
  };
  if (workers == 1) {
    for (size_t qi = 0; qi < queries.nq; ++qi) run(qi, 0);
  } else {
    parallel_for(queries.nq, workers, run);
  }
  for (auto& a : accs) give_back(std::move(a));
}

void Bm25Index::get_scores_with_statistics(const int64_t* terms, const double* weights, size_t n,
                                           const Statistics& stats, float* out) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  check_statistics(stats, terms, n);
  auto acc = take_accumulator();
  acc->resize(ext_ids_.size());
  const double base = accumulate_with_statistics(terms, weights, stats.doc_freqs, n, stats, *acc);
  size_t j = 0;
  for (size_t d = 0; d < ext_ids_.size(); ++d) {
    if (ext_ids_[d] < 0) continue;
    out[j++] = static_cast<float>(base + (acc->has(static_cast<uint32_t>(d)) ? acc->sum[d] : 0.0));
  }
  acc->drain([](uint32_t, double) {});
  give_back(std::move(acc));
}

}  // namespace ragcore
