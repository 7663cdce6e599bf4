// How much NVLink is left beside NCCL: the copy engines' peer copies (cudaMemcpyPeerAsync, no
// SMs) alone, NCCL's all_gather / reduce_scatter / all_reduce alone, and both at once, between
// GPUs 0 and 1 of one process. A measurement for docs/PERFORMANCE.md, not a test.
// Usage: nvlink_probe [MiB per GPU, default 512]
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_check.h"

namespace {

constexpr int kGpus = 2;
size_t g_bytes;
char* g_src[kGpus];
char* g_dst[kGpus];
char* g_nccl_in[kGpus];
char* g_nccl_out[kGpus];
cudaStream_t g_copy[kGpus][4];
cudaStream_t g_nccl_stream[kGpus];
ncclComm_t g_comms[kGpus];

// Each GPU pulls `bytes` from its peer, split over `streams` copy streams.
void enqueue_peer_copies(size_t bytes, int streams) {
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    const int peer = 1 - g;
    const size_t piece = bytes / streams;
    for (int s = 0; s < streams; ++s)
      CK(cudaMemcpyPeerAsync(g_dst[g] + s * piece, g, g_src[peer] + s * piece, peer, piece, g_copy[g][s]));
  }
}

enum class Coll { AllGather, ReduceScatter, AllReduce };
const char* coll_name(Coll c) {
  return c == Coll::AllGather ? "all_gather" : c == Coll::ReduceScatter ? "reduce_scatter" : "all_reduce";
}

// nccl-tests' size: the all_gather output / reduce_scatter input / all_reduce buffer.
void enqueue_nccl(Coll c, size_t size) {
  NK(ncclGroupStart());
  for (int g = 0; g < kGpus; ++g) {
    const size_t floats = size / sizeof(float);
    switch (c) {
      case Coll::AllGather:
        NK(ncclAllGather(g_nccl_in[g], g_nccl_out[g], floats / kGpus, ncclFloat32, g_comms[g], g_nccl_stream[g]));
        break;
      case Coll::ReduceScatter:
        NK(ncclReduceScatter(g_nccl_in[g], g_nccl_out[g], floats / kGpus, ncclFloat32, ncclSum, g_comms[g],
                             g_nccl_stream[g]));
        break;
      case Coll::AllReduce:
        NK(ncclAllReduce(g_nccl_in[g], g_nccl_out[g], floats, ncclFloat32, ncclSum, g_comms[g], g_nccl_stream[g]));
        break;
    }
  }
  NK(ncclGroupEnd());
}

void sync_all() {
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceSynchronize());
  }
}

// Milliseconds per iteration of the work `fn` enqueues, stream-ordered from event ev0 on GPU 0's
// first copy stream; everything joins back before the end event.
template <typename Fn>
double time_ms(Fn fn, int iters) {
  fn();  // warm-up
  sync_all();
  cudaEvent_t start, stop;
  CK(cudaSetDevice(0));
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  CK(cudaEventRecord(start, 0));
  // Hold every stream behind `start`.
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    for (auto& s : g_copy[g]) CK(cudaStreamWaitEvent(s, start, 0));
    CK(cudaStreamWaitEvent(g_nccl_stream[g], start, 0));
  }
  for (int i = 0; i < iters; ++i) fn();
  std::vector<cudaEvent_t> done;
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    std::vector<cudaStream_t> all(g_copy[g], g_copy[g] + 4);
    all.push_back(g_nccl_stream[g]);
    for (cudaStream_t s : all) {
      cudaEvent_t e;
      CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      CK(cudaEventRecord(e, s));
      done.push_back(e);
    }
  }
  CK(cudaSetDevice(0));
  for (cudaEvent_t e : done) CK(cudaStreamWaitEvent(0, e, 0));
  CK(cudaEventRecord(stop, 0));
  CK(cudaEventSynchronize(stop));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, start, stop));
  for (cudaEvent_t e : done) cudaEventDestroy(e);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / iters;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < kGpus) {
    std::printf("nvlink_probe: needs 2 GPUs, %d visible\n", n);
    return 0;
  }
  g_bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 512) << 20;
  for (int g = 0; g < kGpus; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceEnablePeerAccess(1 - g, 0));
    CK(cudaMalloc(&g_src[g], g_bytes));
    CK(cudaMalloc(&g_dst[g], g_bytes));
    CK(cudaMalloc(&g_nccl_in[g], 2 * g_bytes));
    CK(cudaMalloc(&g_nccl_out[g], 2 * g_bytes));
    CK(cudaMemset(g_src[g], 1, g_bytes));
    CK(cudaMemset(g_nccl_in[g], 0, 2 * g_bytes));
    for (auto& s : g_copy[g]) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&g_nccl_stream[g], cudaStreamNonBlocking));
  }
  NK(ncclCommInitAll(g_comms, kGpus, nullptr));
  const int iters = 10;
  const double mib = static_cast<double>(g_bytes) / (1 << 20);
  std::printf("# per-direction GB/s: bytes one GPU receives from the other per second\n");
  for (int streams : {1, 2, 4}) {
    const double ms = time_ms([&] { enqueue_peer_copies(g_bytes, streams); }, iters);
    std::printf("peer copies alone, both directions, %d stream(s), %.0f MiB each way: %.3f ms, %.1f GB/s per direction\n",
                streams, mib, ms, g_bytes / ms / 1e6);
  }
  // NCCL moves (n-1)/n of the nccl-tests size per GPU per direction for all_gather and
  // reduce_scatter, 2(n-1)/n for all_reduce: with 2 GPUs, size/2 and size.
  for (Coll c : {Coll::AllGather, Coll::ReduceScatter, Coll::AllReduce}) {
    const size_t size = 2 * g_bytes;
    const double per_dir = c == Coll::AllReduce ? size : size / 2.0;
    const double alone = time_ms([&] { enqueue_nccl(c, size); }, iters);
    std::printf("%s %.0f MiB alone: %.3f ms, algbw %.1f GB/s, %.1f GB/s per direction\n", coll_name(c), 2 * mib,
                alone, size / alone / 1e6, per_dir / alone / 1e6);
    for (double frac : {0.1, 0.2, 0.3}) {
      const size_t copy = static_cast<size_t>(frac * g_bytes) & ~size_t{4095};
      const double both = time_ms(
          [&] {
            enqueue_nccl(c, size);
            enqueue_peer_copies(copy, 2);
          },
          iters);
      const double copy_alone = time_ms([&] { enqueue_peer_copies(copy, 2); }, iters);
      std::printf("  + peer copies of %.0f MiB each way beside it: %.3f ms together (copies alone %.3f ms), "
                  "%.1f GB/s per direction in all, %.2fx NCCL alone's per-direction rate\n",
                  copy / 1048576.0, both, copy_alone, (per_dir + copy) / both / 1e6,
                  ((per_dir + copy) / both) / (per_dir / alone));
    }
  }
  for (int g = 0; g < kGpus; ++g) ncclCommDestroy(g_comms[g]);
  return 0;
}
