// What each CUDA call that a split call makes costs the calling thread (median over many calls):
// the budget of braid's call path is NCCL's own host time + 5 us (docs/MULTIPATH.md).
//   host_cost_probe [calls]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

static double median_us(int calls, const std::function<void()>& f) {
  std::vector<double> t(static_cast<size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t[static_cast<size_t>(i)] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count();
  }
  std::nth_element(t.begin(), t.begin() + calls / 2, t.end());
  return t[static_cast<size_t>(calls / 2)];
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
  int device = 0;
  cudaStreamCaptureStatus capture;
  cudaPointerAttributes attributes;
  const struct {
    const char* name;
    std::function<void()> f;
  } probes[] = {
      {"cudaGetDevice", [&] { cudaGetDevice(&device); }},
      {"cudaSetDevice (same device)", [&] { cudaSetDevice(0); }},
      {"cudaStreamIsCapturing", [&] { cudaStreamIsCapturing(s, &capture); }},
      {"cudaPointerGetAttributes", [&] { cudaPointerGetAttributes(&attributes, buffer); }},
      {"cudaEventRecord (timing)", [&] { cudaEventRecord(timed, s); }},
      {"cudaEventRecord (no timing)", [&] { cudaEventRecord(untimed, s); }},
      {"cudaStreamWaitEvent", [&] { cudaStreamWaitEvent(s, untimed, 0); }},
      {"cuStreamWaitValue64 (met)", [&] { cuStreamWaitValue64(reinterpret_cast<CUstream>(s), word_device, 1, CU_STREAM_WAIT_VALUE_GEQ); }},
      {"cuStreamWaitValue32 (met)", [&] { cuStreamWaitValue32(reinterpret_cast<CUstream>(s), word32_device, 1, CU_STREAM_WAIT_VALUE_GEQ); }},
      {"cuStreamWaitValue64 (device word)", [&] { cuStreamWaitValue64(reinterpret_cast<CUstream>(s), device_word, 1, CU_STREAM_WAIT_VALUE_GEQ); }},
      {"cuStreamWaitValue32 (device word)", [&] { cuStreamWaitValue32(reinterpret_cast<CUstream>(s), device_word, 1, CU_STREAM_WAIT_VALUE_GEQ); }},
      {"cuStreamBatchMemOp (one wait)", [&] { cuStreamBatchMemOp(reinterpret_cast<CUstream>(s), 1, &batch_wait, 0); }},
      {"cuStreamWriteValue64", [&] { cuStreamWriteValue64(reinterpret_cast<CUstream>(s), word_device, 1ull << 40, 0); }},
  };
  for (const auto& p : probes) {
    const double us = median_us(calls, p.f);
    cudaStreamSynchronize(s);
    std::printf("%-32s %7.3f us\n", p.name, us);
  }
  return 0;
}
