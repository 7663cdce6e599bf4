// Two questions about the CUDA graphs braid's NVLink path replays calls from (peer/body_graphs.h),
// on one GPU:
// 1. Can a stream capture hold cudaMemcpyBatchAsync (BRAID_NVLINK_GATHER=push-batch queues its
//    calls one operation at a time because NCCL says it cannot)? Prints the capture's answer and,
//    where it works, whether the replayed copies are right.
// 2. What GPU memory do the graphs cost? Makes up to 64 executable graphs shaped like an AllGather
//    body at four ranks (a fork to three streams, a copy on each, stream memory operations at
//    both ends), launches each once, and prints cudaMemGetInfo's drop per graph.
// A measurement for docs/MULTIPATH.md, not a test. Usage: graph_cost_probe [graphs, default 64]
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_check.h"

namespace {

constexpr size_t kBytes = size_t{1} << 20;

void batch_capture() {
  char *src = nullptr, *dst = nullptr;
  CK(cudaMalloc(&src, 3 * kBytes));
  CK(cudaMalloc(&dst, 3 * kBytes));
  CK(cudaMemset(src, 7, 3 * kBytes));
  CK(cudaMemset(dst, 0, 3 * kBytes));
  cudaStream_t s = nullptr;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* dsts[3] = {dst, dst + kBytes, dst + 2 * kBytes};
  const void* srcs[3] = {src, src + kBytes, src + 2 * kBytes};
  size_t sizes[3] = {kBytes, kBytes, kBytes};
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attributes.flags = cudaMemcpyFlagPreferOverlapWithCompute;
  size_t first = 0;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const cudaError_t queued = cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, &attributes, &first, 1, s);
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s, &graph);
  std::printf("cudaMemcpyBatchAsync under capture: %s; end of capture: %s\n", cudaGetErrorString(queued),
              cudaGetErrorString(ended));
  cudaGetLastError();
  if (queued == cudaSuccess && ended == cudaSuccess && graph != nullptr) {
    size_t nodes = 0;
    CK(cudaGraphGetNodes(graph, nullptr, &nodes));
    cudaGraphExec_t exec = nullptr;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    std::vector<char> back(3 * kBytes);
    CK(cudaMemcpy(back.data(), dst, back.size(), cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (char c : back) wrong += c != 7;
    std::printf("  the graph: %zu nodes; replayed: %zu of %zu bytes wrong\n", nodes, wrong, back.size());
    cudaGraphExecDestroy(exec);
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  cudaFree(src);
  cudaFree(dst);
}

size_t free_bytes() {
  CK(cudaDeviceSynchronize());
  size_t free = 0, total = 0;
  CK(cudaMemGetInfo(&free, &total));
  return free;
}

void graph_memory(int graphs) {
  char *src = nullptr, *dst = nullptr;
  CK(cudaMalloc(&src, kBytes));
  CK(cudaMalloc(&dst, 3 * kBytes));
  CUdeviceptr flags = 0;
  CK(cudaMalloc(reinterpret_cast<void**>(&flags), 64));
  CK(cudaMemset(reinterpret_cast<void*>(flags), 0, 64));
  cudaStream_t main = nullptr, side[3] = {};
  CK(cudaStreamCreateWithFlags(&main, cudaStreamNonBlocking));
  for (auto& s : side) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t fork = nullptr, join[3] = {};
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  for (auto& e : join) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const size_t before = free_bytes();
  std::vector<cudaGraphExec_t> execs;
  for (int g = 0; g < graphs; ++g) {
    CK(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal));
    // Every graph differs (its copies' offsets), as braid's keys do.
    if (cuStreamWriteValue64(main, flags, g, 0) != CUDA_SUCCESS) std::exit(1);
    if (cuStreamWaitValue64(main, flags, g, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) std::exit(1);
    CK(cudaEventRecord(fork, main));
    for (int i = 0; i < 3; ++i) {
      CK(cudaStreamWaitEvent(side[i], fork, 0));
      CK(cudaMemcpyAsync(dst + i * kBytes, src + (g % 16) * 256, kBytes - 4096, cudaMemcpyDeviceToDevice, side[i]));
      CK(cudaEventRecord(join[i], side[i]));
      CK(cudaStreamWaitEvent(main, join[i], 0));
    }
    if (cuStreamWriteValue64(main, flags + 8, g, 0) != CUDA_SUCCESS) std::exit(1);
    cudaGraph_t graph = nullptr;
    CK(cudaStreamEndCapture(main, &graph));
    cudaGraphExec_t exec = nullptr;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphDestroy(graph));
    CK(cudaGraphLaunch(exec, main));
    execs.push_back(exec);
  }
  const size_t after = free_bytes();
  std::printf("%d graphs made and launched once: %.1f MiB of GPU memory in all, %.1f KiB a graph\n", graphs,
              static_cast<double>(before - after) / (1 << 20),
              static_cast<double>(before - after) / 1024.0 / graphs);
  for (cudaGraphExec_t e : execs) CK(cudaGraphExecDestroy(e));
  std::printf("after destroying them: %.1f MiB still used\n", static_cast<double>(before - free_bytes()) / (1 << 20));
}

}  // namespace

int main(int argc, char** argv) {
  const int graphs = argc > 1 ? std::atoi(argv[1]) : 64;
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  batch_capture();
  graph_memory(graphs);
  return 0;
}
