#include "shim/staged_call.h"

namespace braid::shim {

namespace {

// 256-byte alignment for the send region, as cudaMalloc gives.
constexpr size_t kAlign = 256;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Result StagedCall::stage(const nccl::Call& original, int nranks, int rank, StagingMemory& memory,
                         cudaStream_t stream, StagedCall* out) {
  *out = StagedCall{};
  out->original_ = original;
  out->staged_ = original;
  out->bytes_ = multipath::buffer_bytes(original, nranks, rank);
  const size_t send = original.send != nullptr ? out->bytes_.send : 0;
  const size_t recv = original.recv != nullptr ? out->bytes_.recv : 0;
  void* region = nullptr;
  BRAID_TRY(memory.acquire(aligned(recv) + send + 1, stream, &region));
  out->memory_ = &memory;
  // Out of place on the staged memory, whatever the application's call: its result is the same.
  auto* bytes = static_cast<char*>(region);
  out->staged_.recv = original.recv != nullptr ? bytes : nullptr;
  out->staged_.send = original.send != nullptr ? bytes + aligned(recv) : nullptr;
  if (send > 0) {
    if (cudaError_t e = cudaMemcpyAsync(const_cast<void*>(out->staged_.send), original.send, send, cudaMemcpyDefault,
                                        stream);
        e != cudaSuccess) {
      memory.leave();
      out->memory_ = nullptr;
      return staging_failure(e, "cudaMemcpyAsync (the send buffer in)");
    }
  }
  return Result::Success;
}

Result StagedCall::finish(cudaStream_t stream, bool split_failed) {
  StagingMemory* memory = memory_;
  memory_ = nullptr;
  if (memory == nullptr) return Result::Success;
  if (split_failed) {
    memory->leave();
    return Result::Success;
  }
  const size_t recv = original_.recv != nullptr ? bytes_.recv : 0;
  if (recv > 0) {
    if (cudaError_t e = cudaMemcpyAsync(original_.recv, staged_.recv, recv, cudaMemcpyDefault, stream); e != cudaSuccess) {
      memory->leave();
      return staging_failure(e, "cudaMemcpyAsync (the result out)");
    }
  }
  const Result released = memory->release(stream);
  if (released != Result::Success) memory->leave();
  return released;
}

}  // namespace braid::shim
