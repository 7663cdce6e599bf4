// Several communicators in one process at once, as nccl-tests -t, ncclCommSplit and
// ncclCommInitAll give: each communicator's ranks are threads, communicators run concurrently,
// and one thread may hold a rank of several communicators and drive them in turn. Results must be
// exact on every communicator, whatever the others do at the same time.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "harness.h"

namespace braid {
namespace {

struct Member {
  std::unique_ptr<device::CpuBackend> backend;
  std::unique_ptr<engine::Communicator> comm;
};

// Makes every rank of a communicator of `n` ranks (collective: one thread per rank).
std::vector<Member> make_comm(int n, const topo::Topology& topo) {
  const engine::CommId id = engine::CommId::random();
  std::vector<Member> m(static_cast<size_t>(n));
  std::vector<std::thread> t;
  std::atomic<int> failed{0};
  for (int r = 0; r < n; ++r)
    t.emplace_back([&, r] {
      m[r].backend = std::make_unique<device::CpuBackend>();
      if (engine::Communicator::create(id, r, n, topo, m[r].backend.get(), &m[r].comm) != Result::Success) ++failed;
    });
  for (auto& th : t) th.join();
  EXPECT_EQ(failed.load(), 0) << last_error();
  return m;
}

// Rank r of comm `tag` sends r + 1 + tag everywhere: the sum is known.
bool all_reduce_exact(engine::Communicator& c, int rank, int nranks, int tag, size_t count) {
  std::vector<int32_t> send(count, rank + 1 + tag), recv(count, -1);
  if (c.all_reduce(send.data(), recv.data(), count, DataType::Int32, RedOp::Sum) != Result::Success) return false;
  const int32_t want = nranks * (nranks + 1) / 2 + nranks * tag;
  for (int32_t v : recv)
    if (v != want) return false;
  return true;
}

TEST(SeveralCommunicators, RunAtOnceFromThreadsOfOneProcess) {
  const auto topo = test::load_test_topology();
  // Three communicators of 2, 3 and 4 ranks, every rank a thread, all running at once.
  const std::vector<int> sizes = {2, 3, 4};
  std::vector<std::vector<Member>> comms;
  for (int n : sizes) comms.push_back(make_comm(n, topo));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (size_t k = 0; k < comms.size(); ++k)
    for (int r = 0; r < sizes[k]; ++r)
      threads.emplace_back([&, k, r] {
        for (int i = 0; i < 20; ++i)
          if (!all_reduce_exact(*comms[k][r].comm, r, sizes[k], static_cast<int>(k) * 10 + i, 1000 + 97 * i)) ++wrong;
      });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0) << last_error();
}

TEST(SeveralCommunicators, OneThreadDrivesARankOfEach) {
  // Two communicators over the same two threads (as ncclCommSplit gives): each thread holds rank
  // r of both and alternates between them; both communicators stay in step and exact.
  const auto topo = test::load_test_topology();
  auto a = make_comm(2, topo);
  auto b = make_comm(2, topo);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      for (int i = 0; i < 15; ++i) {
        if (!all_reduce_exact(*a[r].comm, r, 2, i, 4096)) ++wrong;
        if (!all_reduce_exact(*b[r].comm, r, 2, 100 + i, 777)) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0) << last_error();
}

}  // namespace
}  // namespace braid
