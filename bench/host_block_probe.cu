// Can a CUDA call that waits for the device on one thread stop another thread of the process from
// queueing work? braid's progress thread queues GPU work that callers' streams already wait on
// (their wait for the completion word). If an application thread meanwhile sits in a call that
// waits for that stream and holds what the progress thread's calls need, neither goes on: the
// PyTorch DDP hang with the copy engines' meeting on the progress thread
// (bench/results/h100x1-rig/lane-ddp-hang/).
//
// For each blocking call: a stream waits on a host word (cuStreamWaitValue64); a "blocker" thread
// enters the call; 300 ms later a "lane" thread times the calls braid's progress thread makes
// (event record, stream wait on an event, copy, kernel, stream memory write), the last of which
// releases the word. A rescue thread writes the word from the CPU after 3 s, so every case ends.
// A lane call that took seconds was blocked by the blocker.
//   host_block_probe
#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "probe_status.h"

__global__ void touch(int* p) { p[threadIdx.x] += 1; }
// Launched for the first time by one case only: with lazy loading (CUDA_MODULE_LOADING=LAZY, the
// default since CUDA 12.2) its first launch loads it.
__global__ void first_launch(int* p) { p[threadIdx.x] *= 3; }

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

struct Case {
  const char* name;
  // The blocking call, given the waiting stream and an event recorded after the wait.
  std::function<void(cudaStream_t, cudaEvent_t)> call;
};

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // a case that never ends still leaves the ones before it
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));
  void* word_host = nullptr;
  CHECK(cudaHostAlloc(&word_host, 8, cudaHostAllocMapped | cudaHostAllocPortable));
  auto* word = static_cast<std::atomic<uint64_t>*>(word_host);
  void* word_dev = nullptr;
  CHECK(cudaHostGetDevicePointer(&word_dev, word_host, 0));
  int* small = nullptr;
  void *copy_a = nullptr, *copy_b = nullptr, *to_free = nullptr, *small_to_free = nullptr;
  CHECK(cudaMalloc(&small, 1024 * sizeof(int)));
  CHECK(cudaMalloc(&copy_a, 1 << 20));
  CHECK(cudaMalloc(&copy_b, 1 << 20));
  void* pageable = std::malloc(1 << 20);
  const char* loading = std::getenv("CUDA_MODULE_LOADING");
  std::printf("CUDA_MODULE_LOADING=%s\n", loading ? loading : "(unset: lazy)");
  // touch is loaded here, while nothing waits: its first launch behind a stuck stream would wait
  // for that stream itself (the lazy-load case below).
  touch<<<1, 32>>>(small);
  CHECK(cudaDeviceSynchronize());

  const std::vector<Case> cases = {
      {"none (control)", [](cudaStream_t, cudaEvent_t) { std::this_thread::sleep_for(std::chrono::milliseconds(600)); }},
      {"cudaStreamSynchronize(waiting)", [](cudaStream_t s, cudaEvent_t) { cudaStreamSynchronize(s); }},
      {"cudaEventSynchronize(after wait)", [](cudaStream_t, cudaEvent_t e) { cudaEventSynchronize(e); }},
      {"cudaDeviceSynchronize", [](cudaStream_t, cudaEvent_t) { cudaDeviceSynchronize(); }},
      {"cudaMalloc 512 MB", [](cudaStream_t, cudaEvent_t) {
         void* p = nullptr;
         if (cudaMalloc(&p, size_t{512} << 20) == cudaSuccess) cudaFree(p);
       }},
      {"cudaFree", [&](cudaStream_t, cudaEvent_t) { cudaFree(to_free); }},
      {"cudaMemcpy D2H pageable (legacy stream)", [&](cudaStream_t, cudaEvent_t) {
         cudaMemcpy(pageable, copy_a, 1 << 20, cudaMemcpyDeviceToHost);
       }},
      {"cudaMemcpyAsync D2H pageable + sync (waiting stream)", [&](cudaStream_t s, cudaEvent_t) {
         cudaMemcpyAsync(pageable, copy_a, 1 << 20, cudaMemcpyDeviceToHost, s);
         cudaStreamSynchronize(s);
       }},
      {"first launch of a kernel (lazy loading)", [&](cudaStream_t, cudaEvent_t) {
         cudaStream_t other = nullptr;
         cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
         first_launch<<<1, 32, 0, other>>>(small);
         cudaStreamSynchronize(other);
         cudaStreamDestroy(other);
       }},
      {"cudaHostAlloc 64 MB", [](cudaStream_t, cudaEvent_t) {
         void* p = nullptr;
         if (cudaHostAlloc(&p, size_t{64} << 20, 0) == cudaSuccess) cudaFreeHost(p);
       }},
      // What PyTorch's allocators do: the caching allocator's cudaMalloc of a 2 MB block or a
      // 20 MB segment on a miss, and its frees; the cudaMallocAsync backend; expandable segments
      // (cuMemCreate and cuMemMap into reserved addresses).
      {"cudaMalloc 2 MB", [](cudaStream_t, cudaEvent_t) { void* p = nullptr; cudaMalloc(&p, size_t{2} << 20); }},
      {"cudaMalloc 20 MB", [](cudaStream_t, cudaEvent_t) { void* p = nullptr; cudaMalloc(&p, size_t{20} << 20); }},
      {"cudaFree 2 MB", [&](cudaStream_t, cudaEvent_t) { cudaFree(small_to_free); }},
      {"cudaMallocAsync 64 MB + cudaFreeAsync (own stream)", [](cudaStream_t, cudaEvent_t) {
         cudaStream_t own = nullptr;
         cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
         void* p = nullptr;
         if (cudaMallocAsync(&p, size_t{64} << 20, own) == cudaSuccess) cudaFreeAsync(p, own);
         cudaStreamSynchronize(own);
         cudaStreamDestroy(own);
       }},
      {"cuMemCreate + cuMemMap 64 MB (expandable segments)", [](cudaStream_t, cudaEvent_t) {
         CUmemAllocationProp prop{};
         prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
         prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
         prop.location.id = 0;
         const size_t bytes = size_t{64} << 20;
         CUdeviceptr va = 0;
         CUmemGenericAllocationHandle h = 0;
         if (cuMemAddressReserve(&va, bytes, 0, 0, 0) != CUDA_SUCCESS) return;
         if (cuMemCreate(&h, bytes, &prop, 0) == CUDA_SUCCESS) {
           if (cuMemMap(va, bytes, 0, h, 0) == CUDA_SUCCESS) {
             CUmemAccessDesc access{};
             access.location = prop.location;
             access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
             cuMemSetAccess(va, bytes, &access, 1);
             cuMemUnmap(va, bytes);
           }
           cuMemRelease(h);
         }
         cuMemAddressFree(va, bytes);
       }},
      {"cudaHostRegister 64 MB", [](cudaStream_t, cudaEvent_t) {
         void* p = std::malloc(size_t{64} << 20);
         if (cudaHostRegister(p, size_t{64} << 20, cudaHostRegisterDefault) == cudaSuccess) cudaHostUnregister(p);
         std::free(p);
       }},
      {"cudaStreamCreate + cudaEventCreate", [](cudaStream_t, cudaEvent_t) {
         cudaStream_t s = nullptr;
         cudaEvent_t e = nullptr;
         cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
         cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
         cudaEventDestroy(e);
         cudaStreamDestroy(s);
       }},
  };

  std::printf("%-50s %10s %10s %10s %10s %10s %10s %s\n", "blocker", "record", "waitEvent", "memcpy", "kernel",
              "writeVal", "blocker", "verdict");
  for (const Case& c : cases) {
    std::fprintf(stderr, "case: %s\n", c.name);
    if (std::string(c.name) == "cudaFree") CHECK(cudaMalloc(&to_free, 64 << 20));
    if (std::string(c.name) == "cudaFree 2 MB") CHECK(cudaMalloc(&small_to_free, 2 << 20));
    cudaStream_t waiting = nullptr, lane = nullptr;
    cudaEvent_t after_wait = nullptr, lane_event = nullptr;
    CHECK(cudaStreamCreateWithFlags(&waiting, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&lane, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&after_wait, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&lane_event, cudaEventDisableTiming));
    word->store(0);
    CHECK(cuStreamWaitValue64(reinterpret_cast<CUstream>(waiting), reinterpret_cast<CUdeviceptr>(word_dev), 1,
                              CU_STREAM_WAIT_VALUE_GEQ));
    touch<<<1, 32, 0, waiting>>>(small);
    CHECK(cudaEventRecord(after_wait, waiting));

    std::atomic<bool> done{false};
    double blocker_ms = 0;
    std::thread rescue([&] {
      const auto t = std::chrono::steady_clock::now();
      while (!done.load() && since(t) < 3000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (word->load() == 0) word->store(1);  // the blocker would never return otherwise
    });
    std::thread blocker([&] {
      const auto t = std::chrono::steady_clock::now();
      c.call(waiting, after_wait);
      blocker_ms = since(t);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    double ms[5] = {};
    std::thread lane_thread([&] {
      cudaSetDevice(0);
      auto t = std::chrono::steady_clock::now();
      cudaEventRecord(lane_event, lane);
      ms[0] = since(t), t = std::chrono::steady_clock::now();
      cudaStreamWaitEvent(lane, lane_event, 0);
      ms[1] = since(t), t = std::chrono::steady_clock::now();
      cudaMemcpyAsync(copy_b, copy_a, 1 << 20, cudaMemcpyDeviceToDevice, lane);
      ms[2] = since(t), t = std::chrono::steady_clock::now();
      touch<<<1, 32, 0, lane>>>(small);
      ms[3] = since(t), t = std::chrono::steady_clock::now();
      cuStreamWriteValue64(reinterpret_cast<CUstream>(lane), reinterpret_cast<CUdeviceptr>(word_dev), 1, 0);
      ms[4] = since(t);
    });
    lane_thread.join();
    blocker.join();
    done.store(true);
    rescue.join();
    CHECK(cudaDeviceSynchronize());
    double worst = 0;
    for (double m : ms) worst = worst > m ? worst : m;
    std::printf("%-50s %10.3f %10.3f %10.3f %10.3f %10.3f %10.1f %s\n", c.name, ms[0], ms[1], ms[2], ms[3], ms[4],
                blocker_ms, worst > 1000 ? "LANE BLOCKED (released by the CPU rescue)" : "lane free");
    std::fflush(stdout);
    cudaStreamDestroy(waiting);
    cudaStreamDestroy(lane);
    cudaEventDestroy(after_wait);
    cudaEventDestroy(lane_event);
  }
  return 0;
}
