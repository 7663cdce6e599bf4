#include "ceiling.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "check.h"

namespace braid::bench {

CeilingResult measure_pcie_ceiling(const std::vector<int>& devices, size_t bytes, int iters) {
  struct PerGpu {
    void* dev_src = nullptr;
    void* dev_dst = nullptr;
    void* host_dst = nullptr;  // D2H target
    void* host_src = nullptr;  // H2D source
    cudaStream_t d2h = nullptr, h2d = nullptr;
    cudaEvent_t d2h_start, d2h_end, h2d_start, h2d_end;
  };
  const size_t n = std::max<size_t>(bytes, 1);
  iters = std::max(iters, 1);
  std::vector<PerGpu> g(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    BENCH_CUDA(cudaSetDevice(devices[i]));
    BENCH_CUDA(cudaMalloc(&g[i].dev_src, n));
    BENCH_CUDA(cudaMalloc(&g[i].dev_dst, n));
    BENCH_CUDA(cudaHostAlloc(&g[i].host_dst, n, cudaHostAllocPortable));
    BENCH_CUDA(cudaHostAlloc(&g[i].host_src, n, cudaHostAllocPortable));
    BENCH_CUDA(cudaStreamCreateWithFlags(&g[i].d2h, cudaStreamNonBlocking));
    BENCH_CUDA(cudaStreamCreateWithFlags(&g[i].h2d, cudaStreamNonBlocking));
    for (cudaEvent_t* e : {&g[i].d2h_start, &g[i].d2h_end, &g[i].h2d_start, &g[i].h2d_end})
      BENCH_CUDA(cudaEventCreate(e));
  }
  // One warm-up copy each way, then all GPUs and both directions at once.
  for (int pass = 0; pass < 2; ++pass) {
    const int reps = pass == 0 ? 1 : iters;
    for (size_t i = 0; i < devices.size(); ++i) {
      BENCH_CUDA(cudaSetDevice(devices[i]));
      BENCH_CUDA(cudaEventRecord(g[i].d2h_start, g[i].d2h));
      BENCH_CUDA(cudaEventRecord(g[i].h2d_start, g[i].h2d));
      for (int k = 0; k < reps; ++k) {
        BENCH_CUDA(cudaMemcpyAsync(g[i].host_dst, g[i].dev_src, n, cudaMemcpyDeviceToHost, g[i].d2h));
        BENCH_CUDA(cudaMemcpyAsync(g[i].dev_dst, g[i].host_src, n, cudaMemcpyHostToDevice, g[i].h2d));
      }
      BENCH_CUDA(cudaEventRecord(g[i].d2h_end, g[i].d2h));
      BENCH_CUDA(cudaEventRecord(g[i].h2d_end, g[i].h2d));
    }
    for (size_t i = 0; i < devices.size(); ++i) {
      BENCH_CUDA(cudaSetDevice(devices[i]));
      BENCH_CUDA(cudaDeviceSynchronize());
    }
  }
  CeilingResult r;
  r.min_gbps = 1e300;
  for (size_t i = 0; i < devices.size(); ++i) {
    float d2h_ms = 0, h2d_ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&d2h_ms, g[i].d2h_start, g[i].d2h_end));
    BENCH_CUDA(cudaEventElapsedTime(&h2d_ms, g[i].h2d_start, g[i].h2d_end));
    const double moved = static_cast<double>(n) * iters / 1e9;
    r.d2h_gbps.push_back(d2h_ms > 0 ? moved / (d2h_ms / 1e3) : 0);
    r.h2d_gbps.push_back(h2d_ms > 0 ? moved / (h2d_ms / 1e3) : 0);
    r.min_gbps = std::min({r.min_gbps, r.d2h_gbps.back(), r.h2d_gbps.back()});
  }
  if (devices.empty()) r.min_gbps = 0;
  for (size_t i = 0; i < devices.size(); ++i) {
    cudaSetDevice(devices[i]);
    cudaFree(g[i].dev_src);
    cudaFree(g[i].dev_dst);
    cudaFreeHost(g[i].host_dst);
    cudaFreeHost(g[i].host_src);
    cudaStreamDestroy(g[i].d2h);
    cudaStreamDestroy(g[i].h2d);
    for (cudaEvent_t e : {g[i].d2h_start, g[i].d2h_end, g[i].h2d_start, g[i].h2d_end}) cudaEventDestroy(e);
  }
  return r;
}

}  // namespace braid::bench
