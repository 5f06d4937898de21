#include "ragcore/sparse/vocabulary.h"

namespace ragcore {

TokenizedBatch Vocabulary::tokenize(const std::vector<std::string_view>& texts, int n_threads) {
  return tokenize_batch(texts, words_, n_threads);
}

TokenizedBatch Vocabulary::add_tokens(const std::vector<std::vector<std::string_view>>& docs) {
  TokenizedBatch batch;
  batch.offsets.reserve(docs.size() + 1);
  batch.offsets.push_back(0);
  for (const auto& doc : docs) {
    for (std::string_view token : doc) batch.tokens.push_back(words_.insert(token));
    batch.offsets.push_back(static_cast<int64_t>(batch.tokens.size()));
  }
  return batch;
}

}  // namespace ragcore
