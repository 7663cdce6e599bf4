// The C API's contract beyond the data: argument errors with ncclResult_t values and last-error
// text, PreMulSum operators (host and device scalars), bootstrap through NCCL, the default
// stream, refusal of graph capture, and abort. Tests that need no GPU run everywhere.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "api_harness.h"

namespace braid::apitest {
namespace {

#define REQUIRE_GPUS(n)                                                        \
  do {                                                                         \
    if (visible_gpus() < (n)) GTEST_SKIP() << "needs " << (n) << " GPU(s)";   \
  } while (0)

// A one-rank communicator on GPU 0 with a stream and two device buffers of `count` floats.
struct Single {
  braidComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* a = nullptr;
  float* b = nullptr;
  explicit Single(size_t count = 1024) {
    cudaSetDevice(0);
    braidUniqueId id;
    braidGetUniqueId(&id);
    EXPECT_EQ(braidCommInitRank(&comm, 1, id, 0), ncclSuccess) << braidGetLastError(nullptr);
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaMalloc(&a, count * sizeof(float));
    cudaMalloc(&b, count * sizeof(float));
  }
  ~Single() {
    cudaFree(a);
    cudaFree(b);
    cudaStreamDestroy(stream);
    if (comm != nullptr) braidCommDestroy(comm);
  }
};

std::vector<float> download(const float* dev, size_t n) {
  std::vector<float> h(n);
  cudaMemcpy(h.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost);
  return h;
}

TEST(ApiNoGpu, ErrorStringsAndIds) {
  // NCCL's wording, pointing at braid's own debug variable.
  EXPECT_EQ(std::string(braidGetErrorString(ncclInvalidArgument)).rfind("invalid argument", 0), 0u);
  EXPECT_NE(std::string(braidGetErrorString(ncclInvalidArgument)).find("BRAID_DEBUG"), std::string::npos);
  EXPECT_STREQ(braidGetErrorString(ncclSuccess), "no error");
  EXPECT_STREQ(braidGetErrorString(ncclRemoteError), ncclGetErrorString(ncclRemoteError));
  braidUniqueId a, b;
  ASSERT_EQ(braidGetUniqueId(&a), ncclSuccess);
  ASSERT_EQ(braidGetUniqueId(&b), ncclSuccess);
  EXPECT_NE(std::memcmp(a.internal, b.internal, sizeof a.internal), 0) << "two ids must differ";
  EXPECT_EQ(braidGetUniqueId(nullptr), ncclInvalidArgument);
}

TEST(ApiNoGpu, BadInitArguments) {
  braidUniqueId id;
  braidGetUniqueId(&id);
  braidComm_t comm = nullptr;
  EXPECT_EQ(braidCommInitRank(nullptr, 1, id, 0), ncclInvalidArgument);
  EXPECT_EQ(braidCommInitRank(&comm, 0, id, 0), ncclInvalidArgument);
  EXPECT_EQ(braidCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
  EXPECT_NE(std::string(braidGetLastError(nullptr)).find("rank 2"), std::string::npos) << braidGetLastError(nullptr);
  braidUniqueId zero{};
  EXPECT_EQ(braidCommInitRank(&comm, 1, zero, 0), ncclInvalidArgument);
  EXPECT_NE(std::string(braidGetLastError(nullptr)).find("braidGetUniqueId"), std::string::npos);
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(braidCommInitFromNccl(&comm, nullptr), ncclInvalidArgument);
}

TEST(ApiNoGpu, NullCommunicator) {
  int x = 0;
  EXPECT_EQ(braidAllReduce(nullptr, nullptr, 0, ncclFloat, ncclSum, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(braidGetLastError(nullptr)).find("comm is null"), std::string::npos);
  EXPECT_EQ(braidAllGather(nullptr, nullptr, 0, ncclFloat, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(braidCommCount(nullptr, &x), ncclInvalidArgument);
  EXPECT_EQ(braidCommUserRank(nullptr, &x), ncclInvalidArgument);
  EXPECT_EQ(braidCommDestroy(nullptr), ncclInvalidArgument);
  EXPECT_EQ(braidCommAbort(nullptr), ncclInvalidArgument);
  ncclRedOp_t op;
  float s = 1;
  EXPECT_EQ(braidRedOpCreatePreMulSum(&op, &s, ncclFloat, ncclScalarHostImmediate, nullptr), ncclInvalidArgument);
}

TEST(ApiGpu, QueriesAndBadArguments) {
  REQUIRE_GPUS(1);
  Single s;
  ASSERT_NE(s.comm, nullptr);
  int v = -1;
  EXPECT_EQ(braidCommCount(s.comm, &v), ncclSuccess);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(braidCommUserRank(s.comm, &v), ncclSuccess);
  EXPECT_EQ(v, 0);
  EXPECT_EQ(braidCommCuDevice(s.comm, &v), ncclSuccess);
  EXPECT_EQ(v, 0);

  auto expect_invalid = [&](ncclResult_t r, const char* words) {
    EXPECT_EQ(r, ncclInvalidArgument);
    const std::string text = braidGetLastError(s.comm);
    EXPECT_NE(text.find(words), std::string::npos) << "last error: " << text;
  };
  expect_invalid(braidAllReduce(nullptr, s.b, 8, ncclFloat, ncclSum, s.comm, s.stream), "sendbuff");
  expect_invalid(braidAllReduce(s.a, nullptr, 8, ncclFloat, ncclSum, s.comm, s.stream), "recvbuff");
  expect_invalid(braidAllReduce(s.a, s.b, 8, static_cast<ncclDataType_t>(99), ncclSum, s.comm, s.stream), "datatype");
  expect_invalid(braidAllReduce(s.a, s.b, 8, ncclFloat, static_cast<ncclRedOp_t>(42), s.comm, s.stream), "op 42");
  expect_invalid(braidBroadcast(s.a, s.b, 8, ncclFloat, 1, s.comm, s.stream), "root 1");
  expect_invalid(braidReduce(s.a, s.b, 8, ncclFloat, ncclSum, -1, s.comm, s.stream), "root -1");
  std::vector<float> host(8);
  expect_invalid(braidAllReduce(host.data(), s.b, 8, ncclFloat, ncclSum, s.comm, s.stream), "host memory");
  // Zero elements need no buffers.
  EXPECT_EQ(braidAllReduce(nullptr, nullptr, 0, ncclFloat, ncclSum, s.comm, s.stream), ncclSuccess)
      << braidGetLastError(s.comm);
  // A PreMulSum op made for another type.
  ncclRedOp_t op;
  double scalar = 2;
  ASSERT_EQ(braidRedOpCreatePreMulSum(&op, &scalar, ncclDouble, ncclScalarHostImmediate, s.comm), ncclSuccess);
  EXPECT_GE(static_cast<int>(op), static_cast<int>(ncclNumOps));
  expect_invalid(braidAllReduce(s.a, s.b, 8, ncclFloat, op, s.comm, s.stream), "PreMulSum");
  EXPECT_EQ(braidRedOpDestroy(op, s.comm), ncclSuccess);
  EXPECT_EQ(braidRedOpDestroy(op, s.comm), ncclInvalidArgument);
  expect_invalid(braidAllReduce(s.a, s.b, 8, ncclDouble, op, s.comm, s.stream), "not a live");
  EXPECT_EQ(braidRedOpCreatePreMulSum(&op, &scalar, ncclDouble, static_cast<ncclScalarResidence_t>(7), s.comm),
            ncclInvalidArgument);
  EXPECT_EQ(braidRedOpCreatePreMulSum(&op, host.data(), ncclFloat, ncclScalarDevice, s.comm), ncclInvalidArgument);
}

TEST(ApiGpu, StreamOfAnotherGpuIsRefused) {
  REQUIRE_GPUS(2);
  Single s;
  cudaStream_t other = nullptr;
  cudaSetDevice(1);
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(braidAllReduce(s.a, s.b, 8, ncclFloat, ncclSum, s.comm, other), ncclInvalidArgument);
  EXPECT_NE(std::string(braidGetLastError(s.comm)).find("GPU 1"), std::string::npos) << braidGetLastError(s.comm);
  cudaSetDevice(1);
  cudaStreamDestroy(other);
  cudaSetDevice(0);
}

TEST(ApiGpu, GraphCaptureIsRefused) {
  REQUIRE_GPUS(1);
  Single s;
  ASSERT_EQ(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeRelaxed), cudaSuccess);
  EXPECT_EQ(braidAllReduce(s.a, s.b, 8, ncclFloat, ncclSum, s.comm, s.stream), ncclInvalidUsage);
  EXPECT_NE(std::string(braidGetLastError(s.comm)).find("capture"), std::string::npos);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s.stream, &graph), cudaSuccess);
  if (graph != nullptr) cudaGraphDestroy(graph);
}

TEST(ApiGpu, DefaultStreamAndDeviceScalar) {
  REQUIRE_GPUS(1);
  const size_t n = 4096;
  Single s(n);
  std::vector<float> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 13) - 6;
  cudaMemcpy(s.a, in.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  // The legacy default stream.
  ASSERT_EQ(braidAllReduce(s.a, s.b, n, ncclFloat, ncclMax, s.comm, nullptr), ncclSuccess) << braidGetLastError(s.comm);
  cudaDeviceSynchronize();
  EXPECT_EQ(download(s.b, n), in);

  // A device-resident scalar is read at each collective, not at creation.
  float* scalar = nullptr;
  ASSERT_EQ(cudaMalloc(&scalar, sizeof(float)), cudaSuccess);
  const float three = 3, half = 0.5f;
  cudaMemcpy(scalar, &three, sizeof three, cudaMemcpyHostToDevice);
  ncclRedOp_t op;
  ASSERT_EQ(braidRedOpCreatePreMulSum(&op, scalar, ncclFloat, ncclScalarDevice, s.comm), ncclSuccess);
  ASSERT_EQ(braidAllReduce(s.a, s.b, n, ncclFloat, op, s.comm, s.stream), ncclSuccess) << braidGetLastError(s.comm);
  cudaStreamSynchronize(s.stream);
  auto out = download(s.b, n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 3 * in[i]) << i;
  cudaMemcpyAsync(scalar, &half, sizeof half, cudaMemcpyHostToDevice, s.stream);  // ordered on the stream
  ASSERT_EQ(braidAllReduce(s.a, s.b, n, ncclFloat, op, s.comm, s.stream), ncclSuccess) << braidGetLastError(s.comm);
  cudaStreamSynchronize(s.stream);
  out = download(s.b, n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 0.5f * in[i]) << i;
  EXPECT_EQ(braidRedOpDestroy(op, s.comm), ncclSuccess);
  cudaFree(scalar);
}

TEST(ApiGpu, InitFromNccl) {
  const int n = visible_gpus();
  if (n < 1) GTEST_SKIP() << "no GPU visible";
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  std::vector<ncclComm_t> nccl(n);
  std::vector<int> devices(n);
  for (int i = 0; i < n; ++i) devices[i] = i;
  ASSERT_EQ(ncclCommInitAll(nccl.data(), n, devices.data()), ncclSuccess);
  const size_t count = 100003;
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      braidComm_t comm = nullptr;
      if (braidCommInitFromNccl(&comm, nccl[r]) != ncclSuccess) {
        errors[r] = std::string("braidCommInitFromNccl: ") + braidGetLastError(nullptr);
        return;
      }
      int v = -1;
      braidCommUserRank(comm, &v);
      if (v != r) errors[r] = "rank " + std::to_string(v) + " instead of " + std::to_string(r);
      braidCommCount(comm, &v);
      if (v != n) errors[r] = "count " + std::to_string(v);
      braidCommCuDevice(comm, &v);
      if (v != r) errors[r] = "device " + std::to_string(v);
      int32_t* buf = nullptr;
      cudaMalloc(&buf, count * sizeof(int32_t));
      std::vector<int32_t> in(count);
      for (size_t i = 0; i < count; ++i) in[i] = static_cast<int32_t>(i * (r + 1));
      cudaMemcpy(buf, in.data(), count * sizeof(int32_t), cudaMemcpyHostToDevice);
      if (braidAllReduce(buf, buf, count, ncclInt32, ncclSum, comm, nullptr) != ncclSuccess) {
        errors[r] = std::string("braidAllReduce: ") + braidGetLastError(comm);
      } else {
        cudaDeviceSynchronize();
        cudaMemcpy(in.data(), buf, count * sizeof(int32_t), cudaMemcpyDeviceToHost);
        const int64_t factor = static_cast<int64_t>(n) * (n + 1) / 2;
        for (size_t i = 0; i < count && errors[r].empty(); ++i)
          if (in[i] != static_cast<int32_t>(static_cast<int64_t>(i) * factor))
            errors[r] = "element " + std::to_string(i) + " is " + std::to_string(in[i]);
      }
      cudaFree(buf);
      braidCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  for (auto c : nccl) ncclCommDestroy(c);
}

TEST(ApiGpu, AbortUnblocksAWaitingRank) {
  REQUIRE_GPUS(1);
  // Two ranks; rank 1 never joins the collective and aborts instead.
  const int gpus = visible_gpus();
  braidUniqueId id;
  braidGetUniqueId(&id);
  ncclResult_t rank0_result = ncclSuccess;
  double rank0_seconds = 0;
  std::thread rank0([&] {
    cudaSetDevice(0);
    braidComm_t comm = nullptr;
    ASSERT_EQ(braidCommInitRank(&comm, 2, id, 0), ncclSuccess) << braidGetLastError(nullptr);
    float* buf = nullptr;
    cudaMalloc(&buf, 1 << 20);
    const auto start = std::chrono::steady_clock::now();
    rank0_result = braidAllReduce(buf, buf, (1 << 20) / 4, ncclFloat, ncclSum, comm, nullptr);
    rank0_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rank0_result != ncclSuccess) braidCommAbort(comm);
    else braidCommDestroy(comm);
    cudaFree(buf);
  });
  cudaSetDevice(gpus > 1 ? 1 : 0);
  braidComm_t comm = nullptr;
  ASSERT_EQ(braidCommInitRank(&comm, 2, id, 1), ncclSuccess) << braidGetLastError(nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(braidCommAbort(comm), ncclSuccess);
  rank0.join();
  EXPECT_NE(rank0_result, ncclSuccess);
  EXPECT_LT(rank0_seconds, 10.0) << "abort must stop the peer's wait within seconds";
}

}  // namespace
}  // namespace braid::apitest
