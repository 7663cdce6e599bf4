#include "cuda/cuda_backend.h"

#include "device/host_only_thread.h"

#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "common/log.h"
#include "common/settings.h"
#include "cuda/device_reduce.h"
#include "cuda/driver_calls.h"

namespace braid::cuda {

namespace {

// Host registrations are process-wide, but ranks that are threads of one process share the
// engine's segments (mapped once per process): count registrations so the second rank reuses the
// first's and the memory stays registered until the last rank lets go.
struct HostRegistry {
  std::mutex mutex;
  std::map<void*, int> count;
};

// Never destroyed: a teardown that outlived BRAID_ABORT_TIMEOUT goes on in a detached thread and
// may unregister after exit() has begun running static destructors.
HostRegistry& host_registry() {
  static auto* registry = new HostRegistry;
  return *registry;
}

cudaError_t register_shared(void* ptr, size_t bytes) {
  HostRegistry& r = host_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.count.find(ptr);
  if (it != r.count.end()) {
    ++it->second;
    return cudaSuccess;
  }
  const cudaError_t e = cudaHostRegister(ptr, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
  if (e == cudaSuccess) r.count[ptr] = 1;
  return e;
}

cudaError_t unregister_shared(void* ptr) {
  HostRegistry& r = host_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.count.find(ptr);
  if (it == r.count.end()) return cudaSuccess;
  if (--it->second > 0) return cudaSuccess;
  r.count.erase(it);
  return cudaHostUnregister(ptr);
}

DeviceScalar to_device_scalar(const reduce::OpScalar* s) {
  DeviceScalar d;
  if (s != nullptr) std::memcpy(d.bytes, s->bytes, sizeof d.bytes);
  return d;
}

}  // namespace

CudaBackend::CudaBackend(int device) : device_(device) {
  if ((init_error_ = select_device()) != Result::Success) return;
  if (!driver().complete()) {
    init_error_ = fail(Result::UnhandledCudaError,
                       "the CUDA driver does not provide the stream memory operations braid needs");
    return;
  }
  int can64 = 0;
  driver().device_get_attribute(&can64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device);
  if (can64 == 0) {
    init_error_ = fail(Result::UnhandledCudaError,
                       "GPU %d cannot run 64-bit stream memory operations (cuStreamWaitValue64), "
                       "which the PCIe path needs", device);
    return;
  }
  for (int q = 0; q < device::kNumQueues; ++q) {
    cudaStream_t s = nullptr;
    if ((init_error_ = check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate")) !=
        Result::Success)
      return;
    streams_.push_back(s);
    cudaEvent_t e = nullptr;
    if ((init_error_ = check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate")) !=
        Result::Success)
      return;
    queue_done_.push_back(e);
  }
  if ((init_error_ = check(cudaEventCreateWithFlags(&user_ready_, cudaEventDisableTiming), "cudaEventCreate")) !=
      Result::Success)
    return;
  init_error_ = check(cuda::load_reduce_kernels(), "loading braid's reduction kernels");
  BRAID_INFO(Device, "CUDA backend on GPU %d with %d streams", device, num_queues());
}

CudaBackend::~CudaBackend() {
  select_device();
  for (cudaStream_t s : streams_) {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
  for (cudaEvent_t e : queue_done_) cudaEventDestroy(e);
  if (user_ready_ != nullptr) cudaEventDestroy(user_ready_);
  if (scratch_ != nullptr) cudaFree(scratch_);
  for (const auto& r : registrations_) unregister_shared(r.host);
}

Result CudaBackend::check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Result::Success;
  const Result r = fail(Result::UnhandledCudaError, "%s failed on GPU %d: %s", what, device_,
                        cudaGetErrorString(e));
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_ == Result::Success) {
    error_ = r;
    error_text_ = last_error();
  }
  return r;
}

Result CudaBackend::check_driver(int e, const char* what) {
  if (e == CUDA_SUCCESS) return Result::Success;
  const Result r = fail(Result::UnhandledCudaError, "%s failed on GPU %d: %s", what, device_,
                        driver_error_string(static_cast<CUresult>(e)));
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_ == Result::Success) {
    error_ = r;
    error_text_ = last_error();
  }
  return r;
}

// Ranks may be threads of one process driving several GPUs: every call names its device.
Result CudaBackend::select_device() { return check(cudaSetDevice(device_), "cudaSetDevice"); }

Result CudaBackend::stream_of(int queue, cudaStream_t* out) {
  BRAID_TRY(device::refuse_on_host_only_thread());
  if (aborted_.load()) return fail(Result::RemoteError, "the communicator was aborted");
  if (queue < 0 || queue >= num_queues()) return fail(Result::InternalError, "no queue %d", queue);
  BRAID_TRY(select_device());
  *out = streams_[queue];
  return Result::Success;
}

Result CudaBackend::counter_address(const std::atomic<uint64_t>* counter, unsigned long long* out) {
  const char* p = reinterpret_cast<const char*>(counter);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& r : registrations_) {
    if (p >= r.host && p + sizeof(uint64_t) <= r.host + r.bytes) {
      *out = reinterpret_cast<unsigned long long>(r.device + (p - r.host));
      return Result::Success;
    }
  }
  return fail(Result::InternalError,
              "a progress counter at %p is not in host memory registered with the GPU", static_cast<const void*>(p));
}

Result CudaBackend::signal_after(cudaStream_t s, device::Signal done) {
  if (done.empty()) return Result::Success;
  unsigned long long addr = 0;
  BRAID_TRY(counter_address(done.counter, &addr));
  return check_driver(driver().stream_write_value64(reinterpret_cast<CUstream>(s), addr, done.value, 0),
                      "cuStreamWriteValue64");
}

Result CudaBackend::d2h(int queue, void* host, const void* dev, size_t bytes, device::Signal done) {
  cudaStream_t s;
  BRAID_TRY(stream_of(queue, &s));
  if (bytes > 0) BRAID_TRY(check(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync D2H"));
  return signal_after(s, done);
}

Result CudaBackend::h2d(int queue, void* dev, const void* host, size_t bytes, device::Signal done) {
  cudaStream_t s;
  BRAID_TRY(stream_of(queue, &s));
  if (bytes > 0) BRAID_TRY(check(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync H2D"));
  return signal_after(s, done);
}

Result CudaBackend::copy(int queue, void* dev_dst, const void* dev_src, size_t bytes, device::Signal done) {
  cudaStream_t s;
  BRAID_TRY(stream_of(queue, &s));
  if (bytes > 0 && dev_dst != dev_src)
    BRAID_TRY(check(cudaMemcpyAsync(dev_dst, dev_src, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync D2D"));
  return signal_after(s, done);
}

Result CudaBackend::wait(int queue, device::Signal until) {
  if (until.empty()) return Result::Success;
  cudaStream_t s;
  BRAID_TRY(stream_of(queue, &s));
  return wait_on_stream(s, until);
}

Result CudaBackend::raise_on_stream(cudaStream_t s, device::Signal signal) {
  BRAID_TRY(device::refuse_on_host_only_thread());
  if (aborted_.load()) return fail(Result::RemoteError, "the communicator was aborted");
  return signal_after(s, signal);
}

Result CudaBackend::wait_on_stream(cudaStream_t s, device::Signal until) {
  if (until.empty()) return Result::Success;
  return wait_value_on_stream(s, until.counter, until.value, CU_STREAM_WAIT_VALUE_GEQ, "cuStreamWaitValue64");
}

Result CudaBackend::raise_and_wait_on_stream(cudaStream_t s, device::Signal raise,
                                             std::span<const device::Signal> waits, bool any_bit) {
  BRAID_TRY(device::refuse_on_host_only_thread());
  if (aborted_.load()) return fail(Result::RemoteError, "the communicator was aborted");
  std::vector<CUstreamBatchMemOpParams> ops;
  ops.reserve(waits.size() + 1);
  if (!raise.empty()) {
    CUstreamBatchMemOpParams op{};
    op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    BRAID_TRY(counter_address(raise.counter, &op.writeValue.address));
    op.writeValue.value64 = raise.value;
    ops.push_back(op);
  }
  for (const device::Signal& until : waits) {
    if (until.empty()) continue;
    CUstreamBatchMemOpParams op{};
    op.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
    BRAID_TRY(counter_address(until.counter, &op.waitValue.address));
    op.waitValue.value64 = until.value;
    op.waitValue.flags = any_bit ? CU_STREAM_WAIT_VALUE_AND : CU_STREAM_WAIT_VALUE_GEQ;
    ops.push_back(op);
  }
  if (ops.empty()) return Result::Success;
  {
    // abort() raises every counter a stream waited on.
    std::lock_guard<std::mutex> lock(mutex_);
    for (const device::Signal& until : waits)
      if (!until.empty()) waited_.insert(until.counter);
  }
  return check_driver(driver().stream_batch_mem_op(reinterpret_cast<CUstream>(s), static_cast<unsigned>(ops.size()),
                                                   ops.data(), 0),
                      "cuStreamBatchMemOp");
}

Result CudaBackend::wait_for_bits_on_stream(cudaStream_t s, std::atomic<uint64_t>* counter, uint64_t mask) {
  return wait_value_on_stream(s, counter, mask, CU_STREAM_WAIT_VALUE_AND, "cuStreamWaitValue64 (any bit)");
}

Result CudaBackend::wait_value_on_stream(cudaStream_t s, std::atomic<uint64_t>* counter, uint64_t value,
                                         unsigned flags, const char* what) {
  BRAID_TRY(device::refuse_on_host_only_thread());
  if (aborted_.load()) return fail(Result::RemoteError, "the communicator was aborted");
  unsigned long long addr = 0;
  BRAID_TRY(counter_address(counter, &addr));
  {
    // abort() raises every counter a stream waited on.
    std::lock_guard<std::mutex> lock(mutex_);
    waited_.insert(counter);
  }
  return check_driver(driver().stream_wait_value64(reinterpret_cast<CUstream>(s), addr, value, flags), what);
}

Result CudaBackend::raise(int queue, device::Signal signal) {
  cudaStream_t s;
  BRAID_TRY(stream_of(queue, &s));
  return signal_after(s, signal);
}

// BRAID_REDUCE_BLOCKS, else as many blocks as the data asks for, up to the kernels' default cap.
unsigned CudaBackend::reduce_blocks() {
  const int64_t blocks = settings().reduce_blocks;
  return blocks > 0 ? static_cast<unsigned>(std::min<int64_t>(blocks, 1 << 16)) : kDefaultReduceBlocks;
}

Result CudaBackend::reduce(int queue, DataType type, RedOp op, void* dev_dst, const void* dev_src_staged, size_t n,
                           const reduce::OpScalar* dst_scale, const reduce::OpScalar* src_scale,
                           device::Signal done) {
  cudaStream_t s;
  BRAID_TRY(stream_of(queue, &s));
  const DeviceScalar d = to_device_scalar(dst_scale), r = to_device_scalar(src_scale);
  BRAID_TRY(check(accumulate(type, op, dev_dst, dev_src_staged, n, dst_scale ? &d : nullptr, src_scale ? &r : nullptr,
                             s, reduce_blocks()),
                  "reduce kernel launch"));
  return signal_after(s, done);
}

Result CudaBackend::scale(int queue, DataType type, void* dev_dst, const void* dev_src, size_t n,
                          const reduce::OpScalar& scalar, device::Signal done) {
  cudaStream_t s;
  BRAID_TRY(stream_of(queue, &s));
  BRAID_TRY(check(cuda::scale(type, dev_dst, dev_src, n, to_device_scalar(&scalar), s, reduce_blocks()), "scale kernel launch"));
  return signal_after(s, done);
}

Result CudaBackend::divide(int queue, DataType type, void* dev_data, size_t n, uint64_t divisor, device::Signal done) {
  cudaStream_t s;
  BRAID_TRY(stream_of(queue, &s));
  BRAID_TRY(check(cuda::divide(type, dev_data, n, divisor, s, reduce_blocks()), "divide kernel launch"));
  return signal_after(s, done);
}

void* CudaBackend::device_scratch(size_t bytes) {
  if (bytes <= scratch_bytes_) return scratch_;
  if (select_device() != Result::Success) return nullptr;
  // Earlier work may still read the old buffer: let the queues drain before it goes.
  for (cudaStream_t s : streams_) cudaStreamSynchronize(s);
  if (scratch_ != nullptr) cudaFree(scratch_);
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  if (check(cudaMalloc(&scratch_, bytes), "cudaMalloc (staging scratch)") != Result::Success) return nullptr;
  scratch_bytes_ = bytes;
  return scratch_;
}

Result CudaBackend::register_host(void* ptr, size_t bytes) {
  BRAID_TRY(select_device());
  BRAID_TRY(check(register_shared(ptr, bytes), "cudaHostRegister"));
  void* dev = nullptr;
  BRAID_TRY(check(cudaHostGetDevicePointer(&dev, ptr, 0), "cudaHostGetDevicePointer"));
  std::lock_guard<std::mutex> lock(mutex_);
  registrations_.push_back({static_cast<char*>(ptr), bytes, static_cast<char*>(dev)});
  return Result::Success;
}

Result CudaBackend::unregister_host(void* ptr) {
  BRAID_TRY(select_device());
  for (cudaStream_t s : streams_) cudaStreamSynchronize(s);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = std::find_if(registrations_.begin(), registrations_.end(),
                                 [&](const Registration& r) { return r.host == ptr; });
    if (it == registrations_.end()) return Result::Success;
    registrations_.erase(it);
  }
  return check(unregister_shared(ptr), "cudaHostUnregister");
}

Result CudaBackend::begin_collective() {
  BRAID_TRY(device::refuse_on_host_only_thread());
  BRAID_TRY(select_device());
  BRAID_TRY(check(cudaEventRecord(user_ready_, user_stream_), "cudaEventRecord (user stream)"));
  for (cudaStream_t s : streams_) BRAID_TRY(check(cudaStreamWaitEvent(s, user_ready_, 0), "cudaStreamWaitEvent"));
  return Result::Success;
}

Result CudaBackend::end_collective() {
  BRAID_TRY(device::refuse_on_host_only_thread());
  BRAID_TRY(select_device());
  for (size_t q = 0; q < streams_.size(); ++q) {
    BRAID_TRY(check(cudaEventRecord(queue_done_[q], streams_[q]), "cudaEventRecord (queue)"));
    BRAID_TRY(check(cudaStreamWaitEvent(user_stream_, queue_done_[q], 0), "cudaStreamWaitEvent (user stream)"));
  }
  return Result::Success;
}

void CudaBackend::abort() {
  aborted_.store(true);
  // A stream parked in cuStreamWaitValue64 on a counter no one will raise would hang forever:
  // raise every counter a stream waited on past any value it could wait for.
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto* c : waited_) c->store(~0ull >> 1);
}

Result CudaBackend::status(std::string* message) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (message != nullptr) *message = error_text_;
  return error_;
}

}  // namespace braid::cuda
