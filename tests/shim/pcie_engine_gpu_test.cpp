// braid's PCIe share is paid for at its first call with PCIe elements, not before (issue 41: a
// 1000-call mixed run at 2 GPUs pinned 2 GiB for a share the balancer never used). An NCCL program
// through libbraid.so, a process per rank, PCIe shares admitted (BRAID_SPLIT_MIN_BYTES): with
// HyLink's balancer, which starts every size at NVLink alone, no call in the settle lag gets a PCIe
// element, so braid makes no progress thread and no reduction workers; with a static share
// (BRAID_PCIE_ENGINE_EXPECTED=1, set by its ctest entry with BRAID_BALANCER=static) the first call
// makes both. The results are checked either way. With fewer GPUs than ranks the ranks share GPUs,
// each posing as its own host to NCCL (the one-GPU rig's shape), so one GPU runs it too.
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <dirent.h>
#include <nccl.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/forked_ranks.h"
#include "support/visible_gpus.h"

namespace {

using braid::test::visible_gpus;

// Threads of this process whose name starts with `prefix` (braid names its own).
int threads_named(const std::string& prefix) {
  int n = 0;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    n += name.rfind(prefix, 0) == 0 ? 1 : 0;
  }
  closedir(dir);
  return n;
}

constexpr size_t kCount = size_t{16} << 20;  // 64 MB of float per call
constexpr int kCalls = 12;

// Rank r all-reduces r + 1 in every element, kCalls times in place from a fresh input each time:
// every result is ranks * (ranks + 1) / 2.
std::string run_calls(ncclComm_t comm, int rank, int ranks, float* buffer) {
  std::vector<float> host(kCount);
  for (int i = 0; i < kCalls; ++i) {
    std::fill(host.begin(), host.end(), static_cast<float>(rank + 1));
    if (cudaMemcpy(buffer, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
      return "cudaMemcpy failed";
    if (ncclAllReduce(buffer, buffer, kCount, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess)
      return std::string("ncclAllReduce: ") + ncclGetLastError(comm);
  }
  if (cudaMemcpy(host.data(), buffer, kCount * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
    return "cudaMemcpy back failed";
  const float want = static_cast<float>(ranks * (ranks + 1) / 2);
  for (size_t i = 0; i < kCount; ++i)
    if (host[i] != want) return "element " + std::to_string(i) + " is " + std::to_string(host[i]);
  return "";
}

constexpr int kRanks = 2;
constexpr int kSkipped = 77;  // a rank's exit status: no GPU here

// Writes or reads the whole of `n` bytes; false on a short transfer.
bool write_all(int fd, const void* bytes, size_t n) { return write(fd, bytes, n) == static_cast<ssize_t>(n); }
bool read_all(int fd, void* bytes, size_t n) { return read(fd, bytes, n) == static_cast<ssize_t>(n); }

// One rank, in a process of its own: its exit status is 0 when its results were exact and braid
// made (or did not make) the PCIe engine's threads as expected. Rank 0 hands the ncclUniqueId on
// through `id_pipe`.
int run_rank(int rank, const int id_pipe[2], bool engine) {
  // Each end kept by the side that uses it, so that a rank 0 gone early ends the others' read.
  close(rank == 0 ? id_pipe[0] : id_pipe[1]);
  const int gpus = visible_gpus();
  if (gpus == 0) return kSkipped;
  if (gpus < kRanks) setenv("NCCL_HOSTID", ("pcie-engine-test-" + std::to_string(rank)).c_str(), 1);
  if (cudaSetDevice(rank % gpus) != cudaSuccess) return 2;
  ncclUniqueId id{};
  if (rank == 0) {
    if (ncclGetUniqueId(&id) != ncclSuccess) return 3;
    for (int r = 1; r < kRanks; ++r)
      if (!write_all(id_pipe[1], &id, sizeof id)) return 3;
  } else if (!read_all(id_pipe[0], &id, sizeof id)) {
    return 3;
  }
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, kRanks, id, rank) != ncclSuccess) {
    std::fprintf(stderr, "rank %d: ncclCommInitRank failed\n", rank);
    return 4;
  }
  float* buffer = nullptr;
  if (cudaMalloc(&buffer, kCount * sizeof(float)) != cudaSuccess) return 5;
  const std::string error = run_calls(comm, rank, kRanks, buffer);
  // Counted while the communicator lives: this process holds one rank.
  const int lanes = threads_named("braid-lane");
  const int workers = threads_named("braid-reduce");
  if (error.empty()) ncclCommDestroy(comm);
  else ncclCommAbort(comm);
  cudaFree(buffer);
  std::fprintf(stderr, "rank %d: progress threads %d, reduction workers %d, %s\n", rank, lanes, workers,
               error.empty() ? "exact" : error.c_str());
  if (!error.empty()) return 6;
  if (engine && (lanes != 1 || workers == 0)) {
    std::fprintf(stderr, "rank %d: a static PCIe share should make one progress thread and reduction workers\n", rank);
    return 7;
  }
  if (!engine && (lanes != 0 || workers != 0)) {
    std::fprintf(stderr, "rank %d: calls with no PCIe element should make no progress thread or workers\n", rank);
    return 8;
  }
  return 0;
}

TEST(PcieEngine, IsMadeAtTheFirstCallWithPcieElementsAndNotBefore) {
  const char* expected = std::getenv("BRAID_PCIE_ENGINE_EXPECTED");
  const bool engine = expected != nullptr && std::string(expected) == "1";
  int id_pipe[2];
  ASSERT_EQ(pipe(id_pipe), 0);
  // The ranks are forked before this process touches CUDA, so each starts CUDA afresh; one that
  // hangs is killed and reported.
  std::vector<std::function<int()>> ranks;
  for (int r = 0; r < kRanks; ++r) ranks.push_back([&, r] { return run_rank(r, id_pipe, engine); });
  const std::vector<braid::test::RankExit> exits = braid::test::run_forked(ranks, std::chrono::seconds(120), [&] {
    close(id_pipe[0]);
    close(id_pipe[1]);
  });
  std::vector<int> statuses;
  for (const auto& e : exits) {
    ASSERT_TRUE(e.forked && !e.killed) << e.what();
    statuses.push_back(e.code);
  }
  if (statuses[0] == kSkipped) GTEST_SKIP() << "no GPU";
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(statuses[r], 0) << "rank " << r << " (its stderr says why)";
}

}  // namespace

int main(int argc, char** argv) {
  // Before braid reads its settings (at the first NCCL call): PCIe shares admitted from 1 MiB.
  setenv("BRAID_SPLIT_MIN_BYTES", "1M", 0);
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
