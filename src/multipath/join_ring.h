// How a caller's stream waits for braid's share of split call k, cheaply. The plain way is a
// stream memory wait on the completion word ("until it reaches k"), queued by the calling thread:
// about 1.9 us of its time per call (bench/host_cost_probe.cu). Instead the progress thread queues
// those waits ahead, on a stream of its own, each followed by a record of event k mod size; the
// calling thread then only queues cudaStreamWaitEvent on that event (about 0.2 us).
//
// A slot's event is recorded again for call k + size only after the calling thread has passed
// call k (queued its wait, or had nothing to wait for), so no wait ever sees the wrong record.
// When the progress thread has not queued call k yet (the caller is more than `size` calls
// ahead), join() says so and the caller queues the stream memory wait itself.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/result.h"

namespace braid::multipath {

class JoinRing {
 public:
  // On the current device, whose stream memory operations read `done_device` (the completion
  // word's device address); call numbers start at 1.
  static Result create(unsigned long long done_device, size_t size, std::unique_ptr<JoinRing>* out);
  // The completion word must have passed every queued call (or been released) before this:
  // the ring's stream is synchronised.
  ~JoinRing();
  JoinRing(const JoinRing&) = delete;
  JoinRing& operator=(const JoinRing&) = delete;

  // The calling thread: makes `stream` wait for call `call`'s share; false when the ring does not
  // hold that call yet (nothing queued).
  bool join(cudaStream_t stream, uint64_t call);
  // The calling thread, after each call number, split or not: its slot may be recorded again.
  void passed(uint64_t call) { passed_.store(call, std::memory_order_release); }
  // The progress thread: queues the waits and records up to `size` calls past the last passed.
  Result top_up();

 private:
  JoinRing() = default;
  unsigned long long done_device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> events_;
  std::atomic<uint64_t> queued_{0};  // calls whose wait and record are on stream_
  std::atomic<uint64_t> passed_{0};
};

}  // namespace braid::multipath
