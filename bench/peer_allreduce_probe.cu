// braid's NVLink AllReduce kernel (src/cuda/peer_reduce) against NCCL's all_reduce, between GPUs
// 0 and 1 of one process: each GPU reduces its half of both GPUs' inputs (the peer's read over
// NVLink) and writes the sum to both outputs. Forms: "fused" (one kernel reads the peer), and
// "pull" (the copy engines pull the peer's half into scratch first, the kernel reads local memory
// and writes both outputs). Checks the result against NCCL's bit for bit. A measurement for
// docs/PERFORMANCE.md, not a test. Usage: peer_allreduce_probe [iterations, default 20]
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/peer_reduce.h"
#include "probe_check.h"

namespace {

using braid::DataType;
using braid::RedOp;

constexpr int kGpus = 2;
constexpr size_t kMaxBytes = size_t{1} << 30;
char* g_in[kGpus];
char* g_out[kGpus];
char* g_ref[kGpus];
char* g_scratch[kGpus];
cudaStream_t g_stream[kGpus];
cudaEvent_t g_ready[kGpus], g_done[kGpus], g_pulled[kGpus];
ncclComm_t g_comms[kGpus];

void nccl_all_reduce(size_t bytes, ncclDataType_t t, size_t esize, char** out) {
  NK(ncclGroupStart());
  for (int g = 0; g < kGpus; ++g)
    NK(ncclAllReduce(g_in[g], out[g], bytes / esize, t, ncclSum, g_comms[g], g_stream[g]));
  NK(ncclGroupEnd());
}

// braid's form: GPU g owns half g of the buffer; both inputs in rank order; both outputs.
void braid_all_reduce(size_t bytes, DataType type, size_t esize, bool pull, unsigned blocks, unsigned threads) {
  const size_t n = bytes / esize, half = (n / 2) & ~size_t{255};
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaEventRecord(g_ready[g], g_stream[g]));
  }
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    const int peer = 1 - g;
    CK(cudaStreamWaitEvent(g_stream[g], g_ready[peer], 0));
    const size_t begin = g == 0 ? 0 : half, count = g == 0 ? half : n - half;
    braid::cuda::PeerOperands o;
    o.n_inputs = 2;
    o.n_outputs = 2;
    const char* peer_in = g_in[peer] + begin * esize;
    if (pull) {
      CK(cudaMemcpyAsync(g_scratch[g], peer_in, count * esize, cudaMemcpyDeviceToDevice, g_stream[g]));
      peer_in = g_scratch[g];
    }
    o.inputs[g] = g_in[g] + begin * esize;
    o.inputs[peer] = peer_in;
    o.outputs[0] = g_out[g] + begin * esize;
    o.outputs[1] = g_out[peer] + begin * esize;
    CK(braid::cuda::reduce_to_all(type, RedOp::Sum, o, count, g_stream[g], blocks, threads));
    CK(cudaEventRecord(g_done[g], g_stream[g]));
  }
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaStreamWaitEvent(g_stream[g], g_done[1 - g], 0));
  }
}

template <typename Fn>
double time_ms(Fn fn, int iters) {
  fn();
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceSynchronize());
  }
  cudaEvent_t start[kGpus], stop[kGpus];
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaEventCreate(&start[g]));
    CK(cudaEventCreate(&stop[g]));
    CK(cudaEventRecord(start[g], g_stream[g]));
  }
  for (int i = 0; i < iters; ++i) fn();
  float worst = 0;
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaEventRecord(stop[g], g_stream[g]));
  }
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaEventSynchronize(stop[g]));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start[g], stop[g]));
    if (ms > worst) worst = ms;
    cudaEventDestroy(start[g]);
    cudaEventDestroy(stop[g]);
  }
  return worst / iters;
}

__global__ void fill(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u + seed;
    x ^= x >> 13;
    p[i] = static_cast<float>(x % 100000) / 777.0f - 50.0f;
  }
}

bool same_as_nccl(size_t bytes) {
  std::vector<char> a(bytes), b(bytes);
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(a.data(), g_out[g], bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), g_ref[g], bytes, cudaMemcpyDeviceToHost));
    if (std::memcmp(a.data(), b.data(), bytes) != 0) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < kGpus) {
    std::printf("peer_allreduce_probe: needs 2 GPUs, %d visible\n", n);
    return 0;
  }
  const int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceEnablePeerAccess(1 - g, 0));
    for (char** p : {&g_in[g], &g_out[g], &g_ref[g], &g_scratch[g]}) CK(cudaMalloc(p, kMaxBytes));
    fill<<<1024, 256>>>(reinterpret_cast<float*>(g_in[g]), kMaxBytes / 4, 17u + g);
    CK(cudaGetLastError());
    CK(cudaStreamCreateWithFlags(&g_stream[g], cudaStreamNonBlocking));
    for (cudaEvent_t* e : {&g_ready[g], &g_done[g], &g_pulled[g]})
      CK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  }
  NK(ncclCommInitAll(g_comms, kGpus, nullptr));

  struct Type {
    DataType braid;
    ncclDataType_t nccl;
    size_t size;
    const char* name;
  };
  const Type types[] = {{DataType::Float32, ncclFloat32, 4, "float"}, {DataType::Bfloat16, ncclBfloat16, 2, "bf16"}};
  // Bit-for-bit against NCCL (two ranks: a + b either way), odd sizes too.
  for (const Type& t : types)
    for (size_t bytes : {size_t{4096} + 2 * t.size, size_t{3} << 20, size_t{64} << 20}) {
      nccl_all_reduce(bytes, t.nccl, t.size, g_ref);
      braid_all_reduce(bytes, t.braid, t.size, false, braid::cuda::kPeerReduceBlocks,
                       braid::cuda::kPeerReduceThreads);
      const bool fused = same_as_nccl(bytes);
      braid_all_reduce(bytes, t.braid, t.size, true, braid::cuda::kPeerReduceBlocks, braid::cuda::kPeerReduceThreads);
      std::printf("check %s %zu bytes: fused %s, pull %s\n", t.name, bytes, fused ? "same as NCCL" : "DIFFERS",
                  same_as_nccl(bytes) ? "same as NCCL" : "DIFFERS");
    }

  std::printf("# float sum, out of place; algbw = bytes / time; ratio = NCCL's time / braid's\n");
  for (size_t mib : {1, 4, 16, 64, 256, 1024}) {
    const size_t bytes = mib << 20;
    const double nccl = time_ms([&] { nccl_all_reduce(bytes, ncclFloat32, 4, g_ref); }, iters);
    std::printf("%5zu MiB nccl: %.3f ms, algbw %.1f GB/s\n", mib, nccl, bytes / nccl / 1e6);
    for (bool pull : {false, true})
      for (unsigned blocks : {132u, 264u, 528u, 1056u})
        for (unsigned threads : {256u, 512u}) {
          const double ms = time_ms([&] { braid_all_reduce(bytes, DataType::Float32, 4, pull, blocks, threads); }, iters);
          std::printf("%5zu MiB %s blocks %4u x %3u: %.3f ms, algbw %.1f GB/s, %.3fx NCCL\n", mib,
                      pull ? "pull " : "fused", blocks, threads, ms, bytes / ms / 1e6, nccl / ms);
        }
  }
  for (int g = 0; g < kGpus; ++g) ncclCommDestroy(g_comms[g]);
  return 0;
}
