// Runs DeviceBm25::search under the CPU emulation (emu.h) on arrays written by
// tests/gpu/test_gpu_bm25_emulated.py: argv[1] is a folder of raw arrays and a
// params.txt; the hits are written back into it.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "array_files.h"
#include "gpu_bm25.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = std::string(argv[1]) + "/";
  try {
    const auto offsets = read<int64_t>(dir + "offsets");
    const auto docs = read<uint32_t>(dir + "docs");
    const auto values = read<float>(dir + "values");
    const auto ranks = read<int32_t>(dir + "ranks");
    const auto sorted_ids = read<int64_t>(dir + "sorted_ids");
    const auto terms = read<int64_t>(dir + "terms");
    const auto weights = read<double>(dir + "weights");
    const auto q_offsets = read<int64_t>(dir + "q_offsets");
    const auto base = read<double>(dir + "base");
    size_t k, dense_min_df, first_chunk_rows, max_chunk_rows, max_group;
    int exhaustive;
    std::ifstream params(dir + "params.txt");
    params >> k >> exhaustive >> dense_min_df >> first_chunk_rows >> max_chunk_rows >> max_group;
    ragcore::gpu::DeviceBm25 index(0, offsets.data(), offsets.size() - 1, docs.data(), values.data(),
                                   ranks.data(), ranks.size(), sorted_ids.data(), sorted_ids.size(),
                                   dense_min_df);
    ragcore::gpu::Bm25SearchArgs a;
    a.terms = terms.data();
    a.weights = weights.data();
    a.offsets = q_offsets.data();
    a.base = base.data();
    a.nq = q_offsets.size() - 1;
    a.k = k;
    a.exhaustive = exhaustive != 0;
    a.first_chunk_rows = first_chunk_rows;
    a.max_chunk_rows = max_chunk_rows;
    a.max_group = max_group;
    std::vector<float> scores(a.nq * k);
    std::vector<int64_t> ids(a.nq * k);
    std::vector<uint8_t> fell_back(a.nq);
    a.out_scores = scores.data();
    a.out_ids = ids.data();
    a.out_exhaustive = fell_back.data();
    index.search(a);
    write(dir + "scores", scores);
    write(dir + "ids", ids);
    write(dir + "exhaustive", fell_back);
    std::printf("dense_min_df %zu\n", index.dense_min_df());
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
