// BM25 scoring variants, mirrored from the registry in src/ragcore/sparse/variants.py
// (where each formula's source is cited).
//
// Every variant's score of a term in a document is idf(df, N) * g(tf, norm), with
//   norm = 1 - b + b * dl / avgdl
// precomputed per document. g(0, norm) is the score of an absent term.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ragcore {

// Crosses to Python as ragcore._core.Variant (cpp/bindings/sparse_bindings.cpp).
enum class Variant : int {
  Lucene = 0,
  LuceneLegacy = 1,
  Okapi = 2,
  Robertson = 3,
  Atire = 4,
  Bm25L = 5,
  Bm25Plus = 6,
};
constexpr int kNumVariants = 7;

struct Bm25Params {
  double k1 = 1.5;
  double b = 0.75;
  double delta = 0.5;
  Variant variant = Variant::Lucene;
  bool lucene_norms = false;  // lengths pass through Lucene's one-byte norm encoding
};

// Largest k1 and delta (src/ragcore/sparse/bm25.py MAX_K1, MAX_DELTA): up to them every
// score and every pruning bound is finite (k1 = 1e308 made (k1 + 1) * tf overflow).
constexpr double kMaxK1 = 1000.0;
constexpr double kMaxDelta = 1000.0;

inline void check_params(const Bm25Params& p) {
  if (!(p.k1 >= 0 && p.k1 <= kMaxK1)) throw std::invalid_argument("k1 must be in [0, 1000]");
  if (!(p.b >= 0 && p.b <= 1)) throw std::invalid_argument("b must be in [0, 1]");
  if (!(p.delta >= 0 && p.delta <= kMaxDelta))
    throw std::invalid_argument("delta must be in [0, 1000]");
  const int v = static_cast<int>(p.variant);
  if (v < 0 || v >= kNumVariants) throw std::invalid_argument("unknown variant");
  if (p.variant == Variant::Bm25L && p.k1 + p.delta == 0)
    throw std::invalid_argument("bm25l needs k1 + delta > 0 (its absent-term score is 0/0)");
}

inline double bm25_idf(const Bm25Params& p, double df, double n) {
  switch (p.variant) {
    case Variant::Lucene:
    case Variant::LuceneLegacy:
      return std::log(1.0 + (n - df + 0.5) / (df + 0.5));
    case Variant::Okapi:
      return std::log((n - df + 0.5) / (df + 0.5));
    case Variant::Robertson:  // bm25s clamps the ratio at 1, so idf >= 0
      return std::log(std::max(1.0, (n - df + 0.5) / (df + 0.5)));
    case Variant::Atire:
      return std::log(n / df);
    case Variant::Bm25L:
      return std::log((n + 1.0) / (df + 0.5));
    case Variant::Bm25Plus:
      return std::log((n + 1.0) / df);
  }
  return 0.0;
}

// g(tf, norm): the term-frequency part of a term a document holds (tf >= 1),
// one division where the formula allows (this is the inner loop of scoring).
inline double bm25_tf_part(const Bm25Params& p, double tf, double norm) {
  const double k1 = p.k1;
  switch (p.variant) {
    case Variant::Lucene:
    case Variant::Robertson:
      return tf / (tf + k1 * norm);
    case Variant::LuceneLegacy:
    case Variant::Okapi:
    case Variant::Atire:
      return (k1 + 1.0) * tf / (tf + k1 * norm);
    case Variant::Bm25L: {
      const double c = tf / norm;
      return (k1 + 1.0) * (c + p.delta) / (k1 + c + p.delta);
    }
    case Variant::Bm25Plus:
      return (k1 + 1.0) * tf / (tf + k1 * norm) + p.delta;
  }
  return 0.0;
}

// The tf part of an absent term, g(0), as reference.bm25_absent_part: non-zero
// only for bm25l and bm25+; written out so that k1 = 0 never makes it 0/0.
inline double bm25_absent_part(const Bm25Params& p) {
  if (p.variant == Variant::Bm25L) return (p.k1 + 1.0) * p.delta / (p.k1 + p.delta);
  if (p.variant == Variant::Bm25Plus) return p.delta;
  return 0.0;
}

// Lucene's SmallFloat.intToByte4 / byte4ToInt: lengths 0..39 exactly, then four
// significant bits. Lucene scores with the decoded length.
inline uint32_t lucene_int4_to_long(uint32_t i) {
  const uint32_t bits = i & 0x07;
  const int shift = static_cast<int>(i >> 3) - 1;
  return shift == -1 ? bits : (bits | 0x08) << shift;
}

inline uint32_t lucene_long_to_int4(uint32_t i) {
  int num_bits = 0;
  for (uint32_t v = i; v; v >>= 1) ++num_bits;
  if (num_bits < 4) return i;
  const int shift = num_bits - 4;
  return ((i >> shift) & 0x07) | static_cast<uint32_t>(shift + 1) << 3;
}

constexpr uint32_t kLuceneFreeValues = 24;  // 255 - longToInt4(Integer.MAX_VALUE)

inline uint8_t lucene_int_to_byte4(uint32_t i) {
  if (i > 0x7FFFFFFFu) i = 0x7FFFFFFFu;
  return static_cast<uint8_t>(i < kLuceneFreeValues
                                  ? i
                                  : kLuceneFreeValues + lucene_long_to_int4(i - kLuceneFreeValues));
}

inline uint32_t lucene_byte4_to_int(uint8_t b) {
  return b < kLuceneFreeValues ? b : kLuceneFreeValues + lucene_int4_to_long(b - kLuceneFreeValues);
}

// The length used in the formula (avgdl always uses true lengths, as Lucene does).
inline uint32_t scoring_length(const Bm25Params& p, uint32_t dl) {
  return p.lucene_norms ? lucene_byte4_to_int(lucene_int_to_byte4(dl)) : dl;
}

}  // namespace ragcore
