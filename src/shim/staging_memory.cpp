#include "shim/staging_memory.h"

#include "common/log.h"

namespace braid::shim {

Result staging_failure(cudaError_t e, const char* what) {
  cudaGetLastError();
  return fail(Result::UnhandledCudaError, "braid: %s while staging a split call's buffers: %s", what,
              cudaGetErrorString(e));
}

StagingMemory::~StagingMemory() {
  if (memory_ == nullptr && retired_.empty()) return;
  if (leave_.load()) {
    BRAID_INFO(Shim, "multipath: %zu bytes of staged buffers are left allocated: braid's share may still use them",
               bytes_);
    return;
  }
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(device_);
  retired_.push_back(memory_);
  for (void* region : retired_)
    if (region != nullptr) cudaFree(region);
  if (last_use_ != nullptr) cudaEventDestroy(last_use_);
  cudaGetLastError();
  if (previous >= 0) cudaSetDevice(previous);
}

Result StagingMemory::acquire(size_t bytes, cudaStream_t stream, void** memory) {
  if (device_ < 0) {
    if (cudaError_t e = cudaGetDevice(&device_); e != cudaSuccess) return staging_failure(e, "cudaGetDevice");
  }
  if (bytes > bytes_) {
    void* larger = nullptr;
    if (cudaError_t e = cudaMalloc(&larger, bytes); e != cudaSuccess) return staging_failure(e, "cudaMalloc");
    if (memory_ != nullptr) retired_.push_back(memory_);
    memory_ = larger;
    bytes_ = bytes;
    used_ = false;
  } else if (used_) {
    if (cudaError_t e = cudaStreamWaitEvent(stream, last_use_, 0); e != cudaSuccess)
      return staging_failure(e, "cudaStreamWaitEvent");
  }
  *memory = memory_;
  return Result::Success;
}

Result StagingMemory::release(cudaStream_t stream) {
  if (last_use_ == nullptr) {
    if (cudaError_t e = cudaEventCreateWithFlags(&last_use_, cudaEventDisableTiming); e != cudaSuccess)
      return staging_failure(e, "cudaEventCreate");
  }
  if (cudaError_t e = cudaEventRecord(last_use_, stream); e != cudaSuccess) return staging_failure(e, "cudaEventRecord");
  used_ = true;
  return Result::Success;
}

}  // namespace braid::shim
