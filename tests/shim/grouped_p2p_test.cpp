// Groups of ncclSend/ncclRecv through libbraid.so with BRAID_ROUTE_EXCHANGES=1, against the fake
// NCCL, ranks as threads: every rank meets on the exchange board at its group's end and NCCL gets
// every call, in order, in a group; nothing waits past the bound when a rank stays away, a lone
// send releases the others at once, and after a refused or abandoned slot the communicator's groups
// pass straight through. (No GPU here: the streams cannot be asked about capture, so no rank can
// route and every agreed group goes to NCCL; the routed run itself is tests/engine's.)
#include <gtest/gtest.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../support/random_unique_id.h"
#include "fake_nccl.h"

namespace {

const bool kFakeNcclChosen = [] {
  setenv("BRAID_NCCL_LIBRARY", BRAID_FAKE_NCCL_PATH, 1);
  setenv("BRAID_SPLIT_MIN_BYTES", "0x4000000000000000", 1);
  setenv("BRAID_ROUTE_EXCHANGES", "1", 1);
  setenv("BRAID_ROUTE_AGREE_MS", "1000", 1);
  setenv("BRAID_ROUTE_AGREE_FIRST_MS", "4000", 1);
  unsetenv("BRAID_DISABLE");
  return true;
}();

const cudaStream_t kStream = reinterpret_cast<cudaStream_t>(uintptr_t{0x5eed});

ncclUniqueId random_id() { return braid::test::random_unique_id(); }

// One rank's group: to every peer, `bytes(rank, peer)` floats sent and `bytes(peer, rank)` received.
template <typename Bytes>
ncclResult_t all_to_allv(ncclComm_t comm, int rank, int n, Bytes bytes, std::vector<float>& buffer) {
  ncclGroupStart();
  for (int p = 0; p < n; ++p) {
    ncclSend(buffer.data(), bytes(rank, p), ncclFloat32, p, comm, kStream);
    ncclRecv(buffer.data() + 4096, bytes(p, rank), ncclFloat32, p, comm, kStream);
  }
  return ncclGroupEnd();
}

// The send/recv calls the fake NCCL received on `comm`, as "Send 1 8" (peer, count).
// Only calls from `from` on: the fake may hand out a destroyed communicator's address again.
std::vector<std::string> p2p_reaching(ncclComm_t comm, size_t from) {
  std::vector<std::string> out;
  for (size_t i = from; i < fake_nccl_call_count(); ++i) {
    const FakeNcclCall c = fake_nccl_call(i);
    if (c.comm == comm && (std::strcmp(c.api, "Send") == 0 || std::strcmp(c.api, "Recv") == 0))
      out.push_back(std::string(c.api) + " " + std::to_string(c.root) + " " + std::to_string(c.count));
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Ranks {
  explicit Ranks(int n) : comms(size_t(n)), buffers(size_t(n), std::vector<float>(8192)) {
    const ncclUniqueId id = random_id();
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { EXPECT_EQ(ncclCommInitRank(&comms[size_t(r)], n, id, r), ncclSuccess); });
    for (auto& t : threads) t.join();
  }
  ~Ranks() {
    for (ncclComm_t c : comms) ncclCommDestroy(c);
  }
  std::vector<ncclComm_t> comms;
  std::vector<std::vector<float>> buffers;
  size_t from = fake_nccl_call_count();
};

size_t uneven(int s, int d) { return size_t(s * 3 + d + 1); }

TEST(ShimGroupedP2p, EveryRankMeetsAndNcclGetsEveryCallInOrder) {
  ASSERT_TRUE(kFakeNcclChosen);
  for (int n : {2, 3, 5}) {
    Ranks ranks(n);
    std::vector<double> took(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        // Three groups, then a lone send/recv pair between ranks 0 and 1; then one group more.
        for (int g = 0; g < 3; ++g)
          EXPECT_EQ(all_to_allv(ranks.comms[size_t(r)], r, n, uneven, ranks.buffers[size_t(r)]), ncclSuccess);
        if (r <= 1) {
          EXPECT_EQ(ncclSend(ranks.buffers[size_t(r)].data(), 7, ncclFloat32, 1 - r, ranks.comms[size_t(r)], kStream), ncclSuccess);
          EXPECT_EQ(ncclRecv(ranks.buffers[size_t(r)].data(), 7, ncclFloat32, 1 - r, ranks.comms[size_t(r)], kStream), ncclSuccess);
        }
        const auto start = std::chrono::steady_clock::now();
        EXPECT_EQ(all_to_allv(ranks.comms[size_t(r)], r, n, uneven, ranks.buffers[size_t(r)]), ncclSuccess);
        took[size_t(r)] = seconds_since(start);
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) {
      SCOPED_TRACE("n=" + std::to_string(n) + " rank " + std::to_string(r));
      std::vector<std::string> want;
      for (int g = 0; g < 4; ++g) {
        if (g == 3 && r <= 1) want.insert(want.end(), {"Send " + std::to_string(1 - r) + " 7", "Recv " + std::to_string(1 - r) + " 7"});
        for (int p = 0; p < n; ++p) {
          want.push_back("Send " + std::to_string(p) + " " + std::to_string(uneven(r, p)));
          want.push_back("Recv " + std::to_string(p) + " " + std::to_string(uneven(p, r)));
        }
      }
      EXPECT_EQ(p2p_reaching(ranks.comms[size_t(r)], ranks.from), want);
      // The lone calls abandoned the fourth slot: nobody waited out the 1 s bound there.
      EXPECT_LT(took[size_t(r)], 0.8);
    }
  }
}

TEST(ShimGroupedP2p, AnAbsentRankCostsOneBoundedWaitThenGroupsPassThrough) {
  const int n = 3;
  Ranks ranks(n);
  std::vector<double> late(static_cast<size_t>(n)), after(static_cast<size_t>(n));
  auto pair = [](int s, int d) { return (s == 2 || d == 2 || s == d) ? size_t(0) : size_t(16); };
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      // A first group every rank reaches at once (the first slot's longer wait is its own test).
      EXPECT_EQ(all_to_allv(ranks.comms[size_t(r)], r, n, pair, ranks.buffers[size_t(r)]), ncclSuccess);
      if (r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // comes after the bound
      auto start = std::chrono::steady_clock::now();
      EXPECT_EQ(all_to_allv(ranks.comms[size_t(r)], r, n, pair, ranks.buffers[size_t(r)]), ncclSuccess);
      late[size_t(r)] = seconds_since(start);
      start = std::chrono::steady_clock::now();
      EXPECT_EQ(all_to_allv(ranks.comms[size_t(r)], r, n, pair, ranks.buffers[size_t(r)]), ncclSuccess);
      after[size_t(r)] = seconds_since(start);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    if (r == 2) {
      EXPECT_LT(late[size_t(r)], 0.5);  // read ABANDONED, no wait
    } else {
      EXPECT_GE(late[size_t(r)], 0.9);
      EXPECT_LT(late[size_t(r)], 3.0);
    }
    EXPECT_LT(after[size_t(r)], 0.5);  // off: straight to NCCL
    EXPECT_EQ(p2p_reaching(ranks.comms[size_t(r)], ranks.from).size(), size_t(6 * n));
  }
}

// Ranks come to their first exchange far apart (start-up): the first group waits
// BRAID_ROUTE_AGREE_FIRST_MS, so a rank 1.5 s late there (past BRAID_ROUTE_AGREE_MS) still meets
// the others, and the board stays on: a later rank 0.5 s late is still waited for.
TEST(ShimGroupedP2p, TheFirstGroupWaitsLongerForLateRanks) {
  const int n = 2;
  Ranks ranks(n);
  std::vector<double> first(static_cast<size_t>(n)), second(static_cast<size_t>(n));
  auto pair = [](int s, int d) { return s == d ? size_t(0) : size_t(16); };
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      auto start = std::chrono::steady_clock::now();
      EXPECT_EQ(all_to_allv(ranks.comms[size_t(r)], r, n, pair, ranks.buffers[size_t(r)]), ncclSuccess);
      first[size_t(r)] = seconds_since(start);
      if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(500));
      start = std::chrono::steady_clock::now();
      EXPECT_EQ(all_to_allv(ranks.comms[size_t(r)], r, n, pair, ranks.buffers[size_t(r)]), ncclSuccess);
      second[size_t(r)] = seconds_since(start);
    });
  for (auto& t : threads) t.join();
  EXPECT_GE(first[0], 1.4);  // waited past BRAID_ROUTE_AGREE_MS for rank 1
  EXPECT_GE(second[0], 0.4);  // the board still on: waited again
  EXPECT_LT(second[0], 0.9);
  EXPECT_LT(second[1], 0.5);
}

TEST(ShimGroupedP2p, AMismatchedGroupIsGivenToNcclEverywhereAndTurnsRoutingOff) {
  const int n = 2;
  Ranks ranks(n);
  std::vector<double> second(static_cast<size_t>(n));
  // Rank 1 receives from rank 0 one element less than rank 0 sends: refused on both ranks.
  auto short_by_one = [](int s, int d) { return s == 0 && d == 1 ? size_t(9) : size_t(10); };
  auto as_received = [](int, int) { return size_t(10); };
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      if (r == 0) {
        EXPECT_EQ(all_to_allv(ranks.comms[0], 0, n, as_received, ranks.buffers[0]), ncclSuccess);
      } else {
        EXPECT_EQ(all_to_allv(ranks.comms[1], 1, n, short_by_one, ranks.buffers[1]), ncclSuccess);
      }
      // Off now on both: even a group rank 1 never matches returns at once.
      const auto start = std::chrono::steady_clock::now();
      if (r == 0) {
        EXPECT_EQ(all_to_allv(ranks.comms[0], 0, n, uneven, ranks.buffers[0]), ncclSuccess);
      }
      second[size_t(r)] = seconds_since(start);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(p2p_reaching(ranks.comms[0], ranks.from).size(), size_t(8));
  EXPECT_EQ(p2p_reaching(ranks.comms[1], ranks.from).size(), size_t(4));
  EXPECT_LT(second[0], 0.5);
}

}  // namespace
