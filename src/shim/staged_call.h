// A split call whose buffers braid's path cannot take at this rank (pinned host memory, another
// GPU's memory: NCCL runs on them) while its peers split the same call. Each rank checks its own
// buffers, so declining alone would leave it running the whole call in NCCL while its peers run
// NCCL's share only, and the ranks would hang. Such a rank stages instead: it copies the buffers
// it reads into the communicator's staging memory (staging_memory.h), splits the call on that
// memory as its peers do and copies the result back, all queued on the caller's stream, so the
// call stays asynchronous.
#pragma once

#include <cuda_runtime.h>

#include "common/result.h"
#include "multipath/split_call.h"
#include "shim/staging_memory.h"

namespace braid::shim {

class StagedCall {
 public:
  // Takes `memory` (current device: the communicator's) and queues the copy of the buffers the
  // call reads, on `stream`.
  static Result stage(const nccl::Call& original, int nranks, int rank, StagingMemory& memory,
                      cudaStream_t stream, StagedCall* out);
  // The call on the staged memory.
  const nccl::Call& call() const { return staged_; }
  // Queues the copy of the result to the application's receive buffer on `stream`, after the split
  // call was queued there, and hands the memory to the next call. `split_failed`: braid's share may
  // still touch the memory, so it is left allocated for good.
  Result finish(cudaStream_t stream, bool split_failed);

 private:
  nccl::Call original_{};
  nccl::Call staged_{};
  multipath::BufferBytes bytes_{};
  StagingMemory* memory_ = nullptr;
};

}  // namespace braid::shim
