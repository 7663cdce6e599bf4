// One thread driving every GPU, as nccl-tests does: ncclCommInitAll, then each collective issued
// for every communicator inside one group. With BRAID_SPLIT_GROUPS=1 braid holds such a group's
// collectives and splits each communicator's on a thread of its own after the group ends; a
// group that also holds send/recv goes to NCCL alone. Results are checked exactly (small
// integers in float32 and int32, so every sum is exact), and the split trace must show calls
// that used both paths.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::string g_trace;

// Rank r's input element i: small, so sums over 8 ranks stay exact in float32.
float input(int rank, size_t i) { return static_cast<float>((rank + 1) * (1 + static_cast<int>(i % 13))); }

enum class Kind { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce };
const char* name(Kind k) {
  switch (k) {
    case Kind::AllReduce: return "allreduce";
    case Kind::AllGather: return "allgather";
    case Kind::ReduceScatter: return "reducescatter";
    case Kind::Broadcast: return "broadcast";
    case Kind::Reduce: return "reduce";
  }
  return "?";
}

class SingleThreadGroups : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cudaGetDeviceCount(&ranks_) != cudaSuccess) ranks_ = 0;
    if (ranks_ < 2) GTEST_SKIP() << "needs 2 or more GPUs (" << ranks_ << " visible)";
    comms_.resize(ranks_);
    ASSERT_EQ(ncclCommInitAll(comms_.data(), ranks_, nullptr), ncclSuccess);
    streams_.resize(ranks_);
    for (int r = 0; r < ranks_; ++r) {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      ASSERT_EQ(cudaStreamCreate(&streams_[r]), cudaSuccess);
    }
  }
  void TearDown() override {
    for (int r = 0; r < static_cast<int>(comms_.size()); ++r) {
      if (comms_[r] != nullptr) ncclCommDestroy(comms_[r]);
      if (r < static_cast<int>(streams_.size()) && streams_[r] != nullptr) cudaStreamDestroy(streams_[r]);
    }
  }

  // Runs `kind` on `count` floats per rank in one group over every communicator (with a
  // send/recv ring added to the group when `with_p2p`), and checks every rank's output.
  void run_and_check(Kind kind, size_t count, bool with_p2p) {
    const int n = ranks_, root = n - 1;
    const size_t in_count = kind == Kind::ReduceScatter ? count * n : count;
    const size_t out_count = kind == Kind::AllGather ? count * n : count;
    std::vector<float*> in(n), out(n), ring_in(n), ring_out(n);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      std::vector<float> host(in_count);
      for (size_t i = 0; i < in_count; ++i) host[i] = input(r, i);
      ASSERT_EQ(cudaMalloc(&in[r], std::max<size_t>(1, in_count) * sizeof(float)), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&out[r], std::max<size_t>(1, out_count) * sizeof(float)), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(in[r], host.data(), in_count * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemset(out[r], 0xff, out_count * sizeof(float)), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&ring_in[r], 1024 * sizeof(int)), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&ring_out[r], 1024 * sizeof(int)), cudaSuccess);
      ASSERT_EQ(cudaMemset(ring_in[r], r + 1, 1024 * sizeof(int)), cudaSuccess);
    }
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < n; ++r) {
      ncclResult_t res = ncclSuccess;
      switch (kind) {
        case Kind::AllReduce: res = ncclAllReduce(in[r], out[r], count, ncclFloat32, ncclSum, comms_[r], streams_[r]); break;
        case Kind::AllGather: res = ncclAllGather(in[r], out[r], count, ncclFloat32, comms_[r], streams_[r]); break;
        case Kind::ReduceScatter: res = ncclReduceScatter(in[r], out[r], count, ncclFloat32, ncclSum, comms_[r], streams_[r]); break;
        case Kind::Broadcast: res = ncclBroadcast(in[r], out[r], count, ncclFloat32, root, comms_[r], streams_[r]); break;
        case Kind::Reduce: res = ncclReduce(in[r], out[r], count, ncclFloat32, ncclSum, root, comms_[r], streams_[r]); break;
      }
      ASSERT_EQ(res, ncclSuccess) << name(kind) << " rank " << r;
      if (with_p2p) {
        ASSERT_EQ(ncclSend(ring_in[r], 1024, ncclInt32, (r + 1) % n, comms_[r], streams_[r]), ncclSuccess);
        ASSERT_EQ(ncclRecv(ring_out[r], 1024, ncclInt32, (r + n - 1) % n, comms_[r], streams_[r]), ncclSuccess);
      }
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << name(kind);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(streams_[r]), cudaSuccess);
    }
    const float rank_sum = static_cast<float>(n * (n + 1) / 2);
    for (int r = 0; r < n; ++r) {
      std::vector<float> got(out_count);
      ASSERT_EQ(cudaMemcpy(got.data(), out[r], out_count * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
      size_t wrong = 0, first = out_count;
      for (size_t i = 0; i < out_count; ++i) {
        float want = 0;
        switch (kind) {
          case Kind::AllReduce: want = rank_sum * (1 + static_cast<int>(i % 13)); break;
          case Kind::AllGather: want = input(static_cast<int>(i / count), i % count); break;
          case Kind::ReduceScatter: want = rank_sum * (1 + static_cast<int>((r * count + i) % 13)); break;
          case Kind::Broadcast: want = input(root, i); break;
          case Kind::Reduce:
            if (r != root) continue;
            want = rank_sum * (1 + static_cast<int>(i % 13));
            break;
        }
        if (got[i] != want && wrong++ == 0) first = i;
      }
      EXPECT_EQ(wrong, 0u) << name(kind) << " count " << count << (with_p2p ? " with send/recv" : "") << ": rank " << r
                           << " first wrong element " << first;
      if (with_p2p) {
        std::vector<int> ring(1024);
        ASSERT_EQ(cudaMemcpy(ring.data(), ring_out[r], 1024 * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
        const int from = (r + n - 1) % n + 1;
        const int want = from | from << 8 | from << 16 | from << 24;  // cudaMemset's bytes
        EXPECT_EQ(ring[0], want) << "rank " << r;
        EXPECT_EQ(ring[1023], want) << "rank " << r;
      }
    }
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(r);
      cudaFree(in[r]);
      cudaFree(out[r]);
      cudaFree(ring_in[r]);
      cudaFree(ring_out[r]);
    }
  }

  int ranks_ = 0;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
};

TEST_F(SingleThreadGroups, EveryCollectiveSplitsAndIsExact) {
  for (Kind k : {Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter, Kind::Broadcast, Kind::Reduce})
    for (size_t count : {size_t{7}, size_t{100003}, size_t{1000003}})
      for (int repeat = 0; repeat < 2; ++repeat) run_and_check(k, count, false);
  // A call is traced when it settles, at the next split call (BRAID_SPLIT_SETTLE_LAG): one more
  // settles the last of the 30 above.
  run_and_check(Kind::AllReduce, 7, false);
  std::ifstream trace(g_trace);
  std::string line;
  int both = 0, lines = 0;
  while (std::getline(trace, line)) {
    if (line.find("\"declined\"") != std::string::npos) continue;  // a call given to NCCL alone
    ++lines;
    both += line.find("\"pcie_elements\": 0,") == std::string::npos &&
            line.find("\"nccl_elements\": 0,") == std::string::npos;
  }
  EXPECT_GE(lines, 30) << g_trace;
  EXPECT_GE(both, 20) << "calls that used both paths, of " << lines << " traced (" << g_trace << ")";
}

TEST_F(SingleThreadGroups, GroupsWithSendRecvGoToNcclAloneAndAreExact) {
  for (Kind k : {Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter})
    run_and_check(k, 1000003, true);
}

}  // namespace

int main(int argc, char** argv) {
  // Before braid reads its settings (at the first NCCL call).
  g_trace = "/tmp/braid_group_trace_" + std::to_string(getpid()) + ".jsonl";
  setenv("BRAID_SPLIT_GROUPS", "1", 1);
  setenv("BRAID_BALANCER", "static", 1);
  setenv("BRAID_STATIC_SHARE", "0.5", 1);
  setenv("BRAID_SPLIT_MIN_BYTES", "1", 1);
  // The trace gets a call when its times are applied, BRAID_SPLIT_SETTLE_LAG calls later: at the next.
  setenv("BRAID_SPLIT_SETTLE_LAG", "1", 1);
  setenv("BRAID_SPLIT_TRACE", g_trace.c_str(), 1);
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  unlink(g_trace.c_str());
  return result;
}
