// Runs DeviceCorpus::search under the CPU emulation (emu.h) on arrays written by
// tests/gpu/test_gpu_flat_emulated.py: argv[1] is a folder of raw arrays and a
// params.txt; the hits are written back into it. The corpus is appended in two
// parts (the second part grows the device buffers, as a later add does).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "array_files.h"
#include "gpu_flat.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = std::string(argv[1]) + "/";
  try {
    const auto rows = read<char>(dir + "rows");
    const auto sq_norms = read<float>(dir + "sq_norms");
    const auto ranks = read<int32_t>(dir + "ranks");
    const auto sorted_ids = read<int64_t>(dir + "sorted_ids");
    const auto queries = read<float>(dir + "queries");
    size_t dim, k, stride, first_part, first_chunk_rows, max_chunk_rows, max_group;
    int storage, metric, normalize, path;
    std::ifstream params(dir + "params.txt");
    params >> dim >> storage >> metric >> k >> stride >> normalize >> path >> first_part >>
        first_chunk_rows >> max_chunk_rows >> max_group;
    using namespace ragcore;
    const size_t n = ranks.size(), row_bytes = rows.size() / std::max<size_t>(n, 1);
    gpu::DeviceCorpus corpus(0, dim, static_cast<Storage>(storage), static_cast<Metric>(metric));
    const bool l2 = static_cast<Metric>(metric) == Metric::L2;
    // Each append installs the tie order of the rows so far: the first part's ranks
    // among its own ids would differ, so the test passes the ranks of all rows and the
    // first part searches nothing.
    corpus.append(rows.data(), l2 ? sq_norms.data() : nullptr, first_part, ranks.data(),
                  sorted_ids.data(), first_part);
    corpus.append(rows.data() + first_part * row_bytes, l2 ? sq_norms.data() + first_part : nullptr,
                  n - first_part, ranks.data(), sorted_ids.data(), n);
    gpu::GpuSearchArgs a;
    a.queries = queries.data();
    a.query_stride = stride;
    a.nq = queries.size() / stride;
    a.k = k;
    a.normalize_queries = normalize != 0;
    a.path = static_cast<gpu::GpuPath>(path);
    a.first_chunk_rows = first_chunk_rows;
    a.max_chunk_rows = max_chunk_rows;
    a.max_group = max_group;
    std::vector<float> scores(a.nq * k);
    std::vector<int64_t> ids(a.nq * k);
    a.out_scores = scores.data();
    a.out_ids = ids.data();
    corpus.search(a);
    write(dir + "scores", scores);
    write(dir + "ids", ids);
  } catch (const std::invalid_argument& e) {
    std::cerr << "invalid_argument: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
