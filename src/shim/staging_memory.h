// The device memory a communicator stages split calls through (staged_call.h), kept for the
// communicator's life. Not stream-ordered allocations: braid's progress thread queues its copies of
// a call after the call has returned, when memory the caller freed in stream order (cudaFreeAsync)
// is already gone on the host's timeline, and the copies fail (seen on the rig: "invalid argument").
// One region, reused call after call: each use waits on its stream for the previous one. A larger
// call gets a larger region; the old one stays allocated until the communicator goes, since work
// queued on it may still run.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <vector>

#include "common/result.h"

namespace braid::shim {

// A failed CUDA call of staging (`what` names it): the error cleared, the failure recorded.
Result staging_failure(cudaError_t e, const char* what);

class StagingMemory {
 public:
  StagingMemory() = default;
  StagingMemory(const StagingMemory&) = delete;
  StagingMemory& operator=(const StagingMemory&) = delete;
  // Frees every region, unless leave() was called: after a failure or an abort braid's share may
  // still use them, and cudaFree would wait on work that may never end.
  ~StagingMemory();

  // At least `bytes` of device memory of the current GPU, for work queued on `stream` after the
  // previous use's (the stream waits for it). With the communicator's lock held.
  Result acquire(size_t bytes, cudaStream_t stream, void** memory);
  // The work of this use is queued on `stream`: the next use waits for it.
  Result release(cudaStream_t stream);
  // Keep the memory allocated for the rest of the process.
  void leave() { leave_.store(true); }

 private:
  int device_ = -1;
  void* memory_ = nullptr;
  size_t bytes_ = 0;
  cudaEvent_t last_use_ = nullptr;
  bool used_ = false;  // last_use_ was recorded for memory_
  std::vector<void*> retired_;
  std::atomic<bool> leave_{false};
};

}  // namespace braid::shim
