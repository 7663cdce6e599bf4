// Ranks that pass buffers of different kinds to one collective, through the drop-in; run by hand
// (mpiexec -n N, as the argument fuzz: docs/SHIM.md), not by ctest.
//
// NCCL runs a collective whose buffers are pinned host memory on one rank and device memory on
// another. braid checks each rank's buffers alone, so such a call used to be split on the ranks
// with device buffers and handed whole to NCCL on the others, and the ranks hung. Now the rank
// with buffers braid's path cannot take stages them (src/shim/staged_call.h). Here the ranks in
// BRAID_MIXED_HOST_RANKS (default "0") pass pinned, mapped host memory and the others device
// memory; every collective braid splits, out of place and in place, rooted ones at every root,
// BRAID_MIXED_ROUNDS times (default 3), each result checked exactly against values computed here.
// Counts are BRAID_MIXED_MIB MiB of floats per rank (default 64): sizes braid splits. Exit 0:
// every result exact; 1: a wrong element; 2: an error.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "unique_id_file.h"

namespace {

int g_rank = 0;
int g_size = 1;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "mixed buffers: rank %d: %s\n", g_rank, what.c_str());
  std::exit(2);
}

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}

void nccl_ok(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) die(std::string(what) + ": " + ncclGetErrorString(r) + " (" + ncclGetLastError(nullptr) + ")");
}

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

// Small integers: every sum of them is exact in float.
float value_of(int rank, size_t i, int round) { return static_cast<float>((rank + 1) * 3 + static_cast<int>((i + round) % 29)); }

enum class Kind { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce };
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::AllReduce: return "all_reduce";
    case Kind::AllGather: return "all_gather";
    case Kind::ReduceScatter: return "reduce_scatter";
    case Kind::Broadcast: return "broadcast";
    default: return "reduce";
  }
}

struct Buffers {
  float* send = nullptr;  // the whole message where the collective reads one (ReduceScatter)
  float* recv = nullptr;
  bool host = false;
};

Buffers allocate(size_t elements, bool host) {
  Buffers b;
  b.host = host;
  const size_t bytes = elements * sizeof(float);
  if (host) {
    cuda_ok(cudaHostAlloc(reinterpret_cast<void**>(&b.send), bytes, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc");
    cuda_ok(cudaHostAlloc(reinterpret_cast<void**>(&b.recv), bytes, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc");
  } else {
    cuda_ok(cudaMalloc(&b.send, bytes), "cudaMalloc");
    cuda_ok(cudaMalloc(&b.recv, bytes), "cudaMalloc");
  }
  return b;
}

// One case: returns the number of wrong elements at this rank.
size_t run_case(ncclComm_t comm, cudaStream_t stream, const Buffers& b, Kind kind, bool in_place, int root,
                size_t count, int round) {
  const int n = g_size;
  const size_t send_elements = kind == Kind::ReduceScatter ? count * n : count;
  const size_t recv_elements = kind == Kind::AllGather ? count * n : count;
  // In place as NCCL defines it: the send buffer is the receive buffer, AllGather's this rank's
  // block of it, and ReduceScatter's receive buffer this rank's block of its send buffer.
  float* send = b.send;
  float* recv = b.recv;
  if (in_place) {
    send = kind == Kind::AllGather ? b.recv + static_cast<size_t>(g_rank) * count : b.recv;
    if (kind == Kind::ReduceScatter) recv = b.recv + static_cast<size_t>(g_rank) * count;
  }
  // First the whole region poisoned with a value no result has (an earlier case's result there
  // would hide a call that wrote nothing), then the send data.
  std::vector<float> host(std::max(send_elements, recv_elements), -1.0f);
  cuda_ok(cudaMemcpy(b.recv, host.data(), host.size() * sizeof(float), cudaMemcpyDefault), "cudaMemcpy poison");
  for (size_t i = 0; i < send_elements; ++i) host[i] = value_of(g_rank, i, round);
  cuda_ok(cudaMemcpy(send, host.data(), send_elements * sizeof(float), cudaMemcpyDefault), "cudaMemcpy in");
  switch (kind) {
    case Kind::AllReduce: nccl_ok(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce"); break;
    case Kind::AllGather: nccl_ok(ncclAllGather(send, recv, count, ncclFloat32, comm, stream), "ncclAllGather"); break;
    case Kind::ReduceScatter:
      nccl_ok(ncclReduceScatter(send, recv, count, ncclFloat32, ncclSum, comm, stream), "ncclReduceScatter");
      break;
    case Kind::Broadcast: nccl_ok(ncclBroadcast(send, recv, count, ncclFloat32, root, comm, stream), "ncclBroadcast"); break;
    case Kind::Reduce: nccl_ok(ncclReduce(send, recv, count, ncclFloat32, ncclSum, root, comm, stream), "ncclReduce"); break;
  }
  cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (kind == Kind::Reduce && g_rank != root) return 0;
  std::vector<float> got(recv_elements);
  cuda_ok(cudaMemcpy(got.data(), recv, recv_elements * sizeof(float), cudaMemcpyDefault), "cudaMemcpy out");
  size_t wrong = 0;
  for (size_t i = 0; i < recv_elements; ++i) {
    float want = 0;
    switch (kind) {
      case Kind::AllReduce:
      case Kind::Reduce:
        for (int r = 0; r < n; ++r) want += value_of(r, i, round);
        break;
      case Kind::AllGather: want = value_of(static_cast<int>(i / count), i % count, round); break;
      case Kind::ReduceScatter:
        for (int r = 0; r < n; ++r) want += value_of(r, static_cast<size_t>(g_rank) * count + i, round);
        break;
      case Kind::Broadcast: want = value_of(root, i, round); break;
    }
    if (got[i] != want && wrong++ < 3)
      std::fprintf(stderr, "mixed buffers: rank %d: %s element %zu is %g, not %g\n", g_rank, kind_name(kind), i,
                   static_cast<double>(got[i]), static_cast<double>(want));
  }
  return wrong;
}

}  // namespace

int main() {
  g_rank = env_int("PMI_RANK", 0);
  g_size = env_int("PMI_SIZE", 1);
  if (g_size < 2 || g_rank < 0 || g_rank >= g_size) die("needs 2 or more ranks (mpiexec -n N)");
  std::set<int> host_ranks;
  {
    std::istringstream list(std::getenv("BRAID_MIXED_HOST_RANKS") ? std::getenv("BRAID_MIXED_HOST_RANKS") : "0");
    for (std::string item; std::getline(list, item, ',');)
      if (!item.empty()) host_ranks.insert(std::atoi(item.c_str()));
  }
  const size_t count = static_cast<size_t>(env_int("BRAID_MIXED_MIB", 64)) << 18;  // floats per rank
  const int rounds = env_int("BRAID_MIXED_ROUNDS", 3);
  int devices = 0;
  cuda_ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  cuda_ok(cudaSetDevice(g_rank % devices), "cudaSetDevice");
  ncclUniqueId id;
  const std::string error = braid::shimtest::exchange_unique_id(g_rank, g_size, std::getenv("BRAID_MIXED_ID_FILE"), &id);
  if (!error.empty()) die(error + " (BRAID_MIXED_ID_FILE: a fresh path all ranks can read)");
  ncclComm_t comm = nullptr;
  nccl_ok(ncclCommInitRank(&comm, g_size, id, g_rank), "ncclCommInitRank");
  cudaStream_t stream = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const size_t elements = count * static_cast<size_t>(g_size);
  const Buffers device = allocate(elements, false);
  const Buffers mine = allocate(elements, host_ranks.count(g_rank) != 0);
  // The first large call makes braid's path on every rank: device buffers everywhere, as a
  // training step's first all-reduce would have.
  size_t wrong = run_case(comm, stream, device, Kind::AllReduce, false, 0, count, 0);
  size_t cases = 1;
  for (int round = 1; round <= rounds; ++round) {
    for (Kind kind : {Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter, Kind::Broadcast, Kind::Reduce}) {
      const bool rooted = kind == Kind::Broadcast || kind == Kind::Reduce;
      for (int root = 0; root < (rooted ? g_size : 1); ++root) {
        for (bool in_place : {false, true}) {
          wrong += run_case(comm, stream, mine, kind, in_place, root, count, round);
          ++cases;
        }
      }
    }
  }
  std::printf("mixed buffers: rank %d (%s buffers): %zu calls of %zu floats per rank, %zu wrong elements\n", g_rank,
              mine.host ? "pinned host" : "device", cases, count, wrong);
  nccl_ok(ncclCommDestroy(comm), "ncclCommDestroy");
  return wrong == 0 ? 0 : 1;
}
