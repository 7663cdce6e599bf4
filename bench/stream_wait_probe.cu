// Does a stream-memory wait queued first on one stream stall work queued later on another stream
// of the same process? braid's asynchronous join queues cuStreamWaitValue64 on the caller's
// stream before its progress thread queues the copies that release it; if two streams share a
// hardware queue (CUDA_DEVICE_MAX_CONNECTIONS), that ordering deadlocks. For each of `streams`
// other streams, and for a releasing write made by the GPU (after a copy) or by the CPU (after
// polling the copy's own signal), prints whether the caller's stream was released within 2 s.
//   stream_wait_probe [streams]      (run under different CUDA_DEVICE_MAX_CONNECTIONS)
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "probe_status.h"

static bool released_within(cudaStream_t s, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  while (cudaStreamQuery(s) == cudaErrorNotReady) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 12;
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));
  const char* conn = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  cudaStream_t caller;
  CHECK(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking));
  std::vector<cudaStream_t> others(static_cast<size_t>(n));
  for (auto& s : others) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint64_t* words = nullptr;  // [0] the release word, [1] the copy's own signal
  CHECK(cudaHostAlloc(reinterpret_cast<void**>(&words), 64, cudaHostAllocMapped));
  void* dev = nullptr;
  CHECK(cudaMalloc(&dev, 1 << 20));
  void* host = nullptr;
  CHECK(cudaHostAlloc(&host, 1 << 20, cudaHostAllocDefault));
  CUdeviceptr release = 0, signal = 0;
  CHECK(cuMemHostGetDevicePointer(&release, words, 0));
  CHECK(cuMemHostGetDevicePointer(&signal, words + 1, 0));
  int stalls[2] = {0, 0};
  uint64_t round = 0;
  for (int writer = 0; writer < 2; ++writer) {  // 0: the GPU writes the word, 1: the CPU does
    for (int i = 0; i < n; ++i) {
      ++round;
      // The caller's stream waits first (as a split call's join), then a kernel-free marker.
      CHECK(cuStreamWaitValue64(reinterpret_cast<CUstream>(caller), release, round, CU_STREAM_WAIT_VALUE_GEQ));
      // Later, another stream (as braid's progress thread) queues the work that releases it.
      cudaStream_t s = others[static_cast<size_t>(i)];
      CHECK(cudaMemcpyAsync(host, dev, 1 << 20, cudaMemcpyDeviceToHost, s));
      if (writer == 0) {
        CHECK(cuStreamWriteValue64(reinterpret_cast<CUstream>(s), release, round, 0));
      } else {
        CHECK(cuStreamWriteValue64(reinterpret_cast<CUstream>(s), signal, round, 0));
        const auto start = std::chrono::steady_clock::now();
        while (reinterpret_cast<volatile uint64_t*>(words)[1] < round &&
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 2.0)
          std::this_thread::yield();
        reinterpret_cast<volatile uint64_t*>(words)[0] = round;
      }
      const bool ok = released_within(caller, 2.0);
      if (!ok) {
        ++stalls[writer];
        reinterpret_cast<volatile uint64_t*>(words)[0] = round;  // let everything drain
        CHECK(cudaStreamSynchronize(caller));
      }
      CHECK(cudaStreamSynchronize(s));
      std::printf("connections=%s writer=%s other_stream=%d %s\n", conn ? conn : "default",
                  writer == 0 ? "gpu" : "cpu", i, ok ? "released" : "STALLED (shares a hardware queue)");
    }
  }
  std::printf("summary connections=%s streams=%d stalled: gpu-writer %d, cpu-writer %d\n", conn ? conn : "default", n,
              stalls[0], stalls[1]);
  return 0;
}
