// Turns BM25 queries into the arrays the index scores (QueryBatch): tokenizing
// (tokenize.h's rule), dropping stopwords, stemming, looking terms up and counting
// each term once per query, in order of first appearance, all without Python.
//
// Stemming stays in the caller's hands (a Snowball stemmer behind a callback): it
// is asked once per word the cache does not hold. The cache, word -> stem, is a
// least-recently-used list bounded by a number of words and a number of bytes, so
// a service that sees endless new words keeps a fixed footprint. Without a stemmer
// there is no cache: a word is its own term.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ragcore/util/string_id_map.h"

namespace ragcore {

// Queries as QueryBatch arrays: query q is terms[offsets[q] .. offsets[q+1]),
// weights[i] how often terms[i] occurs in it.
struct EncodedQueries {
  std::vector<int64_t> terms;
  std::vector<double> weights;
  std::vector<int64_t> offsets;
};

// A bounded word -> stem cache, least recently used out first.
class StemCache {
 public:
  StemCache(size_t max_words, size_t max_bytes) : max_words_(max_words), max_bytes_(max_bytes) {}

  // Copies the stem of word into stem and marks it recently used; false if absent.
  bool get(std::string_view word, std::string& stem);
  void put(std::string_view word, std::string_view stem);

  size_t size() const { return entries_.size(); }
  size_t bytes() const { return bytes_; }
  size_t max_words() const { return max_words_; }
  size_t max_bytes() const { return max_bytes_; }

 private:
  using Entry = std::pair<std::string, std::string>;  // (word, stem)
  static size_t cost(const Entry& e) { return e.first.size() + e.second.size() + kEntryOverhead; }
  // Node, map slot and string headers of one entry, counted so that many short
  // words cannot hide behind the byte bound.
  static constexpr size_t kEntryOverhead = 128;

  size_t max_words_, max_bytes_, bytes_ = 0;
  std::list<Entry> entries_;  // most recently used first; nodes never move
  std::unordered_map<std::string_view, std::list<Entry>::iterator> where_;  // keys view nodes
};

class QueryEncoder {
 public:
  // Stems words (in order); returns one stem per word.
  using StemFn = std::function<std::vector<std::string>(const std::vector<std::string>&)>;

  static constexpr size_t kDefaultCacheWords = 1u << 16;
  static constexpr size_t kDefaultCacheBytes = 16u << 20;

  // stems: whether a stemmer is given to encode (it must be, every call).
  QueryEncoder(const std::vector<std::string_view>& stopwords, bool stems,
               size_t cache_words = kDefaultCacheWords, size_t cache_bytes = kDefaultCacheBytes);

  // Appends index terms; term ids continue from num_terms(). A term already
  // present throws std::invalid_argument (ids would no longer match the caller's).
  void add_terms(const std::vector<std::string_view>& terms);
  size_t num_terms() const;

  // Query texts (UTF-8, tokenized by the default rule); throws Utf8Error naming a
  // query by its position.
  EncodedQueries encode_texts(const std::vector<std::string_view>& texts, const StemFn& stem) const;
  // Pre-tokenized queries, tokens used as given.
  EncodedQueries encode_tokens(const std::vector<std::vector<std::string_view>>& queries,
                               const StemFn& stem) const;

  // One query text of at most kShortQueryTerms index-term tokens, without a stemmer:
  // the per-call path. Writes what encode_texts({text}) would into out (cleared
  // first, its capacity kept: a caller that reuses it allocates nothing) and
  // returns true; returns false, out unspecified, where that path does not apply
  // (a stemmer, or more terms: de-duplication here is a linear scan).
  static constexpr size_t kShortQueryTerms = 64;
  bool encode_short(std::string_view text, EncodedQueries& out) const;

  size_t cached_words() const;
  size_t cache_bytes() const;

 private:
  struct Words;  // the tokens of a batch, each distinct word once
  EncodedQueries encode(const Words& words, const StemFn& stem) const;
  std::vector<int64_t> resolve(const Words& words, const StemFn& stem) const;

  bool stems_;
  StringIdMap stopwords_;
  mutable std::shared_mutex terms_mutex_;  // add_terms against lookups
  StringIdMap terms_;
  mutable std::mutex cache_mutex_;
  mutable StemCache cache_;
};

}  // namespace ragcore
