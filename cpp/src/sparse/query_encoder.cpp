#include "ragcore/sparse/query_encoder.h"

#include <stdexcept>
#include <unordered_map>

#include "ragcore/sparse/tokenize.h"

namespace ragcore {

bool StemCache::get(std::string_view word, std::string& stem) {
  const auto it = where_.find(word);
  if (it == where_.end()) return false;
  entries_.splice(entries_.begin(), entries_, it->second);  // most recent first
  stem = it->second->second;
  return true;
}

void StemCache::put(std::string_view word, std::string_view stem) {
  if (max_words_ == 0 || where_.count(word)) return;
  Entry entry{std::string(word), std::string(stem)};
  if (cost(entry) > max_bytes_) return;  // a huge word would flush everything else
  bytes_ += cost(entry);
  entries_.push_front(std::move(entry));
  where_.emplace(entries_.front().first, entries_.begin());
  while (entries_.size() > max_words_ || bytes_ > max_bytes_) {
    bytes_ -= cost(entries_.back());
    where_.erase(entries_.back().first);
    entries_.pop_back();
  }
}

// The tokens of a batch of queries: token i of query q is words.word(ids[i]) for i
// in [offsets[q], offsets[q+1]).
struct QueryEncoder::Words {
  StringIdMap words;
  std::vector<uint32_t> ids;
  std::vector<int64_t> offsets{0};
};

QueryEncoder::QueryEncoder(const std::vector<std::string_view>& stopwords, bool stems,
                           size_t cache_words, size_t cache_bytes)
    : stems_(stems), cache_(cache_words, cache_bytes) {
  for (std::string_view w : stopwords) stopwords_.insert(w);
}

void QueryEncoder::add_terms(const std::vector<std::string_view>& terms) {
  std::unique_lock<std::shared_mutex> lock(terms_mutex_);
  for (std::string_view t : terms) {
    const size_t before = terms_.size();
    if (terms_.insert(t) != before)
      throw std::invalid_argument("add_terms: term '" + std::string(t) + "' is already present");
  }
}

size_t QueryEncoder::num_terms() const {
  std::shared_lock<std::shared_mutex> lock(terms_mutex_);
  return terms_.size();
}

size_t QueryEncoder::cached_words() const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return cache_.size();
}

size_t QueryEncoder::cache_bytes() const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return cache_.bytes();
}

EncodedQueries QueryEncoder::encode_texts(const std::vector<std::string_view>& texts,
                                          const StemFn& stem) const {
  Words words;
  WordTokenizer tokenizer;
  for (size_t q = 0; q < texts.size(); ++q) {
    tokenizer.tokenize(texts[q], q, [&](std::string_view w) { words.ids.push_back(words.words.insert(w)); });
    words.offsets.push_back(static_cast<int64_t>(words.ids.size()));
  }
  return encode(words, stem);
}

EncodedQueries QueryEncoder::encode_tokens(const std::vector<std::vector<std::string_view>>& queries,
                                           const StemFn& stem) const {
  Words words;
  for (const auto& query : queries) {
    for (std::string_view w : query) words.ids.push_back(words.words.insert(w));
    words.offsets.push_back(static_cast<int64_t>(words.ids.size()));
  }
  return encode(words, stem);
}

bool QueryEncoder::encode_short(std::string_view text, EncodedQueries& out) const {
  if (stems_) return false;
  thread_local WordTokenizer tokenizer;  // its buffers are reused: no allocation per call
  out.terms.clear();
  out.weights.clear();
  out.offsets.assign({0, 0});
  // Words are looked up a round at a time, each stage of the look-up prefetched for the
  // whole round first: between one-query calls the term map has left the caches, and
  // one word after another would wait for its three misses in turn.
  constexpr size_t kWordsPerRound = 16;
  std::string_view words[kWordsPerRound];  // views into the tokenizer's buffer
  uint64_t hashes[kWordsPerRound];
  size_t n = 0;
  bool fits = true;
  auto look_up_round = [&] {
    for (size_t i = 0; i < n; ++i) terms_.prefetch_entry(hashes[i]);
    for (size_t i = 0; i < n; ++i) terms_.prefetch_word(hashes[i]);
    for (size_t i = 0; i < n && fits; ++i) {
      if (stopwords_.find(words[i], hashes[i]) != StringIdMap::kMissing) continue;
      const uint32_t t = terms_.find(words[i], hashes[i]);
      if (t == StringIdMap::kMissing) continue;
      size_t j = 0;
      while (j < out.terms.size() && out.terms[j] != t) ++j;
      if (j < out.terms.size()) {
        out.weights[j] += 1.0;
      } else if (out.terms.size() == kShortQueryTerms) {
        fits = false;
      } else {
        out.terms.push_back(t);
        out.weights.push_back(1.0);
      }
    }
    n = 0;
  };
  std::shared_lock<std::shared_mutex> lock(terms_mutex_);
  tokenizer.tokenize(text, 0, [&](std::string_view w) {
    if (!fits) return;
    words[n] = w;
    hashes[n] = StringIdMap::hash(w);
    terms_.prefetch_slot(hashes[n]);
    if (++n == kWordsPerRound) look_up_round();
  });
  if (fits) look_up_round();
  out.offsets[1] = static_cast<int64_t>(out.terms.size());
  return fits;
}

// The term id of each distinct word of the batch (-1: a stopword or not an index term).
std::vector<int64_t> QueryEncoder::resolve(const Words& words, const StemFn& stem) const {
  const auto n = static_cast<uint32_t>(words.words.size());
  std::vector<int64_t> term(n, -1);
  std::vector<std::string> stems(stems_ ? n : 0);
  std::vector<uint32_t> missing;
  std::vector<std::string> missing_words;
  if (stems_) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    for (uint32_t w = 0; w < n; ++w) {
      const std::string_view word = words.words.word(w);
      if (stopwords_.find(word) != StringIdMap::kMissing || cache_.get(word, stems[w])) continue;
      missing.push_back(w);
      missing_words.emplace_back(word);
    }
  }
  if (!missing.empty()) {  // no lock held: the stemmer may take the GIL
    if (!stem) throw std::invalid_argument("encode: this encoder needs a stemmer");
    std::vector<std::string> found = stem(missing_words);
    if (found.size() != missing.size())
      throw std::invalid_argument("encode: the stemmer returned " + std::to_string(found.size()) +
                                  " stems for " + std::to_string(missing.size()) + " words");
    std::lock_guard<std::mutex> lock(cache_mutex_);
    for (size_t i = 0; i < missing.size(); ++i) {
      cache_.put(missing_words[i], found[i]);
      stems[missing[i]] = std::move(found[i]);
    }
  }
  std::shared_lock<std::shared_mutex> lock(terms_mutex_);
  for (uint32_t w = 0; w < n; ++w) {
    const std::string_view word = words.words.word(w);
    if (stopwords_.find(word) != StringIdMap::kMissing) continue;
    const uint32_t t = terms_.find(stems_ ? std::string_view(stems[w]) : word);
    if (t != StringIdMap::kMissing) term[w] = t;
  }
  return term;
}

EncodedQueries QueryEncoder::encode(const Words& words, const StemFn& stem) const {
  const std::vector<int64_t> term = resolve(words, stem);
  // Distinct terms of the batch numbered densely, so that counting a query's terms
  // is an array look-up (two words can share a term through stemming).
  std::unordered_map<int64_t, int32_t> dense;
  std::vector<int32_t> slot(term.size(), -1);
  for (size_t w = 0; w < term.size(); ++w)
    if (term[w] >= 0) slot[w] = dense.emplace(term[w], static_cast<int32_t>(dense.size())).first->second;
  std::vector<int64_t> position(dense.size(), -1);  // in out.terms, for the current query
  EncodedQueries out;
  out.offsets.reserve(words.offsets.size());
  out.offsets.push_back(0);
  for (size_t q = 0; q + 1 < words.offsets.size(); ++q) {
    const int64_t first = static_cast<int64_t>(out.terms.size());
    for (int64_t i = words.offsets[q]; i < words.offsets[q + 1]; ++i) {
      const uint32_t w = words.ids[i];
      if (slot[w] < 0) continue;
      int64_t& pos = position[slot[w]];
      if (pos < first) {  // first time in this query
        pos = static_cast<int64_t>(out.terms.size());
        out.terms.push_back(term[w]);
        out.weights.push_back(1.0);
      } else {
        out.weights[pos] += 1.0;
      }
    }
    out.offsets.push_back(static_cast<int64_t>(out.terms.size()));
  }
  return out;
}

}  // namespace ragcore
