// DeviceCorpus: the corpus, its squared norms and its tie order on the device.
#include <algorithm>
#include <mutex>
#include <vector>
#include <stdexcept>
#include <string>

#include "corpus_state.cuh"
#include "device_limits.h"

namespace ragcore::gpu {
int device_count() {
  int n = 0;
  // No driver or no device is not an error here: the answer is zero.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  RAGCORE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

void device_memory(int device, size_t* free_bytes, size_t* total_bytes) {
  DeviceGuard guard(device);
  RAGCORE_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

DeviceLimits device_limits(int device) {
  // The attributes never change: read once per device, not on every search.
  static std::mutex mutex;
  static std::vector<DeviceLimits> known;
  DeviceLimits lim;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (known.size() <= static_cast<size_t>(device)) known.resize(device + 1);
    if (known[device].sms == 0) {
      int v = 0;
      RAGCORE_CUDA_CHECK(cudaDeviceGetAttribute(&known[device].sms, cudaDevAttrMultiProcessorCount, device));
      RAGCORE_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
      known[device].shared_optin = static_cast<size_t>(v);
    }
    lim = known[device];
  }
  size_t total = 0;  // the caller made `device` current
  RAGCORE_CUDA_CHECK(cudaMemGetInfo(&lim.free_bytes, &total));
  return lim;
}

void synchronize_stream(uintptr_t stream) {
  RAGCORE_CUDA_CHECK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)));
}

DeviceCorpus::DeviceCorpus(int device, size_t dim, Storage storage, Metric metric)
    : device_(device), dim_(dim), padded_dim_(padded_dim(dim)), storage_(storage), metric_(metric) {
  if (device < 0 || device >= device_count())
    throw std::invalid_argument("device: no CUDA device " + std::to_string(device));
  if (dim == 0) throw std::invalid_argument("dim: must be >= 1");
  if (storage != Storage::F32 && storage != Storage::F16 && storage != Storage::BF16)
    throw std::invalid_argument("storage: expected F32, F16 or BF16");
  if (metric != Metric::InnerProduct && metric != Metric::L2)
    throw std::invalid_argument("metric: unknown value");
  state_ = std::make_shared<const State>();
}

DeviceCorpus::~DeviceCorpus() = default;

std::shared_ptr<const DeviceCorpus::State> DeviceCorpus::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

size_t DeviceCorpus::size() const { return snapshot()->n; }

size_t DeviceCorpus::device_bytes() const {
  auto st = snapshot();
  size_t bytes = 0;
  for (const auto* buf : {&st->rows, &st->sq_norms, &st->ranks, &st->sorted_ids})
    if (*buf) bytes += (*buf)->bytes();
  return bytes;
}

void DeviceCorpus::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = std::make_shared<const State>();
}

void DeviceCorpus::append(const void* rows, const float* sq_norms, size_t n,
                          const int32_t* rank_of_row, const int64_t* sorted_ids, size_t total) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceGuard guard(device_);
  const State& old = *state_;
  if (total != old.n + n) throw std::invalid_argument("total: must equal size() + n");
  if (metric_ == Metric::L2 && n && !sq_norms) throw std::invalid_argument("sq_norms: needed for L2");
  const size_t elem = storage_bytes(storage_);
  auto next = std::make_shared<State>(old);
  if (total > old.capacity) {
    // Grow into fresh buffers; the old ones stay alive for running searches.
    next->capacity = std::max({total, 2 * old.capacity, size_t{1024}});
    next->rows = std::make_shared<DeviceBuffer>(device_, next->capacity * padded_dim_ * elem);
    RAGCORE_CUDA_CHECK(cudaMemset(next->rows->as<void>(), 0, next->rows->bytes()));
    if (old.n)
      RAGCORE_CUDA_CHECK(cudaMemcpy(next->rows->as<void>(), old.rows->as<void>(),
                                    old.n * padded_dim_ * elem, cudaMemcpyDeviceToDevice));
    if (metric_ == Metric::L2) {
      next->sq_norms = std::make_shared<DeviceBuffer>(device_, next->capacity * sizeof(float));
      if (old.n)
        RAGCORE_CUDA_CHECK(cudaMemcpy(next->sq_norms->as<void>(), old.sq_norms->as<void>(),
                                      old.n * sizeof(float), cudaMemcpyDeviceToDevice));
    }
  }
  // Rows past old.n are invisible to older snapshots, so writing them in place is safe.
  if (n) {
    char* dst = next->rows->as<char>() + old.n * padded_dim_ * elem;
    RAGCORE_CUDA_CHECK(cudaMemcpy2D(dst, padded_dim_ * elem, rows, dim_ * elem, dim_ * elem, n,
                                    cudaMemcpyHostToDevice));
    if (metric_ == Metric::L2)
      RAGCORE_CUDA_CHECK(cudaMemcpy(next->sq_norms->as<float>() + old.n, sq_norms,
                                    n * sizeof(float), cudaMemcpyHostToDevice));
  }
  next->ranks = upload(device_, rank_of_row, total * sizeof(int32_t));
  next->sorted_ids = upload(device_, sorted_ids, total * sizeof(int64_t));
  next->n = total;
  state_ = std::move(next);
}

}  // namespace ragcore::gpu
