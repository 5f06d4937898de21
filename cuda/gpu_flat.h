// Exact dense top-k on an NVIDIA GPU: host-side interface, free of CUDA types so
// that the pybind11 bindings compile with the ordinary C++ compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "ragcore/dense/types.h"

namespace ragcore::gpu {

// Number of usable CUDA devices; 0 when there is no driver or no device.
int device_count();
std::string device_name(int device);
// Free and total memory of the device, in bytes.
void device_memory(int device, size_t* free_bytes, size_t* total_bytes);
// Waits for a caller's CUDA stream (a cudaStream_t passed as an integer), so
// that work it queued on its arrays is finished before a search reads them.
void synchronize_stream(uintptr_t stream);

// Which kernel scores a search (Auto: chosen from the batch size and storage).
enum class GpuPath : int { Auto = 0, Scan = 1, Tiled = 2, TensorCores = 3 };

struct GpuSearchArgs {
  const float* queries = nullptr;  // nq rows of dim floats, row stride query_stride elements
  bool queries_on_device = false;  // else a host pointer, copied to the device
  size_t query_stride = 0;
  size_t nq = 0;
  size_t k = 0;
  bool normalize_queries = false;  // cosine: queries are divided by their norms
  float* out_scores = nullptr;     // nq x k
  int64_t* out_ids = nullptr;      // nq x k
  bool out_on_device = false;      // else host pointers
  // Knobs for tests and benchmarks (0 = automatic).
  GpuPath path = GpuPath::Auto;    // TensorCores: fp16 / bf16 storage only
  size_t first_chunk_rows = 0;     // rows scored before the first threshold exists
  size_t max_chunk_rows = 0;       // later chunks grow up to this many rows
  size_t max_group = 0;            // queries processed together
};

// The corpus resident on one device. Rows are padded to a multiple of 16
// elements so every row starts 64-byte aligned and loads are 16 bytes wide.
// search() may run concurrently with append(): each search works on a snapshot.
class DeviceCorpus {
 public:
  // storage: F32, F16 or BF16.
  DeviceCorpus(int device, size_t dim, Storage storage, Metric metric);
  ~DeviceCorpus();
  DeviceCorpus(const DeviceCorpus&) = delete;
  DeviceCorpus& operator=(const DeviceCorpus&) = delete;

  // Appends n host rows (dim elements each, contiguous) and their squared norms
  // (L2 only), then installs the tie order of all rows: rank_of_row[i] is the
  // position of row i's id among the sorted ids, sorted_ids[rank] the id.
  void append(const void* rows, const float* sq_norms, size_t n, const int32_t* rank_of_row,
              const int64_t* sorted_ids, size_t total);
  void clear();
  size_t size() const;
  size_t device_bytes() const;
  void search(const GpuSearchArgs& a) const;

  struct State;

 private:
  std::shared_ptr<const State> snapshot() const;
  int device_;
  size_t dim_, padded_dim_;
  Storage storage_;
  Metric metric_;
  mutable std::mutex mutex_;
  std::shared_ptr<const State> state_;
};

}  // namespace ragcore::gpu
