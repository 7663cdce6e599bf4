// The few CUDA driver calls braid needs (stream memory operations and their checks), fetched
// through the runtime, which loads libcuda itself: linking libcuda would make every binary,
// libbraid.so included, fail to load on a machine without a GPU driver.
#pragma once

#include <cuda.h>

namespace braid::cuda {

struct DriverCalls {
  decltype(&cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&cuGetErrorString) get_error_string = nullptr;
  decltype(&cuStreamWriteValue64) stream_write_value64 = nullptr;
  decltype(&cuStreamWaitValue64) stream_wait_value64 = nullptr;
  bool complete() const {
    return device_get_attribute && get_error_string && stream_write_value64 && stream_wait_value64;
  }
};

// Looked up once per process (thread-safe); entries the driver lacks stay null.
const DriverCalls& driver();

}  // namespace braid::cuda
