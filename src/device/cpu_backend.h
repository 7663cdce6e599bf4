// The CPU-emulated device: device buffers are plain host memory and each queue is one thread
// running its operations in order (copies are memcpy, reductions use braid_reduce). The threads
// are made once with the backend, never per collective.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/backend.h"

namespace braid::device {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int queues = kNumQueues);
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  int num_queues() const override { return static_cast<int>(queues_.size()); }
  Result d2h(int queue, void* host, const void* dev, size_t bytes, Signal done) override;
  Result h2d(int queue, void* dev, const void* host, size_t bytes, Signal done) override;
  Result copy(int queue, void* dev_dst, const void* dev_src, size_t bytes, Signal done) override;
  Result wait(int queue, Signal until) override;
  Result raise(int queue, Signal signal) override;
  Result reduce(int queue, DataType type, RedOp op, void* dev_dst, const void* dev_src_staged,
                size_t n, const reduce::OpScalar* dst_scale, const reduce::OpScalar* src_scale,
                Signal done) override;
  Result scale(int queue, DataType type, void* dev_dst, const void* dev_src, size_t n,
               const reduce::OpScalar& scalar, Signal done) override;
  Result divide(int queue, DataType type, void* dev_data, size_t n, uint64_t divisor,
                Signal done) override;
  void* device_scratch(size_t bytes) override;
  // Registration changes no memory here, but the ranges are kept so that a signal outside them
  // fails as it would on a GPU (which can only reach registered host memory).
  Result register_host(void* ptr, size_t bytes) override;
  Result unregister_host(void* ptr) override;
  Result begin_collective() override { return Result::Success; }
  Result end_collective() override { return Result::Success; }
  void set_timeout(double seconds) override { timeout_seconds_.store(seconds); }
  void set_abort_flag(const std::atomic<uint64_t>* flag) override { external_abort_.store(flag); }
  void abort() override;
  Result status(std::string* message) const override;

 private:
  enum class Kind { Copy, Wait, Raise, Reduce, Scale, Divide };
  struct Op {
    Kind kind = Kind::Copy;
    void* dst = nullptr;
    const void* src = nullptr;
    size_t bytes_or_count = 0;
    DataType type = DataType::Float32;
    RedOp op = RedOp::Sum;
    reduce::OpScalar scalar;
    bool scale_dst = false;  // Reduce: scalar (dst) / src_scalar (src) apply
    bool scale_src = false;
    reduce::OpScalar src_scalar;
    uint64_t divisor = 1;
    Signal signal;  // done (raised after) or until (waited on)
  };
  struct QueueState {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<Op> ops;
    std::atomic<bool> busy{false};  // an operation is running (abort waits it out)
    std::thread thread;
  };

  Result enqueue(int queue, Op op);
  void run_queue(QueueState* q);
  bool execute(const Op& op);  // false: the backend failed
  bool stopping() const;
  void fail_with(Result r, const std::string& text);

  std::vector<std::unique_ptr<QueueState>> queues_;
  std::atomic<bool> shutdown_{false};
  std::atomic<bool> aborted_{false};
  std::atomic<double> timeout_seconds_{30.0};
  std::atomic<const std::atomic<uint64_t>*> external_abort_{nullptr};
  mutable std::mutex error_mutex_;
  Result error_ = Result::Success;
  std::string error_text_;
  std::vector<unsigned char> scratch_;
  std::mutex registered_mutex_;
  std::vector<std::pair<const char*, size_t>> registered_;
};

}  // namespace braid::device
