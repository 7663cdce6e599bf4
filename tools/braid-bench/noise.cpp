#include "noise.h"

#include <cuda_runtime.h>

#include <chrono>

#include "check.h"

namespace braid::bench {

PcieNoise::PcieNoise(const std::vector<int>& devices, size_t bytes) : bytes_(bytes) {
  for (int d : devices) threads_.emplace_back([this, d] { loop(d); });
}

PcieNoise::~PcieNoise() {
  stop_.store(true);
  for (auto& t : threads_) t.join();
}

void PcieNoise::loop(int device) {
  BENCH_CUDA(cudaSetDevice(device));
  void *host_up = nullptr, *host_down = nullptr, *dev = nullptr;
  cudaStream_t up = nullptr, down = nullptr;
  BENCH_CUDA(cudaMallocHost(&host_up, bytes_));
  BENCH_CUDA(cudaMallocHost(&host_down, bytes_));
  BENCH_CUDA(cudaMalloc(&dev, bytes_));
  BENCH_CUDA(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
  BENCH_CUDA(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking));
  while (!stop_.load()) {
    if (!on_.load()) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    BENCH_CUDA(cudaMemcpyAsync(host_up, dev, bytes_, cudaMemcpyDeviceToHost, up));
    BENCH_CUDA(cudaMemcpyAsync(dev, host_down, bytes_, cudaMemcpyHostToDevice, down));
    BENCH_CUDA(cudaStreamSynchronize(up));
    BENCH_CUDA(cudaStreamSynchronize(down));
    bursts_.fetch_add(1);
  }
  cudaStreamDestroy(up);
  cudaStreamDestroy(down);
  cudaFree(dev);
  cudaFreeHost(host_up);
  cudaFreeHost(host_down);
}

}  // namespace braid::bench
