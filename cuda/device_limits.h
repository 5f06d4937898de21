// Device facts a search plans with.
#pragma once

#include <cstddef>

namespace ragcore::gpu {

struct DeviceLimits {
  int sms = 0;               // multiprocessors
  size_t shared_optin = 0;   // most shared memory one block may opt in to
  size_t free_bytes = 0;     // free device memory now
};

// The attributes are read once per device and cached; free memory is read on
// every call. `device` must be the current device.
DeviceLimits device_limits(int device);

}  // namespace ragcore::gpu
