// The device backend the engine drives: ordered queues (like CUDA streams) that copy between
// device and host memory, reduce on the device, and wait for / raise signals in host memory.
// No CUDA types appear here; the CPU-emulated backend (cpu_backend.h) makes the engine testable
// without a GPU, and a CUDA backend implements the same calls with streams and stream memory ops.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/types.h"
#include "reduce/reduce.h"

namespace braid::device {

// A counter in host (usually shared) memory and a value. Counters are monotonic: they are never
// reset, only raised, so a stale signal from an earlier collective can never satisfy a later
// wait (FlexLink's fix). Raising stores `value`; waiting means "counter >= value".
struct Signal {
  std::atomic<uint64_t>* counter = nullptr;  // nullptr: no signal
  uint64_t value = 0;
  bool empty() const { return counter == nullptr; }
};

// Queue roles the engine uses; a backend has at least this many queues.
enum Queue : int {
  kQueueD2H = 0,      // device -> host uploads
  kQueueH2D = 1,      // host -> device downloads (runs concurrently with D2H: full duplex)
  kQueueCompute = 2,  // device-local copies and reductions
  kNumQueues = 3,
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual int num_queues() const = 0;

  // Each call enqueues one operation on `queue` and returns at once; operations of one queue
  // run in order. `done` (if not empty) is raised once the operation has finished.
  virtual Result d2h(int queue, void* host, const void* dev, size_t bytes, Signal done) = 0;
  virtual Result h2d(int queue, void* dev, const void* host, size_t bytes, Signal done) = 0;
  virtual Result copy(int queue, void* dev_dst, const void* dev_src, size_t bytes,
                      Signal done) = 0;
  // The queue stalls until `until.counter >= until.value` (cuStreamWaitValue64, GEQ).
  virtual Result wait(int queue, Signal until) = 0;
  // Raises `signal` once every earlier operation of the queue finished (cuStreamWriteValue64).
  virtual Result raise(int queue, Signal signal) = 0;
  // dev_dst[i] = A(dev_dst[i]) op B(dev_src_staged[i]) with reduce::accumulate's semantics.
  virtual Result reduce(int queue, DataType type, RedOp op, void* dev_dst,
                        const void* dev_src_staged, size_t n, const reduce::OpScalar* dst_scale,
                        const reduce::OpScalar* src_scale, Signal done) = 0;
  // dev_dst[i] = scalar * dev_src[i] (PreMulSum outputs that were never combined).
  virtual Result scale(int queue, DataType type, void* dev_dst, const void* dev_src, size_t n,
                       const reduce::OpScalar& scalar, Signal done) = 0;
  // The finish of integer Avg: divide in place.
  virtual Result divide(int queue, DataType type, void* dev_data, size_t n, uint64_t divisor,
                        Signal done) = 0;

  // Device memory for staging REDUCE sources; owned by the backend, valid until it is destroyed.
  // Returns nullptr when it cannot be had. A larger request replaces the earlier buffer (callers
  // ask once per collective before enqueueing anything).
  virtual void* device_scratch(size_t bytes) = 0;

  // Host memory the queues copy to/from (cudaHostRegister for CUDA; nothing for the CPU).
  virtual Result register_host(void* ptr, size_t bytes) = 0;
  virtual Result unregister_host(void* ptr) = 0;

  // Orders a collective after the work already on the user's stream and the user's stream after
  // the collective (events for CUDA; the CPU backend has no user stream, so no-ops).
  virtual Result begin_collective() = 0;
  virtual Result end_collective() = 0;

  // The pipeline slice this device works best with when BRAID_SLICE_BYTES is not set: small
  // for memcpy threads, large for DMA engines whose per-copy cost is microseconds.
  virtual size_t preferred_slice_bytes() const { return size_t{512} << 10; }
  // Chunks per block when BRAID_CHUNKS is not set; 0 lets the cost model choose.
  virtual int preferred_chunks() const { return 0; }
  // Host staging per NUMA node when BRAID_STAGING_BYTES is not set.
  virtual size_t preferred_staging_bytes() const { return kHostStagingBytes; }
  static constexpr size_t kHostStagingBytes = size_t{64} << 20;     // memcpy threads (the CPU backend)
  static constexpr size_t kPinnedStagingBytes = size_t{1} << 30;    // DMA engines (the CUDA backend)

  // Bounds every queue wait by `seconds`; a wait that runs past it fails the backend.
  virtual void set_timeout(double seconds) = 0;
  // An external flag (e.g. the communicator's shared abort word): non-zero stops every wait.
  virtual void set_abort_flag(const std::atomic<uint64_t>* flag) = 0;
  // Drops queued work and unblocks every wait; the backend then refuses new work.
  virtual void abort() = 0;
  // Success, or the first error a queue ran into (with last-error text copied from the queue).
  virtual Result status(std::string* message) const = 0;
};

}  // namespace braid::device
