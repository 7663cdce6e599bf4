// Why braid's copy-engine AllGather loses at four ranks (issue 42 item 1): braid pulls each peer's
// block on a stream per peer and tops out near 200-220 GB/s busbw on 4x H200 (gpus4-pulls/), while
// NCCL's copy-engine collectives (-R 2 -x 2) reach 362. NCCL pushes its own block into every peer
// and hands a GPU's copies to the driver in one cudaMemcpyBatchAsync (src/ce_coll.cc). This probe
// moves the same all-gather (every GPU's block to every other GPU, all GPUs at once, one process)
// each of those ways: pull or push, a stream per peer or one batch, each block in 1 or 4 pieces,
// and prints nccl-tests' algbw and busbw for each, with a check of every block's first and last
// byte. A measurement for docs/MULTIPATH.md, not a test.
// Usage: copy_engine_probe [GPUs, default all visible] [iterations, default 10] [MiB per block...]
//        (blocks default 4 16 64 256 MiB; nccl-tests' size is GPUs x block)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "probe_check.h"

namespace {

struct Gpu {
  char* send = nullptr;                 // this GPU's block, every byte = its index + 1
  char* recv = nullptr;                 // every GPU's block, in GPU order
  cudaStream_t main = nullptr;          // the batch's stream, and the fork and join of the others
  std::vector<cudaStream_t> per_peer;   // one per other GPU
  cudaEvent_t fork = nullptr;
  std::vector<cudaEvent_t> joined;
  cudaEvent_t done = nullptr;           // this GPU's part of one all-gather ended
};

enum class Direction { Pull, Push };
enum class Issue { StreamPerPeer, OneBatch };

struct Way {
  Direction direction;
  Issue issue;
  int pieces;
  std::string name() const {
    return std::string(direction == Direction::Pull ? "pull" : "push") +
           (issue == Issue::StreamPerPeer ? " stream-per-peer" : " one-batch") + " pieces=" + std::to_string(pieces);
  }
};

// One all-gather of `block` bytes per GPU, queued on every GPU the given way (not waited for by
// the host), then a barrier on the GPUs: the next one starts when every GPU's part has ended, as a
// collective's would (pushes write into peers' buffers).
void enqueue(std::vector<Gpu>& gpus, size_t block, const Way& way);
void barrier(std::vector<Gpu>& gpus) {
  const int n = static_cast<int>(gpus.size());
  for (int g = 0; g < n; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaEventRecord(gpus[g].done, gpus[g].main));
  }
  for (int g = 0; g < n; ++g) {
    CK(cudaSetDevice(g));
    for (int p = 0; p < n; ++p)
      if (p != g) CK(cudaStreamWaitEvent(gpus[g].main, gpus[p].done, 0));
  }
}

void enqueue(std::vector<Gpu>& gpus, size_t block, const Way& way) {
  const int n = static_cast<int>(gpus.size());
  const size_t piece = block / way.pieces;
  for (int g = 0; g < n; ++g) {
    CK(cudaSetDevice(g));
    Gpu& me = gpus[g];
    std::vector<void*> dsts;
    std::vector<const void*> srcs;
    std::vector<size_t> sizes;
    std::vector<int> peer_of;
    // Pieces interleaved over the peers, each peer starting from the next GPU (as NCCL orders them).
    for (int k = 0; k < way.pieces; ++k)
      for (int step = 1; step < n; ++step) {
        const int p = (g + step) % n;
        const size_t at = k * piece, bytes = k + 1 == way.pieces ? block - at : piece;
        if (way.direction == Direction::Pull) {
          dsts.push_back(me.recv + p * block + at);
          srcs.push_back(gpus[p].send + at);
        } else {
          dsts.push_back(gpus[p].recv + g * block + at);
          srcs.push_back(me.send + at);
        }
        sizes.push_back(bytes);
        peer_of.push_back(step - 1);
      }
    // The own block, as the collective's out-of-place result needs it.
    CK(cudaMemcpyAsync(me.recv + g * block, me.send, block, cudaMemcpyDeviceToDevice, me.main));
    if (way.issue == Issue::OneBatch) {
      cudaMemcpyAttributes attrs{};
      attrs.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
      attrs.flags = cudaMemcpyFlagPreferOverlapWithCompute;
      size_t first = 0;
      CK(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), dsts.size(), &attrs, &first, 1, me.main));
      continue;
    }
    CK(cudaEventRecord(me.fork, me.main));
    for (int s = 0; s < n - 1; ++s) CK(cudaStreamWaitEvent(me.per_peer[s], me.fork, 0));
    for (size_t i = 0; i < dsts.size(); ++i)
      CK(cudaMemcpyAsync(dsts[i], srcs[i], sizes[i], cudaMemcpyDefault, me.per_peer[peer_of[i]]));
    for (int s = 0; s < n - 1; ++s) {
      CK(cudaEventRecord(me.joined[s], me.per_peer[s]));
      CK(cudaStreamWaitEvent(me.main, me.joined[s], 0));
    }
  }
  barrier(gpus);
}

void synchronize(std::vector<Gpu>& gpus) {
  for (size_t g = 0; g < gpus.size(); ++g) {
    CK(cudaSetDevice(static_cast<int>(g)));
    CK(cudaStreamSynchronize(gpus[g].main));
  }
}

// Every block's first and last byte on every GPU: block p holds p + 1.
bool gathered(std::vector<Gpu>& gpus, size_t block) {
  const int n = static_cast<int>(gpus.size());
  for (int g = 0; g < n; ++g) {
    CK(cudaSetDevice(g));
    for (int p = 0; p < n; ++p) {
      char ends[2];
      CK(cudaMemcpy(&ends[0], gpus[g].recv + p * block, 1, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(&ends[1], gpus[g].recv + (p + 1) * block - 1, 1, cudaMemcpyDeviceToHost));
      if (ends[0] != p + 1 || ends[1] != p + 1) return false;
    }
    CK(cudaMemset(gpus[g].recv, 0, n * block));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int visible = 0;
  CK(cudaGetDeviceCount(&visible));
  const int n = argc > 1 ? std::atoi(argv[1]) : visible;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 10;
  std::vector<size_t> blocks;
  for (int i = 3; i < argc; ++i) blocks.push_back(static_cast<size_t>(std::atoll(argv[i])) << 20);
  if (blocks.empty()) blocks = {size_t{4} << 20, size_t{16} << 20, size_t{64} << 20, size_t{256} << 20};
  if (n < 2 || n > visible || iterations < 1) {
    std::printf("copy_engine_probe: needs 2 or more GPUs (%d visible, %d asked) and iterations >= 1\n", visible, n);
    return n < 2 ? 0 : 2;
  }
  std::vector<Gpu> gpus(n);
  const size_t largest = *std::max_element(blocks.begin(), blocks.end());
  for (int g = 0; g < n; ++g) {
    CK(cudaSetDevice(g));
    for (int p = 0; p < n; ++p) {
      int can = 0;
      CK(cudaDeviceCanAccessPeer(&can, g, p));
      if (p != g && can) CK(cudaDeviceEnablePeerAccess(p, 0));
    }
    Gpu& me = gpus[g];
    CK(cudaMalloc(&me.send, largest));
    CK(cudaMalloc(&me.recv, n * largest));
    CK(cudaMemset(me.send, g + 1, largest));
    CK(cudaMemset(me.recv, 0, n * largest));
    CK(cudaStreamCreateWithFlags(&me.main, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&me.fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&me.done, cudaEventDisableTiming));
    me.per_peer.resize(n - 1);
    me.joined.resize(n - 1);
    for (int s = 0; s < n - 1; ++s) {
      CK(cudaStreamCreateWithFlags(&me.per_peer[s], cudaStreamNonBlocking));
      CK(cudaEventCreateWithFlags(&me.joined[s], cudaEventDisableTiming));
    }
  }
  std::vector<Way> ways;
  for (Direction d : {Direction::Pull, Direction::Push})
    for (Issue i : {Issue::StreamPerPeer, Issue::OneBatch})
      for (int pieces : {1, 4}) ways.push_back({d, i, pieces});
  std::printf("# %d GPUs, all at once; nccl-tests all_gather sizes (GPUs x block); %d iterations after 2 warm-up\n",
              n, iterations);
  std::printf("# %12s  %-34s %10s %10s %10s  %s\n", "size (B)", "way", "time (us)", "algbw", "busbw", "check");
  for (size_t block : blocks)
    for (const Way& way : ways) {
      enqueue(gpus, block, way);
      synchronize(gpus);
      const bool ok = gathered(gpus, block);
      for (int w = 0; w < 2; ++w) enqueue(gpus, block, way);
      synchronize(gpus);
      const auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < iterations; ++it) enqueue(gpus, block, way);
      synchronize(gpus);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iterations;
      const double algbw = n * block / seconds / 1e9;
      std::printf("  %12zu  %-34s %10.1f %10.1f %10.1f  %s\n", n * block, way.name().c_str(), seconds * 1e6, algbw,
                  algbw * (n - 1) / n, ok ? "ok" : "WRONG");
    }
  return 0;
}
