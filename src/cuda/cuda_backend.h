// The CUDA device backend: each engine queue is a CUDA stream; copies are cudaMemcpyAsync on the
// copy engines, reductions are kernels (device_reduce.h), and progress between host and GPU
// travels through stream memory operations on counters in registered host memory
// (cuStreamWriteValue64 / cuStreamWaitValue64, GEQ): no SM is held and no host thread takes part
// in a GPU-side wait. The user's stream is joined by events at the start and end of a collective.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "device/backend.h"

namespace braid::cuda {

class CudaBackend final : public device::Backend {
 public:
  // Creates the queues on `device`. Check ok() (and status()) before use.
  explicit CudaBackend(int device);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  bool ok() const { return init_error_ == Result::Success; }
  int device() const { return device_; }
  // The stream collectives are ordered against (default: the legacy default stream).
  void set_user_stream(cudaStream_t stream) { user_stream_ = stream; }
  cudaStream_t queue_stream(int queue) const { return streams_.at(queue); }

  int num_queues() const override { return static_cast<int>(streams_.size()); }
  Result d2h(int queue, void* host, const void* dev, size_t bytes, device::Signal done) override;
  Result h2d(int queue, void* dev, const void* host, size_t bytes, device::Signal done) override;
  Result copy(int queue, void* dev_dst, const void* dev_src, size_t bytes, device::Signal done) override;
  Result wait(int queue, device::Signal until) override;
  Result raise(int queue, device::Signal signal) override;
  Result reduce(int queue, DataType type, RedOp op, void* dev_dst, const void* dev_src_staged, size_t n,
                const reduce::OpScalar* dst_scale, const reduce::OpScalar* src_scale, device::Signal done) override;
  Result scale(int queue, DataType type, void* dev_dst, const void* dev_src, size_t n,
               const reduce::OpScalar& scalar, device::Signal done) override;
  Result divide(int queue, DataType type, void* dev_data, size_t n, uint64_t divisor,
                device::Signal done) override;
  // The same stream memory operations on a stream that is not one of the engine's queues (the
  // NVLink copy-engine path's, src/peer): counters in host memory registered with this backend.
  Result wait_on_stream(cudaStream_t stream, device::Signal until);
  Result raise_on_stream(cudaStream_t stream, device::Signal signal);
  // raise_on_stream(`raise`) then wait_on_stream(each of `waits`), as one queued batch of stream
  // memory operations (cuStreamBatchMemOp): one driver call where a meeting point would make one
  // per counter, on the calling thread of every call braid's copy engines carry. `any_bit`: each
  // wait is for any bit of its value set (wait_for_bits_on_stream) instead of "counter >= value".
  Result raise_and_wait_on_stream(cudaStream_t stream, device::Signal raise, std::span<const device::Signal> waits,
                                  bool any_bit = false);
  // `stream` waits until `counter` has any bit of `mask` set (CU_STREAM_WAIT_VALUE_AND): the
  // barriers of calls captured in a CUDA graph (peer/peer_layout.h).
  Result wait_for_bits_on_stream(cudaStream_t stream, std::atomic<uint64_t>* counter, uint64_t mask);
  // Blocks per reduction kernel (BRAID_REDUCE_BLOCKS).
  static unsigned reduce_blocks();
  void* device_scratch(size_t bytes) override;
  Result register_host(void* ptr, size_t bytes) override;
  Result unregister_host(void* ptr) override;
  Result begin_collective() override;
  Result end_collective() override;
  // Measured on 2x H200 (bench/results/h200x2/sweep.log): all_reduce 16 / 23 / 26.3 / 26.6 GB/s
  // at 1 / 4 / 16 / 64 MiB slices; 16 MiB keeps the device scratch ring at 64 MiB.
  size_t preferred_slice_bytes() const override { return size_t{16} << 20; }
  // Measured on 2x H200 (docs/PERFORMANCE.md, chunks per block): all_reduce 34.4 / 34.3 GB/s at
  // 256 MB / 1 GiB with 1 chunk, 34.3 / 36.3 with 4; more chunks start each rank's first
  // download sooner, which the cost model does not see.
  int preferred_chunks() const override { return 4; }
  // A 1 GiB all_reduce of 2 ranks fits in one piece (piece boundaries drain the pipeline).
  size_t preferred_staging_bytes() const override { return kPinnedStagingBytes; }
  void set_timeout(double seconds) override { timeout_seconds_ = seconds; }
  void set_abort_flag(const std::atomic<uint64_t>* flag) override { external_abort_ = flag; }
  void abort() override;
  Result status(std::string* message) const override;

 private:
  struct Registration {
    char* host = nullptr;
    size_t bytes = 0;
    char* device = nullptr;  // the same memory as the GPU addresses it
  };

  Result check(cudaError_t e, const char* what);
  Result check_driver(int e, const char* what);
  Result select_device();
  Result stream_of(int queue, cudaStream_t* out);
  // The device address of a counter in registered host memory.
  Result counter_address(const std::atomic<uint64_t>* counter, unsigned long long* out);
  Result signal_after(cudaStream_t s, device::Signal done);
  // `s` waits on `counter` (cuStreamWaitValue64 with `flags`), which abort() will release.
  Result wait_value_on_stream(cudaStream_t s, std::atomic<uint64_t>* counter, uint64_t value, unsigned flags,
                              const char* what);

  int device_ = 0;
  Result init_error_ = Result::Success;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> queue_done_;
  cudaEvent_t user_ready_ = nullptr;
  cudaStream_t user_stream_ = nullptr;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  double timeout_seconds_ = 30.0;
  const std::atomic<uint64_t>* external_abort_ = nullptr;
  std::atomic<bool> aborted_{false};

  mutable std::mutex mutex_;  // registrations, waited counters, error
  std::vector<Registration> registrations_;
  // Released by abort() so no stream stays parked; a set, since every wait of every collective
  // looks itself up here (a program of 8 ranks makes hundreds).
  std::unordered_set<std::atomic<uint64_t>*> waited_;
  Result error_ = Result::Success;
  std::string error_text_;
};

}  // namespace braid::cuda
