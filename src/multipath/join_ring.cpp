#include "multipath/join_ring.h"

#include <cuda.h>

#include "cuda/driver_calls.h"

namespace braid::multipath {

namespace {

Result check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Result::Success;
  return fail(Result::UnhandledCudaError, "multipath: join ring: %s: %s", what, cudaGetErrorString(e));
}

}  // namespace

Result JoinRing::create(unsigned long long done_device, size_t size, std::unique_ptr<JoinRing>* out) {
  out->reset();
  if (size == 0 || !cuda::driver().complete())
    return fail(Result::InvalidUsage, "multipath: join ring: no slots or no stream memory operations");
  std::unique_ptr<JoinRing> ring(new JoinRing());
  ring->done_device_ = done_device;
  BRAID_TRY(check(cudaStreamCreateWithFlags(&ring->stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
  ring->events_.assign(size, nullptr);
  for (cudaEvent_t& e : ring->events_)
    BRAID_TRY(check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate"));
  BRAID_TRY(ring->top_up());
  *out = std::move(ring);
  return Result::Success;
}

JoinRing::~JoinRing() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_), cudaStreamDestroy(stream_);
  for (cudaEvent_t e : events_)
    if (e != nullptr) cudaEventDestroy(e);
}

bool JoinRing::join(cudaStream_t stream, uint64_t call) {
  if (call == 0 || call > queued_.load(std::memory_order_acquire)) return false;
  if (cudaStreamWaitEvent(stream, events_[call % events_.size()], 0) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return true;
}

Result JoinRing::top_up() {
  const uint64_t through = passed_.load(std::memory_order_acquire) + events_.size();
  for (uint64_t k = queued_.load(std::memory_order_relaxed) + 1; k <= through; ++k) {
    const CUresult w = cuda::driver().stream_wait_value64(reinterpret_cast<CUstream>(stream_), done_device_, k,
                                                          CU_STREAM_WAIT_VALUE_GEQ);
    if (w != CUDA_SUCCESS)
      return fail(Result::UnhandledCudaError, "multipath: join ring: cuStreamWaitValue64 failed with %d", static_cast<int>(w));
    BRAID_TRY(check(cudaEventRecord(events_[k % events_.size()], stream_), "cudaEventRecord"));
    queued_.store(k, std::memory_order_release);
  }
  return Result::Success;
}

}  // namespace braid::multipath
