// The vocabulary of surface words seen in a corpus: word ids 0, 1, 2, ... in
// order of first appearance. The Python layer maps each word to an index term
// once (stopwords, stemming; src/ragcore/sparse/bm25.py).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "ragcore/sparse/tokenize.h"
#include "ragcore/util/string_id_map.h"

namespace ragcore {

class Vocabulary {
 public:
  // Tokenizes UTF-8 texts on up to n_threads threads, adding new words. Throws
  // Utf8Error naming a document by its position in texts.
  TokenizedBatch tokenize(const std::vector<std::string_view>& texts, int n_threads);

  // Word ids of pre-tokenized documents (docs[d]: the UTF-8 tokens of document
  // d, used as they are), adding new words.
  TokenizedBatch add_tokens(const std::vector<std::vector<std::string_view>>& docs);

  // The word with this id (< size()); the view lives until the next word is added.
  std::string_view word(size_t id) const { return words_.word(static_cast<uint32_t>(id)); }
  size_t size() const { return words_.size(); }

 private:
  StringIdMap words_;
};

}  // namespace ragcore
