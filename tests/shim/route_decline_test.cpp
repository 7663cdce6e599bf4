// PyTorch's all_to_all_single through libbraid.so with BRAID_ROUTE_EXCHANGES=2, against the fake
// NCCL, ranks as threads: every exchange braid leaves to NCCL says why at INFO (Coll, in the
// default log mask), once per communicator and reason, and NCCL still gets every call in order;
// so does every collective braid does not split (multipath::admit's reasons).
// The calls are ProcessGroupNCCL's (PyTorch 2.11 on NCCL 2.28): a blocking communicator from
// ncclCommInitRankConfig with config.blocking = 1; equal splits as one ncclAlltoAll outside a
// group; uneven splits as ncclCommCount, then a group of ncclSend/ncclRecv to every peer in rank
// order, itself and count 0 included. (No GPU here: a stream cannot be asked about capture, so
// no rank can route and a group large enough goes to NCCL as unroutable.)
#include <gtest/gtest.h>
#include <nccl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/random_unique_id.h"
#include "fake_nccl.h"

namespace {

constexpr int kMinBytes = 1024;  // BRAID_ROUTE_MIN_BYTES below

std::string make_log_path() {
  char path[] = "/tmp/braid_route_decline_testXXXXXX";
  close(mkstemp(path));
  return path;
}
const std::string kLogPath = make_log_path();
const struct RemoveLog {
  ~RemoveLog() { unlink(kLogPath.c_str()); }
} kRemoveLog;

const bool kFakeNcclChosen = [] {
  setenv("BRAID_NCCL_LIBRARY", BRAID_FAKE_NCCL_PATH, 1);
  setenv("BRAID_SPLIT_MIN_BYTES", "0x4000000000000000", 1);
  setenv("BRAID_ROUTE_EXCHANGES", "2", 1);
  setenv("BRAID_ROUTE_MIN_BYTES", std::to_string(kMinBytes).c_str(), 1);
  setenv("BRAID_ROUTE_AGREE_MS", "1000", 1);
  setenv("BRAID_ROUTE_AGREE_FIRST_MS", "4000", 1);
  setenv("BRAID_DEBUG", "INFO", 1);
  unsetenv("BRAID_DEBUG_SUBSYS");  // the default mask (INIT,ENV,COLL) must show these lines
  setenv("BRAID_DEBUG_FILE", kLogPath.c_str(), 1);
  unsetenv("BRAID_DISABLE");
  return true;
}();

const cudaStream_t kStream = reinterpret_cast<cudaStream_t>(uintptr_t{0x5eed});

ncclUniqueId random_id() { return braid::test::random_unique_id(); }

// What braid logged from the point it was made on.
class LogSince {
 public:
  LogSince() : from_(all().size()) {}
  std::string text() const { return all().substr(from_); }
  // How many lines name `comm` and hold `phrase`.
  int lines(ncclComm_t comm, const std::string& phrase) const {
    char name[32];
    std::snprintf(name, sizeof name, "communicator %p:", static_cast<void*>(comm));
    std::istringstream in(text());
    int found = 0;
    for (std::string line; std::getline(in, line);)
      found += line.find(name) != std::string::npos && line.find(phrase) != std::string::npos ? 1 : 0;
    return found;
  }

 private:
  static std::string all() {
    std::ifstream f(kLogPath);
    std::stringstream text;
    text << f.rdbuf();
    return text.str();
  }
  size_t from_;
};

// ProcessGroupNCCL's communicator: ncclCommInitRankConfig with blocking set (its default, 1).
std::vector<ncclComm_t> torch_comms(int n, int blocking) {
  std::vector<ncclComm_t> comms(static_cast<size_t>(n));
  const ncclUniqueId id = random_id();
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = blocking;
      const ncclResult_t made = ncclCommInitRankConfig(&comms[size_t(r)], n, id, r, &config);
      EXPECT_EQ(made, blocking ? ncclSuccess : ncclInProgress);
    });
  for (auto& t : threads) t.join();
  return comms;
}

void on_every_rank(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(body, r);
  for (auto& t : threads) t.join();
}

// torch::cuda::nccl::all2all_single_unequal_split: `counts(s, d)` floats from rank s to rank d.
template <typename Counts>
ncclResult_t all2all_single_unequal_split(ncclComm_t comm, int rank, Counts counts, std::vector<float>& buffer) {
  int n = 0;
  EXPECT_EQ(ncclCommCount(comm, &n), ncclSuccess);
  ncclGroupStart();
  size_t sent = 0, received = 4096;
  for (int r = 0; r < n; ++r) {
    ncclSend(buffer.data() + sent, counts(rank, r), ncclFloat32, r, comm, kStream);
    ncclRecv(buffer.data() + received, counts(r, rank), ncclFloat32, r, comm, kStream);
    sent += counts(rank, r);
    received += counts(r, rank);
  }
  return ncclGroupEnd();
}

// The send/recv calls the fake NCCL received on `comm` from call `from` on, as "Send 1 8".
std::vector<std::string> p2p_reaching(ncclComm_t comm, size_t from) {
  std::vector<std::string> out;
  for (size_t i = from; i < fake_nccl_call_count(); ++i) {
    const FakeNcclCall c = fake_nccl_call(i);
    if (c.comm == comm && (std::string(c.api) == "Send" || std::string(c.api) == "Recv"))
      out.push_back(std::string(c.api) + " " + std::to_string(c.root) + " " + std::to_string(c.count));
  }
  return out;
}

size_t calls_reaching(ncclComm_t comm, const char* api, size_t from) {
  size_t found = 0;
  for (size_t i = from; i < fake_nccl_call_count(); ++i) {
    const FakeNcclCall c = fake_nccl_call(i);
    found += c.comm == comm && std::string(c.api) == api ? 1 : 0;
  }
  return found;
}

// Skewed, with an empty pair, every flow under kMinBytes: the rig's MoE dispatch in miniature.
size_t small_skewed(int s, int d) { return s == 1 && d == 0 ? 0 : size_t(s * 3 + d * 50 + 1); }
// The same with one flow over kMinBytes.
size_t one_large(int s, int d) { return s == 0 && d == 1 ? size_t(kMinBytes) : small_skewed(s, d); }

TEST(ShimRouteDecline, SmallGroupsSayOncePerCommunicatorWhyTheyGoToNccl) {
  ASSERT_TRUE(kFakeNcclChosen);
  const int n = 2;
  const std::vector<ncclComm_t> comms = torch_comms(n, 1);
  std::vector<std::vector<float>> buffers(size_t(n), std::vector<float>(8192));
  const LogSince log;
  const size_t from = fake_nccl_call_count();
  on_every_rank(n, [&](int r) {
    for (int step = 0; step < 3; ++step)
      EXPECT_EQ(all2all_single_unequal_split(comms[size_t(r)], r, small_skewed, buffers[size_t(r)]), ncclSuccess);
  });
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const ncclComm_t comm = comms[size_t(r)];
    EXPECT_EQ(log.lines(comm, "under BRAID_ROUTE_MIN_BYTES=1024 are not routed"), 1) << log.text();
    EXPECT_EQ(log.lines(comm, "largest flow is 204 bytes"), 1) << log.text();  // 51 floats, rank 0 to 1
    std::vector<std::string> want;
    for (int step = 0; step < 3; ++step)
      for (int p = 0; p < n; ++p) {
        want.push_back("Send " + std::to_string(p) + " " + std::to_string(small_skewed(r, p)));
        want.push_back("Recv " + std::to_string(p) + " " + std::to_string(small_skewed(p, r)));
      }
    EXPECT_EQ(p2p_reaching(comm, from), want);
  }
  // The board stayed on: a large group still meets there, and says its own reason once.
  on_every_rank(n, [&](int r) {
    for (int step = 0; step < 2; ++step)
      EXPECT_EQ(all2all_single_unequal_split(comms[size_t(r)], r, one_large, buffers[size_t(r)]), ncclSuccess);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(log.lines(comms[size_t(r)], "under BRAID_ROUTE_MIN_BYTES"), 1);
    EXPECT_EQ(log.lines(comms[size_t(r)], "several streams, or captured it in a CUDA graph"), 1) << log.text();
    EXPECT_EQ(p2p_reaching(comms[size_t(r)], from).size(), size_t(5 * 2 * n));
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
}

TEST(ShimRouteDecline, EqualSplitsSayWhyTheirAlltoAllGoesToNccl) {
  const int n = 2;
  const std::vector<ncclComm_t> comms = torch_comms(n, 1);
  std::vector<std::vector<float>> buffers(size_t(n), std::vector<float>(8192));
  const LogSince log;
  const size_t from = fake_nccl_call_count();
  on_every_rank(n, [&](int r) {
    float* b = buffers[size_t(r)].data();
    // The counts exchange (one int64 per peer), twice; then tokens over the threshold, twice.
    for (int step = 0; step < 2; ++step)
      EXPECT_EQ(ncclAlltoAll(b, b + 4096, 1, ncclInt64, comms[size_t(r)], kStream), ncclSuccess);
    for (int step = 0; step < 2; ++step)
      EXPECT_EQ(ncclAlltoAll(b, b + 4096, kMinBytes, ncclFloat32, comms[size_t(r)], kStream), ncclSuccess);
    // One inside a group (PyTorch's coalescing manager).
    ncclGroupStart();
    EXPECT_EQ(ncclAlltoAll(b, b + 4096, kMinBytes, ncclFloat32, comms[size_t(r)], kStream), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  });
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const ncclComm_t comm = comms[size_t(r)];
    EXPECT_EQ(log.lines(comm, "an ncclAlltoAll of 8 bytes a flow went to NCCL"), 1) << log.text();
    EXPECT_EQ(log.lines(comm, "an ncclAlltoAll captured in a CUDA graph goes to NCCL"), 1) << log.text();
    EXPECT_EQ(log.lines(comm, "an ncclAlltoAll inside an NCCL group goes to NCCL"), 1) << log.text();
    EXPECT_EQ(calls_reaching(comm, "AlltoAll", from), size_t(5));
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
}

// TORCH_NCCL_USE_COMM_NONBLOCKING=1: ncclCommInitRankConfig answers ncclInProgress and PyTorch
// polls ncclCommGetAsyncError until the communicator is ready.
TEST(ShimRouteDecline, ANonBlockingCommunicatorSaysItIsNotRouted) {
  const int n = 2;
  const std::vector<ncclComm_t> comms = torch_comms(n, 0);
  std::vector<std::vector<float>> buffers(size_t(n), std::vector<float>(8192));
  const LogSince log;
  const size_t from = fake_nccl_call_count();
  on_every_rank(n, [&](int r) {
    ncclResult_t async = ncclInProgress;
    EXPECT_EQ(ncclCommGetAsyncError(comms[size_t(r)], &async), ncclSuccess);
    EXPECT_EQ(async, ncclSuccess);
    for (int step = 0; step < 2; ++step)
      EXPECT_EQ(all2all_single_unequal_split(comms[size_t(r)], r, one_large, buffers[size_t(r)]), ncclSuccess);
    float* b = buffers[size_t(r)].data();
    EXPECT_EQ(ncclAlltoAll(b, b + 4096, kMinBytes, ncclFloat32, comms[size_t(r)], kStream), ncclSuccess);
  });
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const ncclComm_t comm = comms[size_t(r)];
    EXPECT_EQ(log.lines(comm, "no exchange board (it is non-blocking"), 1) << log.text();
    EXPECT_EQ(log.lines(comm, "an ncclAlltoAll went to NCCL: the communicator is non-blocking"), 1) << log.text();
    EXPECT_EQ(p2p_reaching(comm, from).size(), size_t(2 * 2 * n));
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
}

TEST(ShimRouteDecline, ACommunicatorTooLargeForABoardSaysSo) {
  // Rank 0 of 65 alone: the fake never connects, and with no board nothing waits for the others.
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 65, random_id(), 0), ncclSuccess);
  std::vector<float> buffer(8192);
  const LogSince log;
  const size_t from = fake_nccl_call_count();
  for (int step = 0; step < 2; ++step) {
    ncclGroupStart();
    ncclSend(buffer.data(), 4, ncclFloat32, 1, comm, kStream);
    ncclRecv(buffer.data() + 4096, 4, ncclFloat32, 1, comm, kStream);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  }
  EXPECT_EQ(log.lines(comm, "more than the 64 ranks an exchange board holds"), 1) << log.text();
  EXPECT_EQ(p2p_reaching(comm, from).size(), size_t(4));
  ncclCommDestroy(comm);
}

// A collective braid leaves to NCCL says why, once per communicator and reason: here every one is
// below the size that makes braid's part (BRAID_SPLIT_MIN_BYTES above), inside a group or not.
TEST(ShimAdmission, ACollectiveLeftToNcclSaysWhyOncePerCommunicatorAndReason) {
  const int n = 2;
  const std::vector<ncclComm_t> comms = torch_comms(n, 1);
  const LogSince log;
  const size_t from = fake_nccl_call_count();
  on_every_rank(n, [&](int r) {
    std::vector<float> x(64, 1.0f);
    const ncclComm_t comm = comms[size_t(r)];
    for (int k = 0; k < 3; ++k) EXPECT_EQ(ncclAllReduce(x.data(), x.data(), 64, ncclFloat32, ncclSum, comm, kStream), ncclSuccess);
    ncclGroupStart();
    EXPECT_EQ(ncclAllReduce(x.data(), x.data(), 64, ncclFloat32, ncclSum, comm, kStream), ncclSuccess);
    ncclGroupEnd();
    EXPECT_EQ(ncclBroadcast(x.data(), x.data(), 32, ncclFloat32, 0, comm, kStream), ncclSuccess);
  });
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const ncclComm_t comm = comms[size_t(r)];
    EXPECT_EQ(calls_reaching(comm, "AllReduce", from), 4u);
    EXPECT_EQ(calls_reaching(comm, "Broadcast", from), 1u);
    // One line for the reason, at its first call (the AllReduce); none for the later calls.
    EXPECT_EQ(log.lines(comm, "below the size that makes braid's part"), 1) << log.text();
    EXPECT_EQ(log.lines(comm, "allreduce of 64 float: nccl (below the size that makes braid's part)"), 1)
        << log.text();
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
}

}  // namespace
