// Makes a GPU current for a scope and gives the caller's back at its end: one thread may drive
// several GPUs (ncclCommInitAll, nccl-tests -g), and braid must not leave its own current.
#pragma once

#include <cuda_runtime.h>

namespace braid::cuda {

class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    status_ = cudaGetDevice(&previous_);
    if (status_ != cudaSuccess || previous_ == device) return;
    status_ = cudaSetDevice(device);
    switched_ = status_ == cudaSuccess;
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

  // cudaGetDevice's error, else cudaSetDevice's (cudaSuccess when the device was current already).
  cudaError_t status() const { return status_; }

 private:
  int previous_ = 0;
  cudaError_t status_ = cudaSuccess;
  bool switched_ = false;
};

}  // namespace braid::cuda
