// braid's NVLink path end to end across processes (label gpu, one GPU): two fork()ed processes on
// GPU 0 (BRAID_PEER_SAME_GPU=1) make a braid communicator, agree that fds can pass between them,
// and run AllGather (pulled, pushed, batched; in and out of place) and AllReduce through
// PeerPath::run on buffers from cuMemCreate (shared by fd) and from cudaMalloc (CUDA IPC); every
// element is checked.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "api/comm.h"
#include "braid/braid.h"
#include "common/settings.h"
#include "common/types.h"
#include "gpu_test_support.h"
#include "peer/peer_path.h"

namespace braid::peer {
namespace {

constexpr int kRanks = 2;
constexpr size_t kCount = (size_t{1} << 20) + 37;  // floats per rank's block: parts end off alignment

float value(int rank, size_t i) { return static_cast<float>(i % 1024) + 2048.0f * static_cast<float>(rank); }

// A rank's send buffer (kCount floats) and receive buffer (kCount per rank), from cuMemCreate
// with the POSIX fd handle type, or from cudaMalloc.
struct Buffers {
  bool cumem = false;
  CuMemBuffer cumem_send, cumem_recv;
  void* malloc_send = nullptr;
  void* malloc_recv = nullptr;
  float* send = nullptr;
  float* recv = nullptr;

  bool allocate(bool from_cumem) {
    cumem = from_cumem;
    const size_t send_bytes = kCount * sizeof(float), recv_bytes = kRanks * send_bytes;
    if (cumem) {
      if (!cumem_send.allocate(send_bytes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
          !cumem_recv.allocate(recv_bytes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        return false;
      send = reinterpret_cast<float*>(cumem_send.ptr);
      recv = reinterpret_cast<float*>(cumem_recv.ptr);
      return true;
    }
    if (cudaMalloc(&malloc_send, send_bytes) != cudaSuccess || cudaMalloc(&malloc_recv, recv_bytes) != cudaSuccess)
      return false;
    send = static_cast<float*>(malloc_send);
    recv = static_cast<float*>(malloc_recv);
    return true;
  }
  void free() {
    if (cumem) {
      cumem_send.free();
      cumem_recv.free();
    } else {
      cudaFree(malloc_send);
      cudaFree(malloc_recv);
    }
  }
};

// On the collective's own stream: the path's streams do not wait for the legacy default stream
// (cudaStreamNonBlocking), and a peer reads this rank's input once this stream raised `ready`.
// In place (AllGather), the input is this rank's block of the output.
int fill_send(float* send, const Buffers& b, int rank, cudaStream_t stream) {
  std::vector<float> mine(kCount);
  for (size_t i = 0; i < kCount; ++i) mine[i] = value(rank, i);
  CHECK(cudaMemsetAsync(b.recv, 0, kRanks * kCount * sizeof(float), stream) == cudaSuccess);
  CHECK(cudaMemcpyAsync(send, mine.data(), kCount * sizeof(float), cudaMemcpyHostToDevice, stream) == cudaSuccess);
  CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
  return 0;
}

// The first element that differs, said where.
int first_difference(const std::vector<float>& got, const std::vector<float>& expected) {
  for (size_t i = 0; i < expected.size(); ++i)
    if (got[i] != expected[i]) {
      std::fprintf(stderr, "element %zu of %zu: %g, expected %g\n", i, expected.size(), got[i], expected[i]);
      return 1;
    }
  return 0;
}

// One collective through the path on buffers of one kind; the path must carry it (every rank's
// buffers shared), and the result must be exact: new buffers' mappings are opened by the call.
int run_and_check(PeerPath& path, Collective c, const Buffers& b, int rank, cudaStream_t stream,
                  bool in_place = false) {
  float* send = in_place ? b.recv + static_cast<size_t>(rank) * kCount : b.send;
  CHECK(fill_send(send, b, rank, stream) == 0);
  PeerPath::Outcome outcome = PeerPath::Outcome::Unshareable;
  PeerPath::Publication mine;
  path.publish(c, send, b.recv, kCount, DataType::Float32, kCount, &mine);
  CHECK(path.run(c, send, b.recv, kCount, DataType::Float32, RedOp::Sum, kCount, mine, stream, &outcome) ==
        Result::Success);
  CHECK(outcome == PeerPath::Outcome::Carried);
  CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
  const size_t blocks = c == Collective::AllGather ? kRanks : 1;
  std::vector<float> got(blocks * kCount), expected(blocks * kCount, 0.0f);
  CHECK(cudaMemcpy(got.data(), b.recv, got.size() * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (size_t i = 0; i < kCount; ++i)
    for (int q = 0; q < kRanks; ++q) {
      if (c == Collective::AllGather) expected[q * kCount + i] = value(q, i);
      else expected[i] += value(q, i);
    }
  CHECK(first_difference(got, expected) == 0);
  return 0;
}

int run_rank(const braidUniqueId& id, int rank) {
  setenv("BRAID_PEER_SAME_GPU", "1", 1);
  settings_reload();
  braidComm_t comm = nullptr;
  CHECK(braidCommInitRank(&comm, kRanks, id, rank) == ncclSuccess);
  Peers peers;
  CHECK(find_peers(comm, &peers) == Result::Success);
  CHECK(peers.reachable && peers.any_ipc && peers.fd_passing);
  std::unique_ptr<PeerPath> path;
  CHECK(PeerPath::create(comm, &path) == Result::Success);
  cudaStream_t stream = nullptr;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  // Each way of moving AllGather's blocks (BRAID_NVLINK_GATHER), and ranks that disagree (which
  // then pull).
  uint64_t pushed = 0;
  for (const char* gather : {"pull", "push", "push-batch", "mixed"}) {
    const bool mixed = std::string(gather) == "mixed";
    setenv("BRAID_NVLINK_GATHER", mixed ? (rank == 0 ? "push" : "pull") : gather, 1);
    settings_reload();
    for (bool cumem : {true, false}) {
      Buffers b;
      CHECK(b.allocate(cumem));
      // Three times each: the second call finds the peers' mappings in its cache and is captured
      // into a graph of the path's own (the same buffers and call bit), the third is launched from
      // it (batched AllGathers are not).
      for (int round = 0; round < 3; ++round) {
        for (bool in_place : {false, true})
          if (run_and_check(*path, Collective::AllGather, b, rank, stream, in_place) != 0) {
            std::fprintf(stderr, "AllGather, %s, %s buffers, %s\n", gather, cumem ? "cuMem" : "cudaMalloc",
                         in_place ? "in place" : "out of place");
            return 1;
          }
        CHECK(run_and_check(*path, Collective::AllReduce, b, rank, stream) == 0);
      }
      b.free();
    }
    // Pushed only where every rank asked to.
    const bool pushes = !mixed && std::string(gather) != "pull";
    if ((path->gathers_pushed() > pushed) != pushes) {
      std::fprintf(stderr, "%s: %llu AllGathers pushed so far\n", gather,
                   static_cast<unsigned long long>(path->gathers_pushed()));
      return 1;
    }
    pushed = path->gathers_pushed();
  }
  CHECK(cudaStreamDestroy(stream) == cudaSuccess);
  path.reset();
  CHECK(braidCommDestroy(comm) == ncclSuccess);
  return 0;
}

TEST(PeerPathCuMemGpu, AllGatherAndAllReduceOnCuMemAndCudaMallocBuffersOfAnotherProcess) {
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), ncclSuccess);
  std::vector<std::function<int()>> ranks;
  for (int r = 0; r < kRanks; ++r) ranks.push_back([&id, r] { return run_rank(id, r); });
  run_in_processes(ranks);
}

}  // namespace
}  // namespace braid::peer
