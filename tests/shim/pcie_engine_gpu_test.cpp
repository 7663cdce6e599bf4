// braid's PCIe share is paid for at its first call with PCIe elements, not before (issue 41: a
// 1000-call mixed run at 2 GPUs pinned 2 GiB for a share the balancer never used). An NCCL program
// through libbraid.so, a thread per GPU, PCIe shares admitted (BRAID_SPLIT_MIN_BYTES): with HyLink's
// balancer, which starts every size at NVLink alone, no call in the settle lag gets a PCIe
// element, so braid makes no progress thread and no reduction workers; with a static share
// (BRAID_PCIE_ENGINE_EXPECTED=1, set by its ctest entry with BRAID_BALANCER=static) the first call
// makes both. The results are checked either way.
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <dirent.h>
#include <nccl.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

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

TEST(PcieEngine, IsMadeAtTheFirstCallWithPcieElementsAndNotBefore) {
  const int ranks = std::min(visible_gpus(), 2);
  if (ranks < 2) GTEST_SKIP() << "needs 2 GPUs";
  const char* expected = std::getenv("BRAID_PCIE_ENGINE_EXPECTED");
  const bool engine = expected != nullptr && std::string(expected) == "1";
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(ranks);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    ASSERT_EQ(ncclCommInitRank(&comms[r], ranks, id, r), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  std::vector<float*> buffers(ranks, nullptr);
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&buffers[r], kCount * sizeof(float)), cudaSuccess);
  }
  std::vector<std::string> errors(ranks);
  {
    // A thread per rank: a split call waits for every rank's host.
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        cudaSetDevice(r);
        errors[r] = run_calls(comms[r], r, ranks, buffers[r]);
      });
    for (auto& t : threads) t.join();
  }
  // Counted while the communicators live.
  const int lanes = threads_named("braid-lane");
  const int workers = threads_named("braid-reduce");
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    if (errors[r].empty()) ncclCommDestroy(comms[r]);
    else ncclCommAbort(comms[r]);
    cudaSetDevice(r);
    cudaFree(buffers[r]);
  }
  if (engine) {
    EXPECT_EQ(lanes, ranks) << "a static PCIe share made no progress thread";
    EXPECT_GT(workers, 0) << "a static PCIe share made no reduction workers";
  } else {
    EXPECT_EQ(lanes, 0) << "a progress thread was made for calls with no PCIe element";
    EXPECT_EQ(workers, 0) << "reduction workers were made for calls with no PCIe element";
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Before braid reads its settings (at the first NCCL call): PCIe shares admitted from 1 MiB.
  setenv("BRAID_SPLIT_MIN_BYTES", "1M", 0);
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
