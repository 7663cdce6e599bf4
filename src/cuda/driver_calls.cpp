#include "cuda/driver_calls.h"

#include <cuda_runtime.h>

namespace braid::cuda {

namespace {

template <typename Fn>
void fetch(const char* symbol, Fn* out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found) == cudaSuccess &&
      found == cudaDriverEntryPointSuccess)
    *out = reinterpret_cast<Fn>(fn);
  else
    cudaGetLastError();
}

}  // namespace

const DriverCalls& driver() {
  static const DriverCalls calls = [] {
    DriverCalls c;
    fetch("cuDeviceGetAttribute", &c.device_get_attribute);
    fetch("cuGetErrorString", &c.get_error_string);
    fetch("cuStreamWriteValue64", &c.stream_write_value64);
    fetch("cuStreamWaitValue64", &c.stream_wait_value64);
    return c;
  }();
  return calls;
}

}  // namespace braid::cuda
