#include "ragcore/sparse/tokenize.h"

#include <algorithm>

#include "ragcore/util/parallel.h"
#include "ragcore/sparse/unicode_tables.h"

namespace ragcore {

namespace {

constexpr uint32_t kCapitalSigma = 0x3A3, kSmallSigma = 0x3C3, kFinalSigma = 0x3C2;

bool is_ascii_word(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool has(uint32_t cp, uint8_t flag) { return (unicode::record(cp).flags & flag) != 0; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Strict UTF-8 decoding, as Python's "strict" codec: no overlong forms, no
// surrogates, nothing above U+10FFFF. Throws Utf8Error at the first bad byte.
void decode_utf8(std::string_view s, size_t doc, std::vector<uint32_t>& out) {
  out.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      out.push_back(c);
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      throw Utf8Error(doc, i);
    }
    if (i + len > n) throw Utf8Error(doc, i);
    for (size_t j = 1; j < len; ++j) {
      if ((p[i + j] & 0xC0) != 0x80) throw Utf8Error(doc, i);
      cp = (cp << 6) | (p[i + j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) throw Utf8Error(doc, i);
    out.push_back(cp);
    i += len;
  }
}

// str.lower()'s rule for U+03A3: final sigma when preceded by a cased letter and
// not followed by one (skipping case-ignorable characters both ways).
uint32_t lower_sigma(const std::vector<uint32_t>& cps, size_t i) {
  size_t j = i;
  while (j > 0 && has(cps[j - 1], unicode::kCaseIgnorable)) --j;
  if (j == 0 || !has(cps[j - 1], unicode::kCased)) return kSmallSigma;
  for (j = i + 1; j < cps.size() && has(cps[j], unicode::kCaseIgnorable);) ++j;
  return (j == cps.size() || !has(cps[j], unicode::kCased)) ? kFinalSigma : kSmallSigma;
}

// Builds tokens from a stream of lowercased code points.
class TokenBuilder {
 public:
  TokenBuilder(std::string& lowered, std::vector<size_t>& ends) : lowered_(lowered), ends_(ends) {
    lowered_.clear();
    ends_.assign(1, 0);
  }
  void push(uint32_t lower_cp) {
    if (has(lower_cp, unicode::kWord)) {
      append_utf8(lowered_, lower_cp);
      ++length_;
    } else {
      end_word();
    }
  }
  void end_word() {
    if (length_ >= 2) {
      ends_.push_back(lowered_.size());
    } else {
      lowered_.resize(ends_.back());  // a one-character word is not a token
    }
    length_ = 0;
  }

 private:
  std::string& lowered_;
  std::vector<size_t>& ends_;
  size_t length_ = 0;
};

}  // namespace

void WordTokenizer::split(std::string_view text, size_t doc) {
  const bool ascii = std::all_of(text.begin(), text.end(),
                                 [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) {
    split_ascii(text);
  } else {
    split_unicode(text, doc);
  }
}

void WordTokenizer::split_ascii(std::string_view text) {
  lowered_.clear();
  ends_.assign(1, 0);
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const bool word = i < text.size() && is_ascii_word(static_cast<unsigned char>(text[i]));
    if (word) continue;
    if (i - start >= 2) {
      for (size_t j = start; j < i; ++j) {
        const char c = text[j];
        lowered_.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
      }
      ends_.push_back(lowered_.size());
    }
    start = i + 1;
  }
}

void WordTokenizer::split_unicode(std::string_view text, size_t doc) {
  decode_utf8(text, doc, code_points_);
  TokenBuilder builder(lowered_, ends_);
  for (size_t i = 0; i < code_points_.size(); ++i) {
    const uint32_t cp = code_points_[i];
    const unicode::Record& rec = unicode::record(cp);
    if (cp == kCapitalSigma) {
      builder.push(lower_sigma(code_points_, i));
    } else if (rec.flags & unicode::kMultiLower) {
      for (const auto& m : unicode::kMultiLowers) {
        if (m.cp != cp) continue;
        for (uint32_t l : m.lower)
          if (l != 0) builder.push(l);
      }
    } else {
      builder.push(static_cast<uint32_t>(static_cast<int32_t>(cp) + rec.lower_delta));
    }
  }
  builder.end_word();
}

TokenizedBatch tokenize_batch(const std::vector<std::string_view>& texts, StringIdMap& vocab,
                              int n_threads) {
  // Each task tokenizes a run of documents into its own small vocabulary; the
  // runs are then merged in order, so ids follow first appearance in the batch.
  constexpr size_t kDocsPerTask = 2048;
  const size_t n_tasks = (texts.size() + kDocsPerTask - 1) / kDocsPerTask;
  struct TaskResult {
    StringIdMap words;
    std::vector<uint32_t> tokens;
    std::vector<int64_t> lengths;
  };
  std::vector<TaskResult> results(n_tasks);
  parallel_for(n_tasks, n_threads, [&](size_t task, int) {
    WordTokenizer tokenizer;
    TaskResult& r = results[task];
    const size_t end = std::min(texts.size(), (task + 1) * kDocsPerTask);
    for (size_t d = task * kDocsPerTask; d < end; ++d) {
      const size_t before = r.tokens.size();
      tokenizer.tokenize(texts[d], d, [&](std::string_view w) { r.tokens.push_back(r.words.insert(w)); });
      r.lengths.push_back(static_cast<int64_t>(r.tokens.size() - before));
    }
  });
  TokenizedBatch out;
  out.offsets.reserve(texts.size() + 1);
  out.offsets.push_back(0);
  size_t total = 0;
  for (const auto& r : results) total += r.tokens.size();
  out.tokens.reserve(total);
  std::vector<uint32_t> to_global;
  for (auto& r : results) {
    to_global.resize(r.words.size());
    for (uint32_t w = 0; w < r.words.size(); ++w) to_global[w] = vocab.insert(r.words.word(w));
    for (uint32_t t : r.tokens) out.tokens.push_back(to_global[t]);
    for (int64_t len : r.lengths) out.offsets.push_back(out.offsets.back() + len);
    r = TaskResult();  // free as we go
  }
  return out;
}

std::vector<std::vector<std::string>> tokenize_texts(const std::vector<std::string_view>& texts,
                                                     int n_threads) {
  constexpr size_t kDocsPerTask = 256;
  std::vector<std::vector<std::string>> tokens(texts.size());
  parallel_for((texts.size() + kDocsPerTask - 1) / kDocsPerTask, n_threads, [&](size_t task, int) {
    WordTokenizer tokenizer;
    const size_t end = std::min(texts.size(), (task + 1) * kDocsPerTask);
    for (size_t d = task * kDocsPerTask; d < end; ++d)
      tokenizer.tokenize(texts[d], d, [&](std::string_view w) { tokens[d].emplace_back(w); });
  });
  return tokens;
}

}  // namespace ragcore
