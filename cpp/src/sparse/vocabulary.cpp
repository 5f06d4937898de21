#include "ragcore/sparse/vocabulary.h"

namespace ragcore {

TokenizedBatch Vocabulary::tokenize(const std::vector<std::string_view>& texts, int n_threads) {
  std::lock_guard<std::mutex> lock(mutex_);
  return tokenize_batch(texts, words_, n_threads);
}

TokenizedBatch Vocabulary::add_tokens(const std::vector<std::vector<std::string_view>>& docs) {
  std::lock_guard<std::mutex> lock(mutex_);
  TokenizedBatch batch;
  batch.offsets.reserve(docs.size() + 1);
  batch.offsets.push_back(0);
  for (const auto& doc : docs) {
    for (std::string_view token : doc) batch.tokens.push_back(words_.insert(token));
    batch.offsets.push_back(static_cast<int64_t>(batch.tokens.size()));
  }
  return batch;
}

std::vector<std::string> Vocabulary::words(size_t start) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (size_t id = start; id < words_.size(); ++id)
    out.emplace_back(words_.word(static_cast<uint32_t>(id)));
  return out;
}

size_t Vocabulary::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return words_.size();
}

}  // namespace ragcore
