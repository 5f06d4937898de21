// One immutable version of a DeviceCorpus. A search holds its version through a
// shared_ptr, so the buffers it reads outlive any concurrent append or clear.
#pragma once

#include <memory>

#include "device_buffer.cuh"
#include "gpu_flat.h"

namespace ragcore::gpu {

struct DeviceCorpus::State {
  size_t n = 0;
  size_t capacity = 0;
  std::shared_ptr<DeviceBuffer> rows;        // capacity x padded_dim elements, zero padded
  std::shared_ptr<DeviceBuffer> sq_norms;    // capacity floats (L2 only)
  std::shared_ptr<DeviceBuffer> ranks;       // n int32: rank of each row's id
  std::shared_ptr<DeviceBuffer> sorted_ids;  // n int64: id of each rank
};

}  // namespace ragcore::gpu
