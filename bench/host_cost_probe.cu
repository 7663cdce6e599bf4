// What each CUDA call that a split call makes costs the calling thread (median and mean over many
// calls): the budget of braid's call path is NCCL's own host time + 5 us (docs/MULTIPATH.md). Then
// the caller's calls again while another thread of the process queues copies on a stream of its
// own, as a rank's progress thread queues the PCIe share's: what the context's lock costs them.
//   host_cost_probe [calls]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <thread>
#include <vector>

struct Cost {
  double median_us, mean_us;
};

static Cost cost(int calls, const std::function<void()>& f) {
  std::vector<double> t(static_cast<size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t[static_cast<size_t>(i)] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count();
  }
  const double mean = std::accumulate(t.begin(), t.end(), 0.0) / calls;
  std::nth_element(t.begin(), t.begin() + calls / 2, t.end());
  return {t[static_cast<size_t>(calls / 2)], mean};
}

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  cudaSetDevice(0);
  cudaFree(nullptr);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t timed, untimed;
  cudaEventCreate(&timed);
  cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming);
  void* buffer = nullptr;
  cudaMalloc(&buffer, 1 << 20);
  unsigned long long* word = nullptr;
  cudaHostAlloc(reinterpret_cast<void**>(&word), 64, cudaHostAllocMapped);
  // Waits compare cyclically ((int64_t)(*word - value) >= 0): a word far above 1 meets "GEQ 1".
  *word = 1ull << 40;
  CUdeviceptr word_device = 0;
  cuMemHostGetDevicePointer(&word_device, word, 0);
  // The same wait on a word in device memory and on a 32-bit word: which join costs the caller least.
  // Every probed wait is met at once: a 32-bit wait reads word[2], whose value meets ">= 1" too.
  word[2] = 1ull << 30;
  const CUdeviceptr word32_device = word_device + 2 * sizeof(unsigned long long);
  CUdeviceptr device_word = 0;
  cuMemAlloc(&device_word, 64);
  cuMemsetD32(device_word, 1u << 30, 16);
  CUstreamBatchMemOpParams batch_wait = {};
  batch_wait.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
  batch_wait.waitValue.address = word_device;
  batch_wait.waitValue.value64 = 1;
  batch_wait.waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
  // A meeting point of braid's copy engines: raise this rank's word, wait for the peer's, in one call.
  CUstreamBatchMemOpParams raise_and_wait[2] = {};
  raise_and_wait[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  raise_and_wait[0].writeValue.address = word_device + 3 * sizeof(unsigned long long);
  raise_and_wait[0].writeValue.value64 = 1;
  raise_and_wait[1] = batch_wait;
  int device = 0;
  cudaStreamCaptureStatus capture;
  CUdeviceptr range_base = 0;
  size_t range_size = 0;
  cudaIpcMemHandle_t ipc_handle;
  unsigned long long buffer_id = 0;
  cudaPointerAttributes attributes;
  // `fork_or_join`: a call every split call makes (its fork, its join), timed again below while
  // another thread queues copies.
  const struct {
    const char* name;
    std::function<void()> f;
    bool fork_or_join = false;
  } probes[] = {
      {"cudaGetDevice", [&] { cudaGetDevice(&device); }},
      {"cudaSetDevice (same device)", [&] { cudaSetDevice(0); }},
      {"cudaStreamIsCapturing", [&] { cudaStreamIsCapturing(s, &capture); }},
      {"cudaPointerGetAttributes", [&] { cudaPointerGetAttributes(&attributes, buffer); }},
      {"cudaEventRecord (timing)", [&] { cudaEventRecord(timed, s); }, true},
      {"cudaEventRecord (no timing)", [&] { cudaEventRecord(untimed, s); }, true},
      {"cudaStreamWaitEvent", [&] { cudaStreamWaitEvent(s, untimed, 0); }},
      {"cuStreamWaitValue64 (met)", [&] { cuStreamWaitValue64(reinterpret_cast<CUstream>(s), word_device, 1, CU_STREAM_WAIT_VALUE_GEQ); }, true},
      {"cuStreamWaitValue32 (met)", [&] { cuStreamWaitValue32(reinterpret_cast<CUstream>(s), word32_device, 1, CU_STREAM_WAIT_VALUE_GEQ); }},
      {"cuStreamWaitValue64 (device word)", [&] { cuStreamWaitValue64(reinterpret_cast<CUstream>(s), device_word, 1, CU_STREAM_WAIT_VALUE_GEQ); }},
      {"cuStreamWaitValue32 (device word)", [&] { cuStreamWaitValue32(reinterpret_cast<CUstream>(s), device_word, 1, CU_STREAM_WAIT_VALUE_GEQ); }},
      {"cuStreamBatchMemOp (one wait)", [&] { cuStreamBatchMemOp(reinterpret_cast<CUstream>(s), 1, &batch_wait, 0); }},
      {"cuStreamWriteValue64", [&] { cuStreamWriteValue64(reinterpret_cast<CUstream>(s), word_device, 1ull << 40, 0); }},
      {"cuStreamBatchMemOp (write + wait)", [&] { cuStreamBatchMemOp(reinterpret_cast<CUstream>(s), 2, raise_and_wait, 0); }},
      // What exporting a buffer to a peer process costs per call (peer/allocation_share.cpp).
      {"cuMemGetAddressRange", [&] { cuMemGetAddressRange(&range_base, &range_size, reinterpret_cast<CUdeviceptr>(buffer)); }},
      {"cudaIpcGetMemHandle", [&] { cudaIpcGetMemHandle(&ipc_handle, buffer); }},
      {"cuPointerGetAttribute (buffer id)", [&] { cuPointerGetAttribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, reinterpret_cast<CUdeviceptr>(buffer)); }},
  };
  std::printf("%-34s %10s %10s\n", "call", "median us", "mean us");
  for (const auto& p : probes) {
    const Cost c = cost(calls, p.f);
    cudaStreamSynchronize(s);
    std::printf("%-34s %10.3f %10.3f\n", p.name, c.median_us, c.mean_us);
  }

  // The fork's and the join's calls again while another thread queues 64 KiB copies
  // device-to-host on its own stream without pause.
  constexpr size_t kCopyBytes = 64 << 10;
  void* host_copy = nullptr;
  cudaHostAlloc(&host_copy, kCopyBytes, cudaHostAllocDefault);
  cudaStream_t copies;
  cudaStreamCreateWithFlags(&copies, cudaStreamNonBlocking);
  std::atomic<bool> stop{false};
  std::atomic<long> queued{0};
  std::thread busy([&] {
    cudaSetDevice(0);
    while (!stop.load(std::memory_order_relaxed)) {
      cudaMemcpyAsync(host_copy, buffer, kCopyBytes, cudaMemcpyDeviceToHost, copies);
      if (queued.fetch_add(1, std::memory_order_relaxed) % 256 == 255) cudaStreamSynchronize(copies);
    }
  });
  for (const auto& p : probes) {
    if (!p.fork_or_join) continue;
    const Cost c = cost(calls, p.f);
    cudaStreamSynchronize(s);
    std::printf("%-34s %10.3f %10.3f  (another thread queueing copies)\n", p.name, c.median_us, c.mean_us);
  }
  stop.store(true);
  busy.join();
  std::printf("copies queued by the other thread: %ld\n", queued.load());
  return 0;
}
