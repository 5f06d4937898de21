// Block codec of posting lists: blocks of up to 128 postings, each stored as
//   [bits per doc gap: u8][bits per (tf - 1): u8][packed gaps][packed tf - 1]
// Gaps are doc - previous doc - 1 (the first against the previous block's last
// doc), bit-packed at the smallest width that holds the block's largest value
// (binary packing, as in Lemire & Boytsov's BP128, without SIMD layout).
// Decoding reads 8 bytes at a time, so buffers carry kCodecPadding zero bytes
// after the last block.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace ragcore {

constexpr size_t kBlockSize = 128;
constexpr size_t kCodecPadding = 8;

inline int bits_needed(uint32_t v) {
  int bits = 0;
  for (; v; v >>= 1) ++bits;
  return bits;
}

inline void pack_bits(const uint32_t* values, size_t n, int bits, std::vector<uint8_t>& out) {
  uint64_t acc = 0;
  int filled = 0;
  for (size_t i = 0; i < n; ++i) {
    acc |= static_cast<uint64_t>(values[i]) << filled;
    filled += bits;
    for (; filled >= 8; filled -= 8, acc >>= 8) out.push_back(static_cast<uint8_t>(acc));
  }
  if (filled > 0) out.push_back(static_cast<uint8_t>(acc));
}

// Reads n values of `bits` bits; returns the byte after them.
inline const uint8_t* unpack_bits(const uint8_t* in, size_t n, int bits, uint32_t* values) {
  const uint64_t mask = bits == 32 ? 0xFFFFFFFFull : (1ull << bits) - 1;
  for (size_t i = 0; i < n; ++i) {
    const size_t bit = i * static_cast<size_t>(bits);
    uint64_t word;
    std::memcpy(&word, in + (bit >> 3), sizeof word);
    values[i] = static_cast<uint32_t>((word >> (bit & 7)) & mask);
  }
  return in + (n * static_cast<size_t>(bits) + 7) / 8;
}

// Appends one block (n <= kBlockSize postings, docs ascending and > prev_doc,
// prev_doc = -1 for the first block) to out.
inline void encode_block(const uint32_t* docs, const uint32_t* tfs, size_t n, int64_t prev_doc,
                         std::vector<uint8_t>& out) {
  uint32_t gaps[kBlockSize], tf_minus_1[kBlockSize];
  uint32_t max_gap = 0, max_tf = 0;
  for (size_t i = 0; i < n; ++i) {
    gaps[i] = static_cast<uint32_t>(docs[i] - prev_doc - 1);
    prev_doc = docs[i];
    tf_minus_1[i] = tfs[i] - 1;
    max_gap |= gaps[i];
    max_tf |= tf_minus_1[i];
  }
  const int gap_bits = bits_needed(max_gap), tf_bits = bits_needed(max_tf);
  out.push_back(static_cast<uint8_t>(gap_bits));
  out.push_back(static_cast<uint8_t>(tf_bits));
  pack_bits(gaps, n, gap_bits, out);
  pack_bits(tf_minus_1, n, tf_bits, out);
}

// Unpacks the gaps of a full block at a width known at compile time and sums
// them into docs in the same pass: constant shifts and offsets let the
// compiler unroll it (query time decodes mostly full blocks, and the generic
// loop with a variable width was a visible share of query time).
template <int kBits>
inline void decode_full_block_docs(const uint8_t* in, uint32_t doc, uint32_t* docs) {
  constexpr uint64_t mask = kBits == 32 ? 0xFFFFFFFFull : (1ull << kBits) - 1;
  for (size_t i = 0; i < kBlockSize; ++i) {
    constexpr size_t bits = kBits;
    uint64_t word;
    std::memcpy(&word, in + ((i * bits) >> 3), sizeof word);
    doc += static_cast<uint32_t>((word >> ((i * bits) & 7)) & mask) + 1;
    docs[i] = doc;
  }
}

template <size_t... kBits>
constexpr auto make_full_block_decoders(std::index_sequence<kBits...>) {
  using Fn = void (*)(const uint8_t*, uint32_t, uint32_t*);
  return std::array<Fn, sizeof...(kBits)>{&decode_full_block_docs<static_cast<int>(kBits)>...};
}

// Decodes the docs of a block of n postings written by encode_block; returns
// where its frequencies start.
inline const uint8_t* decode_block_docs(const uint8_t* in, size_t n, int64_t prev_doc,
                                        uint32_t* docs) {
  auto doc = static_cast<uint32_t>(prev_doc);  // -1 wraps to 0xFFFFFFFF, so +1 gives 0
  if (n == kBlockSize && in[0] <= 32) {
    static constexpr auto kDecoders = make_full_block_decoders(std::make_index_sequence<33>());
    kDecoders[in[0]](in + 2, doc, docs);
    return in + 2 + (kBlockSize * in[0] + 7) / 8;
  }
  const uint8_t* tf_start = unpack_bits(in + 2, n, in[0], docs);
  for (size_t i = 0; i < n; ++i) {
    doc += docs[i] + 1;
    docs[i] = doc;
  }
  return tf_start;
}

// Decodes a whole block (docs and frequencies).
inline void decode_block(const uint8_t* in, size_t n, int64_t prev_doc, uint32_t* docs,
                         uint32_t* tfs) {
  unpack_bits(decode_block_docs(in, n, prev_doc, docs), n, in[1], tfs);
  for (size_t i = 0; i < n; ++i) tfs[i] += 1;
}

}  // namespace ragcore
