// The vocabulary of surface words seen in a corpus: word ids 0, 1, 2, ... in
// order of first appearance. The Python layer maps each word to an index term
// once (stopwords, stemming; src/ragcore/sparse/bm25.py).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ragcore/sparse/tokenize.h"
#include "ragcore/util/string_id_map.h"

namespace ragcore {

// Safe to share between threads: every member takes the vocabulary's lock (the bindings
// release the GIL around tokenize and add_tokens).
class Vocabulary {
 public:
  // Tokenizes UTF-8 texts on up to n_threads threads, adding new words. Throws
  // Utf8Error naming a document by its position in texts.
  TokenizedBatch tokenize(const std::vector<std::string_view>& texts, int n_threads);

  // Word ids of pre-tokenized documents (docs[d]: the UTF-8 tokens of document
  // d, used as they are), adding new words.
  TokenizedBatch add_tokens(const std::vector<std::vector<std::string_view>>& docs);

  // Copies of the words with ids >= start, in id order.
  std::vector<std::string> words(size_t start) const;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  StringIdMap words_;
};

}  // namespace ragcore
