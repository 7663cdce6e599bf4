// The GPUs a test process sees, for GPU tests that skip where there are too few.
#pragma once

#include <cuda_runtime.h>

namespace braid::test {

// 0 when CUDA cannot tell (no driver, no device).
inline int visible_gpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

}  // namespace braid::test
