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
    // #symbol is the name as written (cuMemGetAddressRange), which the entry-point lookup wants;
    // cuda.h's versioned macros (cuMemGetAddressRange_v2) apply to the member's type only.
#define BRAID_FETCH_DRIVER_CALL(symbol, member) fetch(#symbol, &c.member);
    BRAID_STREAM_DRIVER_CALLS(BRAID_FETCH_DRIVER_CALL)
    BRAID_CUMEM_DRIVER_CALLS(BRAID_FETCH_DRIVER_CALL)
    BRAID_QUERY_DRIVER_CALLS(BRAID_FETCH_DRIVER_CALL)
#undef BRAID_FETCH_DRIVER_CALL
    return c;
  }();
  return calls;
}

const char* driver_error_string(CUresult e) {
  const char* text = nullptr;
  if (driver().get_error_string != nullptr) driver().get_error_string(e, &text);
  return text != nullptr ? text : "unknown driver error";
}

}  // namespace braid::cuda
