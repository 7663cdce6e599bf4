// The correctness matrix through the drop-in with collectives split across NCCL and braid's PCIe
// path: an NCCL program (this test calls nccl* and links libbraid.so, so every call goes through
// braid) with one thread per GPU. A static split of one half and no size threshold make every
// collective of more than a few KiB carry data on both paths; results are checked against the
// reference and for bitwise identity across ranks, and the split trace must show both paths used.
// (Run 5 on 2x H200: every case before the AllToAll ones passed; NCCL hung in an in-place AllToAll.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

#include "api_case.h"
#include "support/visible_gpus.h"

namespace braid::apitest {
namespace {

using test::visible_gpus;

std::string g_trace;

struct Outcome {
  std::string error;
  std::vector<uint64_t> hashes;
};

Outcome run_rank(const ncclUniqueId& id, int rank, int ranks, const std::vector<Case>& cases) {
  Outcome out;
  out.hashes.assign(cases.size(), 0);
  if (cudaSetDevice(rank) != cudaSuccess) {
    out.error = "cudaSetDevice failed";
    return out;
  }
  ncclComm_t comm = nullptr;
  const ncclResult_t init = ncclCommInitRank(&comm, ranks, id, rank);
  if (init != ncclSuccess) {
    out.error = std::string("ncclCommInitRank: ") + ncclGetErrorString(init);
    return out;
  }
  size_t largest = 0;
  for (const auto& k : cases) largest = std::max(largest, k.count);
  {
    BasicRankRunner<ncclComm_t> runner(comm, rank, ranks, largest, nccl_collectives());
    if (!runner.ok()) out.error = "rank setup failed";
    const bool progress = std::getenv("BRAID_TEST_PROGRESS") != nullptr;
    for (size_t i = 0; i < cases.size() && out.error.empty(); ++i) {
      if (progress) std::fprintf(stderr, "rank %d case %zu: %s\n", rank, i, cases[i].text().c_str());
      out.error = runner.run(cases[i], &out.hashes[i]);
    }
  }
  if (!out.error.empty()) ncclCommAbort(comm);
  else ncclCommDestroy(comm);
  return out;
}

TEST(ShimMultipath, MatrixSplitAcrossNcclAndPcie) {
  const int ranks = visible_gpus();
  if (ranks < 2) GTEST_SKIP() << "needs 2 or more GPUs (" << ranks << " visible)";
  // AllToAll is not split (the drop-in hands it to NCCL whole), and NCCL itself does not finish
  // an in-place AllToAll: it is left out.
  std::vector<Case> cases;
  for (const Case& k : full_matrix(ranks, {0, 7, 100003, 1000003}))
    if (k.collective != Collective::AllToAll) cases.push_back(k);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<Outcome> outcomes(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { outcomes[r] = run_rank(id, r, ranks, cases); });
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) ASSERT_EQ(outcomes[r].error, "") << "rank " << r;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!outputs_identical(cases[i]) || cases[i].count == 0) continue;
    for (int r = 1; r < ranks; ++r)
      EXPECT_EQ(outcomes[r].hashes[i], outcomes[0].hashes[i]) << cases[i].text() << ": rank " << r << " differs";
  }
  // The trace proves the calls were split, not passed to NCCL whole.
  std::ifstream trace(g_trace);
  std::string line;
  int both = 0, lines = 0, timed = 0;
  while (std::getline(trace, line)) {
    if (line.find("\"declined\"") != std::string::npos) continue;  // a call given to NCCL alone
    ++lines;
    const bool pcie = line.find("\"pcie_elements\": 0,") == std::string::npos;
    const bool nccl = line.find("\"nccl_elements\": 0,") == std::string::npos;
    both += pcie && nccl;
    // Measured on every rank: each timed the fork, by its progress thread before the GPU passed
    // it or else by its calling thread.
    timed += line.find("\"timed\": true") != std::string::npos &&
             line.find("\"pcie_ms\": 0.0000,") == std::string::npos;
  }
  EXPECT_GT(lines, 100) << g_trace;
  EXPECT_GT(both, 100) << "calls that used both paths, of " << lines;
  EXPECT_GT(timed, 0) << "calls whose per-path times the table learned, of " << lines;
}

// Calls captured in a CUDA graph ride braid's NVLink path whole (AllGather from
// BRAID_NVLINK_COPY_MIN_BYTES, AllReduce from BRAID_NVLINK_ALLREDUCE_MIN_BYTES): each replay
// must meet the peers again on the GPU and give exact results with that replay's inputs, also
// with calls outside the graph between replays.
std::string run_captured_rank(const ncclUniqueId& id, int rank, int ranks) {
  constexpr size_t kGather = size_t{8} << 20, kReduce = size_t{40} << 20;  // floats: 32 MiB, 160 MiB
  constexpr int kReplays = 4;
  if (cudaSetDevice(rank) != cudaSuccess) return "cudaSetDevice failed";
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, ranks, id, rank) != ncclSuccess) return "ncclCommInitRank failed";
  std::string error;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok && error.empty()) error = what;
    return ok;
  };
  cudaStream_t stream = nullptr;
  float *gather_in = nullptr, *gather_out = nullptr, *reduce_in = nullptr, *reduce_out = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "cudaStreamCreate");
  check(cudaMalloc(&gather_in, kGather * sizeof(float)) == cudaSuccess, "cudaMalloc");
  check(cudaMalloc(&gather_out, kGather * ranks * sizeof(float)) == cudaSuccess, "cudaMalloc");
  check(cudaMalloc(&reduce_in, kReduce * sizeof(float)) == cudaSuccess, "cudaMalloc");
  check(cudaMalloc(&reduce_out, kReduce * sizeof(float)) == cudaSuccess, "cudaMalloc");
  // Small integers: every sum is exact in float, whatever the order.
  auto value = [](int r, int replay, size_t i) { return static_cast<float>((r + 1) * (replay + 2) + static_cast<int>(i % 7)); };
  std::vector<float> host(kReduce);
  auto fill = [&](int replay) {
    for (size_t i = 0; i < kReduce; ++i) host[i] = value(rank, replay, i);
    check(cudaMemcpy(gather_in, host.data(), kGather * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess, "fill");
    check(cudaMemcpy(reduce_in, host.data(), kReduce * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess, "fill");
  };
  auto both = [&] {
    check(ncclAllGather(gather_in, gather_out, kGather, ncclFloat32, comm, stream) == ncclSuccess, "ncclAllGather");
    check(ncclAllReduce(reduce_in, reduce_out, kReduce, ncclFloat32, ncclSum, comm, stream) == ncclSuccess,
          "ncclAllReduce");
  };
  // Outside a graph first: braid makes its paths at a communicator's first large call.
  if (error.empty()) fill(0), both(), check(cudaStreamSynchronize(stream) == cudaSuccess, "warm-up");
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (error.empty()) {
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess, "cudaStreamBeginCapture");
    both();
    check(cudaStreamEndCapture(stream, &graph) == cudaSuccess, "cudaStreamEndCapture");
    check(error.empty() && cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0) == cudaSuccess, "cudaGraphInstantiate");
  }
  std::vector<float> out(kReduce);
  for (int replay = 1; replay <= kReplays && error.empty(); ++replay) {
    fill(replay);
    check(cudaGraphLaunch(exec, stream) == cudaSuccess, "cudaGraphLaunch");
    check(cudaStreamSynchronize(stream) == cudaSuccess, "replay");
    check(cudaMemcpy(out.data(), reduce_out, kReduce * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess, "read");
    for (size_t i = 0; i < kReduce && error.empty(); ++i) {
      float expected = 0;
      for (int r = 0; r < ranks; ++r) expected += value(r, replay, i);
      if (out[i] != expected)
        check(false, "replay " + std::to_string(replay) + ": all_reduce element " + std::to_string(i) + " is " +
                         std::to_string(out[i]) + ", not " + std::to_string(expected));
    }
    check(cudaMemcpy(out.data(), gather_out, kGather * ranks * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess,
          "read");
    for (size_t i = 0; i < kGather * ranks && error.empty(); ++i)
      if (out[i] != value(static_cast<int>(i / kGather), replay, i % kGather))
        check(false, "replay " + std::to_string(replay) + ": all_gather element " + std::to_string(i));
    // A call outside the graph between replays.
    if (error.empty()) both(), check(cudaStreamSynchronize(stream) == cudaSuccess, "between replays");
  }
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (graph != nullptr) cudaGraphDestroy(graph);
  for (float* p : {gather_in, gather_out, reduce_in, reduce_out}) cudaFree(p);
  if (stream != nullptr) cudaStreamDestroy(stream);
  if (!error.empty()) ncclCommAbort(comm);
  else ncclCommDestroy(comm);
  return error;
}

TEST(ShimMultipath, CapturedCallsReplayExactly) {
  const int ranks = visible_gpus();
  if (ranks < 2) GTEST_SKIP() << "needs 2 or more GPUs (" << ranks << " visible)";
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { errors[r] = run_captured_rank(id, r, ranks); });
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

}  // namespace
}  // namespace braid::apitest

int main(int argc, char** argv) {
  // Before braid reads its settings (at the first NCCL call).
  braid::apitest::g_trace = "/tmp/braid_multipath_trace_" + std::to_string(getpid()) + ".jsonl";
  setenv("BRAID_BALANCER", "static", 1);
  setenv("BRAID_STATIC_SHARE", "0.5", 1);
  setenv("BRAID_SPLIT_MIN_BYTES", "1", 1);
  // The trace gets a call when its times are applied, BRAID_SPLIT_SETTLE_LAG calls later: at the next.
  setenv("BRAID_SPLIT_SETTLE_LAG", "1", 1);
  setenv("BRAID_SPLIT_TRACE", braid::apitest::g_trace.c_str(), 1);
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  // braid's own NVLink path at any GPU count (by default it runs on two GPUs only, where it pays).
  setenv("BRAID_NVLINK_PATH", "copy", 0);
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  unlink(braid::apitest::g_trace.c_str());
  return result;
}
