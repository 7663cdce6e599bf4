#include "device/cpu_backend.h"

#include "device/host_only_thread.h"

#include <algorithm>

#include <chrono>
#include <cstring>

#include "common/log.h"
#include "device/backoff.h"

namespace braid::device {

CpuBackend::CpuBackend(int queues) {
  if (queues < kNumQueues) queues = kNumQueues;
  for (int i = 0; i < queues; ++i) queues_.push_back(std::make_unique<QueueState>());
  for (auto& q : queues_) q->thread = std::thread([this, raw = q.get()] { run_queue(raw); });
}

CpuBackend::~CpuBackend() {
  shutdown_.store(true);
  for (auto& q : queues_) {
    {
      std::lock_guard lock(q->mutex);
      q->ops.clear();
    }
    q->wake.notify_all();
  }
  for (auto& q : queues_) q->thread.join();
}

bool CpuBackend::stopping() const {
  if (shutdown_.load(std::memory_order_relaxed) || aborted_.load(std::memory_order_relaxed))
    return true;
  const auto* flag = external_abort_.load(std::memory_order_relaxed);
  return flag != nullptr && flag->load(std::memory_order_relaxed) != 0;
}

void CpuBackend::fail_with(Result r, const std::string& text) {
  {
    std::lock_guard lock(error_mutex_);
    if (error_ == Result::Success) {
      error_ = r;
      error_text_ = text;
    }
  }
  abort();
}

void CpuBackend::abort() {
  aborted_.store(true);
  for (auto& q : queues_) {
    {
      std::lock_guard lock(q->mutex);
      q->ops.clear();
    }
    q->wake.notify_all();
  }
  // Wait out operations still running (a copy into a buffer the caller is about to free); waits
  // see the abort at once. A queue thread aborting (after a failed op) skips its own queue.
  for (auto& q : queues_) {
    if (q->thread.get_id() == std::this_thread::get_id()) continue;
    Backoff backoff;
    while (q->busy.load()) backoff.pause();
  }
}

Result CpuBackend::status(std::string* message) const {
  std::lock_guard lock(error_mutex_);
  if (message) *message = error_text_;
  if (error_ != Result::Success) return error_;
  if (aborted_.load()) {
    if (message) *message = "the device backend was aborted";
    return Result::RemoteError;
  }
  return Result::Success;
}

Result CpuBackend::register_host(void* ptr, size_t bytes) {
  std::lock_guard lock(registered_mutex_);
  registered_.emplace_back(static_cast<const char*>(ptr), bytes);
  return Result::Success;
}

Result CpuBackend::unregister_host(void* ptr) {
  std::lock_guard lock(registered_mutex_);
  std::erase_if(registered_, [&](const auto& r) { return r.first == ptr; });
  return Result::Success;
}

Result CpuBackend::enqueue(int queue, Op op) {
  BRAID_TRY(refuse_on_host_only_thread());
  if (queue < 0 || queue >= num_queues())
    return fail(Result::InvalidArgument, "device queue %d out of range (0..%d)", queue,
                num_queues() - 1);
  if (!op.signal.empty()) {
    const char* p = reinterpret_cast<const char*>(op.signal.counter);
    std::lock_guard lock(registered_mutex_);
    const bool reachable = std::any_of(registered_.begin(), registered_.end(), [&](const auto& r) {
      return p >= r.first && p + sizeof(uint64_t) <= r.first + r.second;
    });
    if (!reachable)
      return fail(Result::InternalError,
                  "a device signal at %p is not in registered host memory (a GPU could not reach it)",
                  static_cast<const void*>(p));
  }
  if (aborted_.load())
    return fail(Result::RemoteError, "device backend was aborted; no more work is accepted");
  QueueState& q = *queues_[queue];
  {
    std::lock_guard lock(q.mutex);
    q.ops.push_back(op);
  }
  q.wake.notify_one();
  return Result::Success;
}

void CpuBackend::run_queue(QueueState* q) {
  for (;;) {
    Op op;
    {
      std::unique_lock lock(q->mutex);
      q->wake.wait(lock, [&] { return shutdown_.load() || !q->ops.empty(); });
      if (shutdown_.load()) return;
      op = q->ops.front();
      q->ops.pop_front();
      q->busy.store(true);
    }
    if (!aborted_.load() && execute(op) && op.kind != Kind::Wait && !op.signal.empty())
      op.signal.counter->store(op.signal.value, std::memory_order_release);
    q->busy.store(false);
  }
}

bool CpuBackend::execute(const Op& op) {
  switch (op.kind) {
    case Kind::Copy:
      if (op.bytes_or_count > 0 && op.dst != op.src) std::memcpy(op.dst, op.src, op.bytes_or_count);
      return true;
    case Kind::Raise:
      return true;
    case Kind::Wait: {
      const auto start = std::chrono::steady_clock::now();
      Backoff backoff;
      while (op.signal.counter->load(std::memory_order_acquire) < op.signal.value) {
        if (backoff.sleeping()) {
          if (stopping()) return false;
          if (seconds_since(start) > timeout_seconds_.load()) {
            fail_with(Result::RemoteError, "device queue wait timed out");
            return false;
          }
        }
        backoff.pause();
      }
      return true;
    }
    case Kind::Reduce: {
      Result r = reduce::accumulate(op.type, op.op, op.dst, op.src, op.bytes_or_count,
                                    op.scale_dst ? &op.scalar : nullptr,
                                    op.scale_src ? &op.src_scalar : nullptr);
      if (r != Result::Success) fail_with(r, last_error());
      return r == Result::Success;
    }
    case Kind::Scale: {
      Result r = reduce::scale(op.type, op.dst, op.src, op.bytes_or_count, op.scalar);
      if (r != Result::Success) fail_with(r, last_error());
      return r == Result::Success;
    }
    case Kind::Divide: {
      Result r = reduce::divide(op.type, op.dst, op.bytes_or_count, op.divisor);
      if (r != Result::Success) fail_with(r, last_error());
      return r == Result::Success;
    }
  }
  return false;
}

Result CpuBackend::d2h(int queue, void* host, const void* dev, size_t bytes, Signal done) {
  return copy(queue, host, dev, bytes, done);
}

Result CpuBackend::h2d(int queue, void* dev, const void* host, size_t bytes, Signal done) {
  return copy(queue, dev, host, bytes, done);
}

Result CpuBackend::copy(int queue, void* dev_dst, const void* dev_src, size_t bytes,
                        Signal done) {
  Op op;
  op.kind = Kind::Copy;
  op.dst = dev_dst;
  op.src = dev_src;
  op.bytes_or_count = bytes;
  op.signal = done;
  return enqueue(queue, op);
}

Result CpuBackend::wait(int queue, Signal until) {
  if (until.empty()) return Result::Success;
  Op op;
  op.kind = Kind::Wait;
  op.signal = until;
  return enqueue(queue, op);
}

Result CpuBackend::raise(int queue, Signal signal) {
  Op op;
  op.kind = Kind::Raise;
  op.signal = signal;
  return enqueue(queue, op);
}

Result CpuBackend::reduce(int queue, DataType type, RedOp op_kind, void* dev_dst,
                          const void* dev_src_staged, size_t n, const reduce::OpScalar* dst_scale,
                          const reduce::OpScalar* src_scale, Signal done) {
  Op op;
  op.kind = Kind::Reduce;
  op.dst = dev_dst;
  op.src = dev_src_staged;
  op.bytes_or_count = n;
  op.type = type;
  op.op = op_kind;
  op.scale_dst = dst_scale != nullptr;
  if (dst_scale) op.scalar = *dst_scale;
  op.scale_src = src_scale != nullptr;
  if (src_scale) op.src_scalar = *src_scale;
  op.signal = done;
  return enqueue(queue, op);
}

Result CpuBackend::scale(int queue, DataType type, void* dev_dst, const void* dev_src, size_t n,
                         const reduce::OpScalar& scalar, Signal done) {
  Op op;
  op.kind = Kind::Scale;
  op.dst = dev_dst;
  op.src = dev_src;
  op.bytes_or_count = n;
  op.type = type;
  op.scalar = scalar;
  op.signal = done;
  return enqueue(queue, op);
}

Result CpuBackend::divide(int queue, DataType type, void* dev_data, size_t n, uint64_t divisor,
                          Signal done) {
  Op op;
  op.kind = Kind::Divide;
  op.dst = dev_data;
  op.bytes_or_count = n;
  op.type = type;
  op.divisor = divisor;
  op.signal = done;
  return enqueue(queue, op);
}

void* CpuBackend::device_scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.assign(bytes, 0);
  return scratch_.data();
}

}  // namespace braid::device
